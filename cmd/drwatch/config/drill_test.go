package config

import (
	"strings"
	"testing"
	"time"
)

// A config without a drill section drills on drwatch-drill.<first record>,
// never on a schedule, and keeps the policy hash it had before drills
// existed: the drill section is not replicated policy.
func TestDrillDefaultsKeepThePolicyHash(t *testing.T) {
	c, ps := loadString(t, validYAML(t))
	if ps != nil {
		t.Fatalf("valid.yaml: %v", ps)
	}
	if c.Drill.Record != "drwatch-drill.lms" || c.Drill.Schedule != "off" || c.Drill.ScheduleInterval() != 0 ||
		c.Drill.CertMinValidity != 336*time.Hour || c.Drill.RTOBudget != 5*time.Minute {
		t.Errorf("got drill %+v, want record drwatch-drill.lms, schedule off, cert_min_validity 336h, rto_budget 5m", c.Drill)
	}
	// The hash valid.yaml's policy had before the drill section existed.
	const before = "d2fa9fa4fcd3"
	if got := c.ReplicatedPolicy().Hash(); !strings.HasPrefix(got, before) {
		t.Errorf("policy hash without a drill section: got %s, want %s…", got, before)
	}
	withDrill, ps := loadString(t, validYAML(t)+"drill:\n  record: canary\n  schedule: 168h\n  cert_min_validity: 72h\n")
	if ps != nil {
		t.Fatalf("valid.yaml with drill: %v", ps)
	}
	if got, want := withDrill.ReplicatedPolicy().Hash(), c.ReplicatedPolicy().Hash(); got != want {
		t.Errorf("policy hash with a drill section: got %s, want %s (unchanged)", got, want)
	}
	if withDrill.Drill.ScheduleInterval() != 168*time.Hour {
		t.Errorf("schedule 168h: got interval %s", withDrill.Drill.ScheduleInterval())
	}
	cn := withDrill.Canary(withDrill.ReplicatedPolicy())
	if cn.Name != "canary.example.org." || cn.TTL != 60 || strings.Join(cn.Primary, ",") != "203.0.113.10" || strings.Join(cn.Backup, ",") != "198.51.100.10" {
		t.Errorf("canary: got %+v, want canary.example.org. mirroring lms", cn)
	}
	if withDrill.DrillFence() != "_drwatch-drill" {
		t.Errorf("drill fence: got %q, want _drwatch-drill", withDrill.DrillFence())
	}
}

func TestDrillSectionProblems(t *testing.T) {
	for _, tc := range []struct{ drill, want string }{
		{"  schedule: weekly\n", `drill.schedule: "weekly" must be a duration such as 168h, or off`},
		{"  schedule: 10m\n", "drill.schedule: 10m0s must be between 1h0m0s and"},
		{"  record: lms\n", `drill.record: "lms" is the managed record lms`},
		{"  record: studio.example.org.\n", `drill.record: "studio.example.org." is the managed record studio`},
		{"  record: canary.example.net.\n", `drill.record: "canary.example.net." is not in zone`},
		{"  record: _drwatch\n", `drill.record: "_drwatch" is a fence record`},
		{"  record: _canary.lms\n", `drill.record: "_canary.lms" holds '_'`},
		{"  cert_min_validity: 0s\n", "drill.cert_min_validity: 0s must be > 0"},
		{"  rto_budget: 0s\n", "drill.rto_budget: 0s must be > 0"},
	} {
		_, ps := loadString(t, validYAML(t)+"drill:\n"+tc.drill)
		if !strings.Contains(ps.Error(), tc.want) {
			t.Errorf("drill:\n%s got problems:\n%v\nwant one containing %q", tc.drill, ps, tc.want)
		}
	}
}

// fast_interval left out takes interval / 4 and keeps the policy hash a
// config had before the key existed; set to that same value it still does,
// and set to another it is another policy.
func TestFastIntervalKeepsThePolicyHash(t *testing.T) {
	c, ps := loadString(t, validYAML(t))
	if ps != nil {
		t.Fatalf("valid.yaml: %v", ps)
	}
	if c.Policy.FastInterval != 500*time.Millisecond {
		t.Errorf("fast_interval left out with interval 2s: got %s, want 500ms", c.Policy.FastInterval)
	}
	// The hash valid.yaml's policy had before fast_interval existed.
	const before = "d2fa9fa4fcd3"
	if got := c.ReplicatedPolicy().Hash(); !strings.HasPrefix(got, before) {
		t.Errorf("policy hash without fast_interval: got %s, want %s…", got, before)
	}
	for _, tt := range []struct {
		set  string
		same bool
	}{{"500ms", true}, {"250ms", false}} {
		set, ps := loadString(t, strings.Replace(validYAML(t), "block_window: 1h", "block_window: 1h, fast_interval: "+tt.set, 1))
		if ps != nil {
			t.Fatalf("valid.yaml with fast_interval %s: %v", tt.set, ps)
		}
		if got := set.ReplicatedPolicy().Hash(); strings.HasPrefix(got, before) != tt.same {
			t.Errorf("fast_interval %s: got hash %s, want same as without it: %v", tt.set, got, tt.same)
		}
	}
}
