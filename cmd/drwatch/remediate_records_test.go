package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/failover"
)

// TestRemediateRecords: `drwatch remediate records` lists the status's
// remediation records newest first, dry runs included, as a table and as
// JSON, and says so when there are none.
func TestRemediateRecords(t *testing.T) {
	var st api.Status
	st.State.Remediations = []failover.RemediationRecord{
		{Index: 10, At: 1795261920000000000, Remediation: failover.Remediation{Name: "octavia-stuck-lb", Target: "loadbalancer/5f0c",
			Verb: "failover", Result: failover.RemediationDryRun, Reason: "provisioning_status ERROR", Key: "k1"}},
		{Index: 11, At: 1795261980000000000, Remediation: failover.Remediation{Name: "dead-node-out-of-service", Target: "node/w3",
			Verb: "taint", Result: failover.RemediationFailed, Reason: "NotReady for 6m", Detail: "forbidden", Key: "k2"}},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/status" {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(st)
	}))
	defer srv.Close()

	out, stderr, code := run(t, "remediate", "records", "--endpoint", srv.URL)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "INDEX") {
		t.Fatalf("got %d lines, want a header and two records:\n%s", len(lines), out)
	}
	for i, want := range [][]string{
		{"11", "dead-node-out-of-service", "taint", "node/w3", "failed", "NotReady for 6m", "forbidden"},
		{"10", "octavia-stuck-lb", "failover", "loadbalancer/5f0c", "dry_run", "provisioning_status ERROR"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i+1], w) {
				t.Errorf("row %d %q lacks %q", i+1, lines[i+1], w)
			}
		}
	}

	out, stderr, code = run(t, "remediate", "records", "--endpoint", srv.URL, "-o", "json")
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, stderr)
	}
	var got struct {
		Remediations []failover.RemediationRecord `json:"remediations"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Remediations) != 2 || got.Remediations[0].Index != 11 {
		t.Fatalf("json: got %+v (%v), want two records, index 11 first", got, err)
	}

	st.ServedAt = time.Unix(0, 1795262040000000000)
	out, stderr, code = run(t, "status", "--endpoint", srv.URL)
	if want := "repairs:     last failed taint node/w3 (dead-node-out-of-service, 1m0s ago); 'drwatch remediate records' lists 2"; code != 0 || !strings.Contains(out, want) {
		t.Errorf("status: exit %d (%s), want a line %q in:\n%s", code, stderr, want, out)
	}

	st.State.Remediations = nil
	out, _, code = run(t, "remediate", "records", "--endpoint", srv.URL)
	if code != 0 || !strings.Contains(out, "no remediation records yet") {
		t.Fatalf("none: exit %d, output %q", code, out)
	}
}

// TestRemediateRecordsNeedsAdmin: a failure that needs an admin says so in
// the table, not only in the JSON.
func TestRemediateRecordsNeedsAdmin(t *testing.T) {
	var st api.Status
	st.State.Remediations = []failover.RemediationRecord{
		{Index: 12, At: 1795261980000000000, Remediation: failover.Remediation{Name: "octavia-stuck-lb", Target: "loadbalancer/5f0c",
			Verb: "failover", Result: failover.RemediationFailed, Reason: "provisioning_status ERROR", Detail: "403", Key: "k3", NeedsAdmin: true}},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(st)
	}))
	defer srv.Close()
	out, stderr, code := run(t, "remediate", "records", "--endpoint", srv.URL)
	if code != 0 || !strings.Contains(out, "failed (needs admin)") {
		t.Fatalf("exit %d (%s): got\n%s\nwant the result failed (needs admin)", code, stderr, out)
	}
}
