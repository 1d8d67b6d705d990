package api

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"time"

	"github.com/drwatch/drwatch/failover"
)

// RegisterStatusPage adds the human status page at "/" (and its partial,
// "/?partial=1", which the page's script fetches to refresh itself), the
// page of each failover group at "/groups/{name}" (and its partial), the
// Statuspage-style summary at /api/v1/summary.json and the SVG badges under
// /badge/. Every one renders only from ReadModel.Status (and, for a group,
// GroupReader.GroupView), so nothing the status does not hold can leak
// into them.
func RegisterStatusPage(s *Server, b ReadModel) {
	s.Handle("GET /{$}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st, pending := statusForRoot(r.Context(), b)
		renderPage(w, r, pageOf(st, s.now(), newNonce(), "", pending))
	}))
	s.Handle("GET /groups/{name}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serveGroupPage(w, r, b, s.now())
	}))
	s.Handle("GET /api/v1/summary.json", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, BuildSummary(b.Status(r.Context())))
	}))
	s.Handle("GET /badge/{name}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serveBadge(w, r, b)
	}))
}

// pageCSP allows nothing but this response's own inline style and script
// (by nonce) and fetches back to this origin for the refresh. No inline
// event handlers, no style attributes, no external anything.
func pageCSP(nonce string) string {
	return "default-src 'none'; script-src 'nonce-" + nonce + "'; style-src 'nonce-" + nonce + "'; " +
		"connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

// newNonce returns 128 random bits in hex: a fresh CSP nonce per response.
// Hex, not base64, so that no character of it is escaped in an attribute.
func newNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// pageOf is the model of the page served at root (the relative way back
// to "/": "" there, "../" under /groups/), with the overview of the
// failover groups when st's view has them; pending holds the countdown of
// each pending group.
func pageOf(st Status, now time.Time, nonce, root string, pending map[string]*failover.Pending) pageModel {
	m := buildPage(st, now, nonce)
	m.Root = root
	m.Groups = buildGroups(st.State.Groups, st.State.Group, root, pending)
	// The default group's view holds every runner's repairs; a group's,
	// its own runner's only.
	m.RepairGroups = m.Groups != nil && st.State.Group == ""
	return m
}

// renderPage writes m as the whole page, or as its partial (the main
// container) when the request asks for one.
func renderPage(w http.ResponseWriter, r *http.Request, m pageModel) {
	tmpl := "page"
	if r.URL.Query().Get("partial") != "" {
		tmpl = "main"
	}
	var buf bytes.Buffer
	if err := pageTemplate.ExecuteTemplate(&buf, tmpl, m); err != nil {
		// The model holds only strings and numbers: this is a bug in the
		// template, and the client must not get half a page.
		writeText(w, http.StatusInternalServerError, "status page: "+err.Error()+"\n")
		return
	}
	// html/template makes text inert as markup but passes a right-to-left
	// override or a line separator from an old history entry through, and
	// the browser would reorder or break the line around it. The template
	// itself holds none, so escaping the whole page reaches every field.
	page := failover.EscapeFormat(buf.String())
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", pageCSP(m.Nonce))
	h.Set("X-Frame-Options", "DENY")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, page)
}
