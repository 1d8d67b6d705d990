package node

import (
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/config"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/caddytest"
)

// The readiness hook built from the example config, with the backup's
// https probes pointed at a real Caddy: both public names pass while it
// serves them, and fail naming the address once it is down; the TTL fits
// the default budget; no remediation is enabled, so none would run.
func TestDrillReadinessFromConfig(t *testing.T) {
	caddy := caddytest.Start(t, caddytest.Options{Name: "backup", Hosts: []string{"lms.learn.example.org", "studio.learn.example.org"}})
	cfg, err := config.Load("../../../deploy/examples/node-a.yaml", config.Options{SkipFileChecks: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range cfg.Sites.Backup.Probes {
		if h := cfg.Sites.Backup.Probes[i].HTTP; h != nil {
			h.ConnectTo, h.CAFile = caddy.Addr, caddy.CAFile
		}
	}
	hook, err := DrillReadiness(cfg, failover.New(), time.Hour, 0, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, c := range hook(t.Context(), failover.DrillRecord{}) {
		got[c.Name] = c.Pass
		if !c.Pass {
			t.Errorf("%s failed: %s", c.Name, c.Reason)
		}
	}
	for _, name := range []string{"certificate lms.learn.example.org", "certificate studio.learn.example.org", "ttl vs rto budget", "remediation plan"} {
		if _, ok := got[name]; !ok {
			t.Errorf("no %q check; got %v", name, got)
		}
	}
	if err := caddy.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, c := range hook(t.Context(), failover.DrillRecord{}) {
		if strings.HasPrefix(c.Name, "certificate ") && (c.Pass || !strings.Contains(c.Reason, caddy.Addr)) {
			t.Errorf("backup down: got %s pass=%v %q, want a failure naming %s", c.Name, c.Pass, c.Reason, caddy.Addr)
		}
	}
}
