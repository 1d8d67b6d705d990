package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/failover"
)

// forged is text an old log may hold: a newline that forges a history row,
// CR, NUL, tab, a C1 CSI, an invalid byte, escape sequences that would
// clear the operator's screen and change its colours, a right-to-left
// override that reorders what follows it and a line separator.
const forged = "ok\n99  1  2026-01-01T00:00:00Z  failover  primary->backup  mallory  -  forged row\r\x00\t\u009b2J\xff\x1b[2J\x1b[31m\u202edetrever\u2028"

// hasControl reports a byte a terminal could act on, other than the
// newline ending each printed line.
func hasControl(s string) bool {
	for _, line := range strings.Split(s, "\n") {
		if failover.CheckText(line) != nil {
			return true
		}
	}
	return false
}

// Text from the replicated log is printed escaped by history, status and
// remediate records: no control character reaches the terminal and no row
// is forged, whatever an entry written before the API refused it holds.
func TestLogTextIsPrintedEscaped(t *testing.T) {
	var st api.Status
	v := &st.State
	v.Paused, v.PauseReason, v.PausedBy = true, forged, forged
	v.WithheldReason, v.LastDecision = forged, forged
	st.Warnings = []string{forged}
	v.Nodes = []failover.NodeView{{Node: "a", Abstain: forged, Probes: []failover.ProbeView{{Site: failover.Primary, Probe: "lms", LastAt: 1, Last: failover.ProbeResult{Reason: forged}}}}}
	v.Remediations = []failover.RemediationRecord{{Index: 10, At: 1, Remediation: failover.Remediation{Name: forged, Target: forged, Verb: forged, Result: forged, Reason: forged, Detail: forged, Key: "k"}}}
	history := []failover.Entry{
		{Index: 5, Gen: 1, At: 1, Kind: failover.KindPause, Actor: forged, Reason: forged, Outcome: forged},
		{Index: 6, Gen: 1, At: 2, Kind: failover.KindResume, Actor: "bob", Reason: "done"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/status":
			_ = json.NewEncoder(w).Encode(st)
		case "/api/v1/explain/1":
			// Lines are the server's to break (failover.Explain escapes the
			// text it quotes); the CLI escapes what is left on each line.
			_ = json.NewEncoder(w).Encode(map[string]any{"explanation": "gen 1: paused by bob: " + strings.ReplaceAll(forged, "\n", `\n`) + "\nsecond line"})
		case "/api/v1/history":
			_ = json.NewEncoder(w).Encode(map[string]any{"history": history})
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	for _, args := range [][]string{{"history"}, {"status"}, {"remediate", "records"}, {"explain", "1"}} {
		out, stderr, code := run(t, append(args, "--endpoint", srv.URL)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", args[0], code, stderr)
		}
		if hasControl(out) {
			t.Errorf("%s: output holds a control character:\n%q", strings.Join(args, " "), out)
		}
		if !strings.Contains(out, `\x1b[2J`) || !strings.Contains(out, `ok\n99`) || !strings.Contains(out, `\u202edetrever\u2028`) {
			t.Errorf("%s: output does not show the escapes:\n%s", strings.Join(args, " "), out)
		}
	}
	out, _, _ := run(t, "history", "--endpoint", srv.URL)
	if lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); len(lines) != 3 {
		t.Errorf("history: got %d lines, want a header and two rows:\n%s", len(lines), out)
	}
}

// The break-glass reason and actor end up in the history when quorum
// returns: dns set refuses control characters in them before writing.
func TestDNSSetRefusesControlCharactersInText(t *testing.T) {
	for _, flags := range [][]string{{"--reason", "down\x1b[2J", "--actor", "alice"}, {"--reason", "down", "--actor", "eve\nforged"}} {
		args := append([]string{"dns", "set", "--site", "backup", "--no-quorum", "--yes", "--config", "/nonexistent/drwatch.yaml"}, flags...)
		_, stderr, code := run(t, args...)
		field := strings.TrimPrefix(flags[0], "--")
		if flags[1] == "down" {
			field = "actor"
		}
		if code != exitUsage || !strings.Contains(stderr, "--"+field+": ") {
			t.Errorf("dns set %q: got exit %d %q, want a usage error naming --%s", flags, code, stderr, field)
		}
	}
}
