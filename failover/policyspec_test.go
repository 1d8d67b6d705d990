package failover

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/internal/field"
)

// Each rule of the policy section names its field by its path inside the
// section, in the words `drwatch config validate` has always printed.
func TestPolicySpecValidate(t *testing.T) {
	good := PolicySpec{Interval: 2 * time.Second, Timeout: 1500 * time.Millisecond, Fall: 3, Rise: 5, Quorum: 2,
		StaleAfter: 6 * time.Second, BlockWindow: time.Hour, Failback: FailbackManual, MaxPause: 24 * time.Hour,
		FastInterval: 500 * time.Millisecond}
	year := 100000 * time.Hour
	for _, tt := range []struct {
		name   string
		change func(*PolicySpec)
		want   field.Errors
	}{
		{"defaults", func(*PolicySpec) {}, nil},
		{"zeros", func(s *PolicySpec) {
			*s = PolicySpec{Failback: "sometimes"}
		}, field.Errors{
			{Path: "interval", Msg: "0s must be > 0"},
			{Path: "timeout", Msg: "0s must be > 0"},
			{Path: "fall", Msg: "0 must be ≥ 1"},
			{Path: "rise", Msg: "0 must be ≥ 1"},
			{Path: "max_pause", Msg: "0s must be > 0"},
			{Path: "failback", Msg: `"sometimes" must be manual or auto`},
		}},
		{"above the bounds", func(s *PolicySpec) {
			s.Interval, s.Timeout, s.StaleAfter, s.BlockWindow, s.FailbackAfter, s.MaxPause = 2*time.Hour, 3*time.Hour, year, year, year, year
		}, field.Errors{
			{Path: "interval", Msg: "2h0m0s must be ≤ 1h0m0s"},
			{Path: "stale_after", Msg: "100000h0m0s must be ≤ 8784h0m0s"},
			{Path: "block_window", Msg: "100000h0m0s must be ≤ 8784h0m0s"},
			{Path: "failback_after", Msg: "100000h0m0s must be ≤ 8784h0m0s"},
			{Path: "max_pause", Msg: "100000h0m0s must be ≤ 8784h0m0s"},
			{Path: "failback_after", Msg: "set only with failback: auto"},
		}},
		{"timeout and stale_after against interval", func(s *PolicySpec) {
			s.Timeout, s.StaleAfter = 2*time.Second, time.Second
		}, field.Errors{
			{Path: "timeout", Msg: "2s must be < interval (2s)"},
			{Path: "stale_after", Msg: "1s must be > interval (2s)"},
		}},
		{"negatives", func(s *PolicySpec) {
			s.Fall, s.Rise, s.BlockWindow, s.MaxPause, s.Failback = -1, -2, -time.Second, -time.Second, FailbackAuto
		}, field.Errors{
			{Path: "fall", Msg: "-1 must be ≥ 1"},
			{Path: "rise", Msg: "-2 must be ≥ 1"},
			{Path: "block_window", Msg: "-1s must be ≥ 0"},
			{Path: "max_pause", Msg: "-1s must be > 0"},
			{Path: "failback_after", Msg: "required > 0 with failback: auto"},
		}},
		{"fast_interval below its minimum", func(s *PolicySpec) { s.FastInterval = 50 * time.Millisecond }, field.Errors{
			{Path: "fast_interval", Msg: "50ms must be ≥ 100ms"},
		}},
		{"fast_interval above interval", func(s *PolicySpec) { s.FastInterval = 3 * time.Second }, field.Errors{
			{Path: "fast_interval", Msg: "3s must be ≤ interval (2s)"},
		}},
		{"fast_interval set to zero", func(s *PolicySpec) { s.FastInterval = 0 }, field.Errors{
			{Path: "fast_interval", Msg: "0s must be ≥ 100ms"},
		}},
		{"fast_interval at both ends", func(s *PolicySpec) { s.FastInterval = 100 * time.Millisecond }, nil},
		{"fast_interval equal to interval", func(s *PolicySpec) { s.FastInterval = s.Interval }, nil},
		{"an interval below the minimum is not sped up", func(s *PolicySpec) {
			s.Interval, s.Timeout, s.StaleAfter, s.FastInterval = 80*time.Millisecond, 50*time.Millisecond, time.Second, 80*time.Millisecond
		}, nil},
		{"auto failback with its dwell", func(s *PolicySpec) { s.Failback, s.FailbackAfter = FailbackAuto, 10*time.Minute }, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := good
			tt.change(&s)
			if got := s.Validate(); !slices.Equal(got, tt.want) {
				t.Errorf("got\n%v\nwant\n%v", got, tt.want)
			}
		})
	}
}

// A field the file leaves out takes its derived default; one it sets, even
// to zero, keeps its value for Validate to judge.
func TestPolicySpecDerivedDefaults(t *testing.T) {
	s := PolicySpec{Interval: 2 * time.Second}
	none := func(string) bool { return false }
	if got := s.WithDerivedDefaults(3, none); got.Quorum != 2 || got.StaleAfter != 6*time.Second {
		t.Errorf("3 nodes, nothing set: got quorum %d stale_after %s, want 2 and 6s", got.Quorum, got.StaleAfter)
	}
	if got := s.WithDerivedDefaults(3, none); got.FastInterval != 500*time.Millisecond {
		t.Errorf("interval 2s, nothing set: got fast_interval %s, want 500ms (interval / 4)", got.FastInterval)
	}
	for _, tt := range []struct{ interval, want time.Duration }{
		{time.Second, 250 * time.Millisecond}, {300 * time.Millisecond, 100 * time.Millisecond}, {50 * time.Millisecond, 50 * time.Millisecond},
	} {
		if got := (PolicySpec{Interval: tt.interval}).WithDerivedDefaults(3, none); got.FastInterval != tt.want {
			t.Errorf("interval %s, nothing set: got fast_interval %s, want %s", tt.interval, got.FastInterval, tt.want)
		}
	}
	if got := s.WithDerivedDefaults(5, none); got.Quorum != 3 {
		t.Errorf("5 nodes: got quorum %d, want 3", got.Quorum)
	}
	if got := s.WithDerivedDefaults(0, none); got.Quorum != 0 {
		t.Errorf("no nodes: got quorum %d, want it left for the rules to judge", got.Quorum)
	}
	all := func(string) bool { return true }
	if got := s.WithDerivedDefaults(3, all); got.Quorum != 0 || got.StaleAfter != 0 || got.FastInterval != 0 {
		t.Errorf("all set to zero: got quorum %d stale_after %s fast_interval %s, want all kept at zero", got.Quorum, got.StaleAfter, got.FastInterval)
	}
}

// The replicated policy carries every rule of the section, and the nodes,
// probes, zone and records the other sections give, unchanged.
func TestPolicySpecBuild(t *testing.T) {
	off := false
	s := PolicySpec{Interval: 2 * time.Second, Timeout: time.Second, Fall: 3, Rise: 5, Quorum: 2, StaleAfter: 9 * time.Second,
		AutoFailover: &off, BlockWindow: time.Hour, Failback: FailbackAuto, FailbackAfter: 10 * time.Minute,
		MaxPause: 24 * time.Hour, FailbackGate: []string{"lb"}, FastInterval: 200 * time.Millisecond}
	nodes := []string{"a", "b", "c"}
	sites := map[Site]SitePolicy{
		Primary: {Probes: []ProbeRef{{Name: "lms", Critical: true}, {Name: "lb"}}},
		Backup:  {Probes: []ProbeRef{{Name: "lms", Critical: true}}},
	}
	records := []Record{{Name: "lms", Type: "A", TTL: 60, Primary: []string{"203.0.113.10"}, Backup: []string{"198.51.100.10"}}}
	want := Policy{Nodes: nodes, Quorum: 2, Fall: 3, Rise: 5, Interval: 2 * time.Second, StaleAfter: 9 * time.Second,
		AutoFailover: false, BlockWindow: time.Hour, Failback: FailbackPolicy{Mode: FailbackAuto, After: 10 * time.Minute},
		Sites: sites, Zone: "example.org.", Records: records, FailbackGate: []string{"lb"}, MaxPause: 24 * time.Hour,
		FastInterval: 200 * time.Millisecond}
	got := s.Build(nodes, sites, "example.org.", records)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("built policy: %v", err)
	}
	s.AutoFailover = nil
	if !s.Build(nodes, sites, "example.org.", records).AutoFailover {
		t.Errorf("auto_failover left out: got off, want on")
	}
}

// fast_interval left out, or set to its default, keeps the hash a policy
// had before the key existed: old logs and snapshots hash as they were
// recorded, and nodes upgraded one by one agree on the policy. Any other
// value is a different policy.
func TestFastIntervalDefaultKeepsThePolicyHash(t *testing.T) {
	p := testPolicy()
	before := p.Hash()
	if p.FastInterval != 0 {
		t.Fatalf("testPolicy sets fast_interval %s, want it left out", p.FastInterval)
	}
	if got := p.FastProbeInterval(); got != DefaultFastInterval(p.Interval) {
		t.Errorf("fast_interval left out: got %s, want the default %s", got, DefaultFastInterval(p.Interval))
	}
	p.FastInterval = DefaultFastInterval(p.Interval)
	if got := p.Hash(); got != before {
		t.Errorf("fast_interval set to its default: got hash %s, want %s", ShortHash(got), ShortHash(before))
	}
	b, err := json.Marshal(p.normalize())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "fast_interval") {
		t.Errorf("normalized policy with the default fast_interval: got %s, want no fast_interval key", b)
	}
	p.FastInterval = p.Interval / 2
	if got := p.Hash(); got == before {
		t.Errorf("fast_interval %s: got the default's hash, want another", p.FastInterval)
	}
	if got := p.FastProbeInterval(); got != p.Interval/2 {
		t.Errorf("fast_interval %s: got %s", p.Interval/2, got)
	}
	p.FastInterval = 10 * time.Millisecond
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "fast_interval: 10ms must be ≥ 100ms") {
		t.Errorf("fast_interval 10ms: got %v, want fast_interval refused", err)
	}
}
