package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
)

// WhatIf of the fixtures' backend: no policy was ever set, so the core
// answers ErrNoPolicy (or refuses an unknown scenario), as a fresh node does.
func (b *pageBackend) WhatIf(_ context.Context, scenario string) (WhatIf, error) {
	ans, err := failover.New().WhatIf(failover.WhatIfInput{Scenario: scenario})
	return WhatIf{Answer: ans}, err
}

// machineBackend answers what-ifs from a real decision core.
type machineBackend struct {
	pageBackend
	m   *failover.Machine
	now int64
}

func (b *machineBackend) WhatIf(_ context.Context, scenario string) (WhatIf, error) {
	ans, err := b.m.WhatIf(failover.WhatIfInput{Scenario: scenario, Now: b.now, ProbeTimeout: 500 * time.Millisecond})
	return WhatIf{ServedBy: "a", Answer: ans, Remediations: WhatIfRemediations}, err
}

// healthyMachine has a policy and two healthy rounds from each of a, b, c;
// it returns the machine and the time of the last round.
func healthyMachine(t *testing.T) (*failover.Machine, int64) {
	t.Helper()
	m := failover.New()
	probes := []failover.ProbeRef{{Name: "lms", Critical: true}}
	p := failover.Policy{Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 3, Rise: 2, Interval: 2 * time.Second, AutoFailover: true,
		BlockWindow: time.Hour, Sites: map[failover.Site]failover.SitePolicy{failover.Primary: {Probes: probes}, failover.Backup: {Probes: probes}},
		Zone: "example.org.", Records: []failover.Record{{Name: "lms", Type: "A", TTL: 60, Primary: []string{"203.0.113.10"}, Backup: []string{"198.51.100.10"}}}}
	at := fxNow.UnixNano()
	index := uint64(1)
	if _, err := m.Step(index, failover.Command{At: at, Payload: failover.SetPolicy{Policy: p}}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		at += int64(p.Interval)
		for _, n := range p.Nodes {
			index++
			o := failover.Observe{Node: n, Results: []failover.ProbeResult{{Site: failover.Primary, Probe: "lms", OK: true}, {Site: failover.Backup, Probe: "lms", OK: true}}}
			if _, err := m.Step(index, failover.Command{At: at, Payload: o}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return m, at
}

// GET /api/v1/what-if/primary-down answers from the decision core and
// changes nothing in the replica.
func TestWhatIfEndpointAnswersWithoutChangingTheReplica(t *testing.T) {
	m, at := healthyMachine(t)
	before, _ := m.Snapshot()
	srv := apiServer(t, &machineBackend{m: m, now: at}, "alice:0123456789abcdef0123\n")
	resp, err := srv.Client().Get(srv.URL + "/api/v1/what-if/primary-down")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("got %d %s, want 200", resp.StatusCode, body)
	}
	var got WhatIf
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	a := got.Answer
	if a.Outcome != failover.WhatIfMoves || a.To != failover.Backup || a.DownRounds != 3 || len(a.Records) != 1 ||
		a.Records[0].To[0] != "198.51.100.10" || a.FlipMax != 6500*time.Millisecond {
		t.Errorf("got %+v, want a move to the backup's 198.51.100.10 after 3 rounds, within 6.5s", a)
	}
	if got.Remediations == "" {
		t.Error("got no word on the remediations, want where they come from")
	}
	if after, _ := m.Snapshot(); !bytes.Equal(before, after) {
		t.Error("the what-if changed the replica")
	}
}

// A scenario the core does not know is a 400 naming the known ones; a
// node without a policy answers 503; the endpoint is read-only.
func TestWhatIfEndpointRefusals(t *testing.T) {
	srv := apiServer(t, &pageBackend{}, "alice:0123456789abcdef0123\n")
	for _, tc := range []struct {
		method, path string
		status       int
		code         Code
		mention      []string
	}{
		{http.MethodGet, "/api/v1/what-if/dns-down", http.StatusBadRequest, CodeBadRequest, failover.Scenarios()},
		{http.MethodGet, "/api/v1/what-if/primary-down", http.StatusServiceUnavailable, CodeUnavailable, []string{"no policy"}},
		{http.MethodPost, "/api/v1/what-if/primary-down", http.StatusMethodNotAllowed, CodeMethod, []string{"GET"}},
	} {
		resp, eb := do(t, srv, tc.method, tc.path, "", "")
		if resp.StatusCode != tc.status || eb.Error.Code != tc.code {
			t.Errorf("%s %s: got %d %s, want %d %s", tc.method, tc.path, resp.StatusCode, eb.Error.Code, tc.status, tc.code)
		}
		for _, s := range tc.mention {
			if !strings.Contains(eb.Error.Message, s) {
				t.Errorf("%s %s: got message %q, want it to mention %q", tc.method, tc.path, eb.Error.Message, s)
			}
		}
	}
}
