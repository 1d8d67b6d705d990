package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/poll"
)

// whatIfNode serves GET /api/v1/what-if/{scenario} from a real decision
// core with a policy and healthy watchers, and records every request, so a
// test can prove the command sent nothing else.
func whatIfNode(t *testing.T) (*httptest.Server, func() []string) {
	t.Helper()
	m := failover.New()
	probes := []failover.ProbeRef{{Name: "lms", Critical: true}}
	p := failover.Policy{Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 3, Rise: 2, Interval: 2 * time.Second, AutoFailover: true,
		BlockWindow: time.Hour, Sites: map[failover.Site]failover.SitePolicy{failover.Primary: {Probes: probes}, failover.Backup: {Probes: probes}},
		Zone: "example.org.", Records: []failover.Record{{Name: "lms", Type: "A", TTL: 60, Primary: []string{"203.0.113.10"}, Backup: []string{"198.51.100.10"}}}}
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC).UnixNano()
	index := uint64(1)
	if _, err := m.Step(index, failover.Command{At: at, Payload: failover.SetPolicy{Policy: p}}); err != nil {
		t.Fatal(err)
	}
	for _, n := range p.Nodes {
		index++
		o := failover.Observe{Node: n, Results: []failover.ProbeResult{{Site: failover.Primary, Probe: "lms", OK: true}, {Site: failover.Backup, Probe: "lms", OK: true}}}
		if _, err := m.Step(index, failover.Command{At: at, Payload: o}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		scenario, ok := strings.CutPrefix(r.URL.Path, "/api/v1/what-if/")
		if r.Method != http.MethodGet || !ok {
			http.NotFound(w, r)
			return
		}
		ans, err := m.WhatIf(failover.WhatIfInput{Scenario: scenario, Now: at, ProbeTimeout: time.Second})
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(api.ErrorBody{Error: api.ErrorDetail{Code: api.CodeBadRequest, Message: err.Error()}})
			return
		}
		_ = json.NewEncoder(w).Encode(api.WhatIf{ServedBy: "a", Leader: "b", Answer: ans, Remediations: api.WhatIfRemediations})
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// `drwatch drill --what-if primary-down` prints the core's answer (where
// traffic goes, which records, how soon) and sends nothing but the read.
func TestDrillWhatIfPrintsTheAnswerAndWritesNothing(t *testing.T) {
	srv, seen := whatIfNode(t)
	out, stderr, code := run(t, "drill", "--what-if", "primary-down", "--endpoint", srv.URL)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"served by a (leader b)", "nothing is written",
		"traffic moves: auto_failover primary -> backup",
		"lms.example.org. 60 A: 203.0.113.10 -> 198.51.100.10",
		"expected time to the flip: 1s to 7s", // 3 rounds: (3-1) × the default fast interval, 500ms; 3 × 2s + 1s
		"a failing site re-probed every 500ms",
		"remediations: not known to the decision core",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, stderr, code = run(t, "drill", "--what-if", "primary-down", "--endpoint", srv.URL, "-o", "json")
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, stderr)
	}
	var got api.WhatIf
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	if got.Answer.Outcome != failover.WhatIfMoves || got.Answer.To != failover.Backup {
		t.Errorf("json: got outcome %q to %q, want moves to backup", got.Answer.Outcome, got.Answer.To)
	}
	for _, r := range seen() {
		if r != "GET /api/v1/what-if/primary-down" {
			t.Errorf("the command sent %s; a what-if sends only its read", r)
		}
	}
}

// A scenario the command does not know is a usage error (exit 2) naming
// the known ones, and nothing is sent; so is --what-if left out.
func TestDrillWhatIfUnknownScenarioListsTheKnownOnes(t *testing.T) {
	srv, seen := whatIfNode(t)
	_, stderr, code := run(t, "drill", "--what-if", "dns-down", "--endpoint", srv.URL)
	if code != exitUsage {
		t.Errorf("got exit %d, want %d", code, exitUsage)
	}
	for _, s := range failover.Scenarios() {
		if !strings.Contains(stderr, s) {
			t.Errorf("got %q, want it to name scenario %q", stderr, s)
		}
	}
	if _, _, code := run(t, "drill", "--endpoint", srv.URL); code != exitUsage {
		t.Errorf("without --what-if: got exit %d, want %d", code, exitUsage)
	}
	if r := seen(); len(r) != 0 {
		t.Errorf("got requests %v, want none", r)
	}
}

// Against three real watchers: a follower answers from its replica over
// the real API, the answer moves traffic to the backup's records, and
// nothing is committed by asking.
func TestDrillWhatIfAgainstCluster(t *testing.T) {
	_, d := startDemo(t)
	follower := ""
	poll.Until(t, 60*time.Second, func() bool {
		for i, n := range d.Nodes {
			if l := d.Leader(); l != nil && n != l && len(n.Machine().View().Sites[failover.Backup].Up) == 3 &&
				len(n.Machine().View().Sites[failover.Primary].Up) == 3 {
				follower = d.APIURLs[i]
				return true
			}
		}
		return false
	}, "a follower sees both sites UP on every watcher")
	index := d.Leader().Machine().View().Index
	out, stderr, code := run(t, "drill", "--what-if", "primary-down", "--endpoint", follower, "--ca-file", d.CAFile, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got api.WhatIf
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	if got.ServedBy == got.Leader || got.Answer.Outcome != failover.WhatIfMoves || got.Answer.To != failover.Backup {
		t.Errorf("got %s by %s (leader %s) to %q, want a follower's answer moving to the backup:\n%s", got.Answer.Outcome, got.ServedBy, got.Leader, got.Answer.To, got.Answer.Text())
	}
	// With a node's config the remediations a failover would run are
	// planned too (the demo enables none).
	// The config's first endpoint is node a, whose replica may trail.
	var table string
	poll.Until(t, 30*time.Second, func() bool {
		table, _, _ = run(t, "drill", "--what-if", "primary-down", "--config", d.Configs[0])
		return strings.Contains(table, "traffic moves")
	}, "node a's what-if moves traffic")
	for _, want := range []string{"traffic moves: auto_failover primary -> backup", "remediations after the move (a dry-run plan with backup active",
		"no remediation is enabled"} {
		if !strings.Contains(table, want) {
			t.Errorf("with --config: output lacks %q:\n%s", want, table)
		}
	}
	for _, e := range d.Leader().History() {
		if e.Index > index {
			t.Errorf("the history grew after the what-if: %+v", e)
		}
	}
	if d.Leader().Machine().Desired().Gen != 0 {
		t.Errorf("a decision was made: %+v", d.Leader().Machine().Desired())
	}
}
