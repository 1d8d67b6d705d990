package api

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/failover"
)

const (
	fuzzOpen  = "⟦"
	fuzzClose = "⟧"
)

// fuzzStatus plants s, between markers, in every free-text field a
// watcher, an operator or a DNS server can influence.
func fuzzStatus(s string) Status {
	m := fuzzOpen + s + fuzzClose
	st := fxFailedOver()
	v := &st.State
	v.Nodes[0].Probes[0].Last.Reason = m
	v.Nodes[0].Probes[1].Last.Class = m
	v.Nodes[1].Abstain = m
	v.Nodes[1].Stale = true
	v.Nodes[2].Node = m
	v.PausedBy, v.PauseReason, v.Paused = m, m, true
	v.LastDecision = m
	v.WithheldRule, v.WithheldReason = m, m
	v.History[3].Reason, v.History[3].Actor = m, m
	v.History[3].Evidence[0].Failing[0].Reason = m
	v.History[1].Reason = m
	v.Pending = &failover.Pending{Site: failover.Primary, Leaning: []string{m, m}, Up: []string{m}, Quorum: 2, Rounds: 1,
		Then: &failover.PendingThen{Action: m, Rule: m}}
	st.Warnings = []string{m}
	st.ServedBy = m
	st.DNS.Error = m
	st.DNS.Servers[0].Error = m
	st.DNS.Servers[1].Got[0].Values = []string{m}
	st.Raft.Members[1].Addr = m
	v.Remediations[0].Target, v.Remediations[0].Reason = m, m
	v.Remediations[1].Name, v.Remediations[1].Detail = m, m
	return st
}

// checkMarked fails when any planted copy of the fuzz string reaches out
// as markup: between the markers, html/template must have escaped every
// character that could open or close a tag or an attribute.
func checkMarked(t *testing.T, page string) {
	t.Helper()
	rest := page
	for {
		i := strings.Index(rest, fuzzOpen)
		if i < 0 {
			return
		}
		rest = rest[i+len(fuzzOpen):]
		end := strings.Index(rest, fuzzClose)
		if j := strings.Index(rest, "…"); j >= 0 && (end < 0 || j < end) {
			end = j // truncated for display
		}
		if end < 0 {
			end = len(rest)
		}
		if k := strings.IndexAny(rest[:end], `<>"'`); k >= 0 {
			t.Fatalf("unescaped %q inside a planted string: …%s…", rest[k], rest[:min(end, k+60)])
		}
	}
}

func FuzzPageEscapes(f *testing.F) {
	for _, s := range []string{fxXSS, `"><img src=x onerror=alert(1)>`, `' onmouseover='x`, `</style><script>`, "&amp;&lt;", "\x00\xff\xfe", "javascript:alert(1)", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		s = strings.NewReplacer(fuzzOpen, "", fuzzClose, "").Replace(s)
		st := fuzzStatus(s)
		m := buildPage(st, fxNow, "00112233445566778899aabbccddeeff")
		var buf bytes.Buffer
		if err := pageTemplate.ExecuteTemplate(&buf, "page", m); err != nil {
			t.Fatalf("render: %v", err)
		}
		checkMarked(t, buf.String())
		if _, err := json.Marshal(BuildSummary(st)); err != nil {
			t.Fatalf("summary: %v", err)
		}
		for _, b := range []Badge{ActiveBadge(st), PrimaryBadge(st), {Label: s, Value: s, Color: badgeGrey}} {
			d := xml.NewDecoder(bytes.NewReader(b.SVG()))
			for {
				_, err := d.Token()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("badge with %q is not well-formed XML: %v", s, err)
				}
			}
		}
	})
}
