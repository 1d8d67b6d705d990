package api

import (
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/drwatch/drwatch/failover"
)

// Badge is a shields-style two-part label: "active | backup".
type Badge struct {
	Label string
	Value string
	// Color is the right half's fill: one of the badge* colours.
	Color string
}

// Badge colours (shields.io's palette), readable with white text.
const (
	badgeGreen  = "#2e7d32"
	badgeRed    = "#c62828"
	badgeOrange = "#b45309"
	badgeBlue   = "#1d4ed8"
	badgeGrey   = "#616161"
)

// ActiveBadge says which site traffic goes to. It turns grey with a
// qualifier when this node's view cannot be trusted (no leader, stale).
func ActiveBadge(st Status) Badge {
	b := Badge{Label: "active", Value: string(st.State.Active)}
	switch st.State.Active {
	case failover.Primary:
		b.Color = badgeGreen
	case failover.Backup:
		b.Color = badgeOrange
	default:
		b.Value, b.Color = "unknown", badgeGrey
	}
	return distrust(st, b)
}

// PrimaryBadge is the primary site's health at quorum.
func PrimaryBadge(st Status) Badge {
	t := st.State.Sites[failover.Primary]
	b := Badge{Label: "primary"}
	switch t.Verdict {
	case failover.Up:
		b.Value, b.Color = "up", badgeGreen
	case failover.Down:
		b.Value, b.Color = "down", badgeRed
	case failover.NoQuorum:
		b.Value, b.Color = "no quorum", badgeGrey
	default:
		b.Value, b.Color = "unknown", badgeGrey
	}
	if t.Quorum > 0 && (t.Verdict == failover.Up || t.Verdict == failover.Down) {
		n := len(t.Up)
		if t.Verdict == failover.Down {
			n = len(t.Down)
		}
		b.Value += fmt.Sprintf(" (%d/%d)", n, len(t.Up)+len(t.Down)+len(t.Abstain)+len(t.Unknown))
	}
	return distrust(st, b)
}

// distrust greys a badge and says why when the serving node has no leader
// or stale data: a badge must not look confident when the page would warn.
func distrust(st Status, b Badge) Badge {
	iv := interval(&st)
	switch {
	case st.Leader == "":
		b.Value += ", no leader"
		b.Color = badgeGrey
	case st.StaleSeconds > 3*iv.Seconds():
		b.Value += ", stale"
		b.Color = badgeGrey
	}
	return b
}

// textWidth estimates the rendered width in px of s in 11px Verdana/DejaVu
// Sans, the font shields uses: wide enough that text never overflows.
func textWidth(s string) int {
	w := 0.0
	for _, r := range s {
		switch {
		case strings.ContainsRune("il.,:;!|'() ", r):
			w += 3.9
		case strings.ContainsRune("mwMW", r):
			w += 10.5
		case r >= 'A' && r <= 'Z':
			w += 7.9
		case r >= '0' && r <= '9':
			w += 7.0
		default:
			w += 6.8
		}
	}
	return int(w + 0.999)
}

var badgeTemplate = template.Must(template.New("badge").Parse(`<svg xmlns="http://www.w3.org/2000/svg" width="{{.W}}" height="20" role="img" aria-label="{{.Label}}: {{.Value}}">
<title>{{.Label}}: {{.Value}}</title>
<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>
<clipPath id="r"><rect width="{{.W}}" height="20" rx="3" fill="#fff"/></clipPath>
<g clip-path="url(#r)"><rect width="{{.LW}}" height="20" fill="#555"/><rect x="{{.LW}}" width="{{.RW}}" height="20" fill="{{.Color}}"/><rect width="{{.W}}" height="20" fill="url(#s)"/></g>
<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">
<text x="{{.LX}}" y="15" fill="#010101" fill-opacity=".3">{{.Label}}</text><text x="{{.LX}}" y="14">{{.Label}}</text>
<text x="{{.RX}}" y="15" fill="#010101" fill-opacity=".3">{{.Value}}</text><text x="{{.RX}}" y="14">{{.Value}}</text>
</g>
</svg>
`))

// xmlSafe drops what XML 1.0 cannot carry even escaped: invalid UTF-8 and
// control characters other than tab, newline and carriage return.
func xmlSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == utf8.RuneError || (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0xFFFE || r == 0xFFFF {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
}

// SVG renders the badge as a self-contained SVG document.
func (b Badge) SVG() []byte {
	b.Label, b.Value, b.Color = xmlSafe(b.Label), xmlSafe(b.Value), xmlSafe(b.Color)
	lw, rw := textWidth(b.Label)+10, textWidth(b.Value)+10
	var sb strings.Builder
	// html/template escapes Label and Value as XML text and attributes.
	_ = badgeTemplate.Execute(&sb, struct {
		Label, Value, Color string
		W, LW, RW, LX, RX   int
	}{b.Label, b.Value, b.Color, lw + rw, lw, rw, lw / 2, lw + rw/2})
	return []byte(sb.String())
}

func serveBadge(w http.ResponseWriter, r *http.Request, be ReadModel) {
	var b Badge
	switch r.PathValue("name") {
	case "active.svg":
		b = ActiveBadge(be.Status(r.Context()))
	case "primary.svg":
		b = PrimaryBadge(be.Status(r.Context()))
	default:
		writeError(w, ErrorDetail{Code: CodeNotFound, Message: "no such badge: want active.svg or primary.svg"})
		return
	}
	h := w.Header()
	h.Set("Content-Type", "image/svg+xml; charset=utf-8")
	h.Set("Cache-Control", "no-store, max-age=0")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b.SVG())
}
