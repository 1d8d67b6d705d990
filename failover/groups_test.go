package failover

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func twoGroupPolicy() Policy {
	refs := func(names ...string) map[Site]SitePolicy {
		var rs []ProbeRef
		for _, n := range names {
			rs = append(rs, ProbeRef{Name: n, Critical: true})
		}
		return map[Site]SitePolicy{Primary: {Probes: rs}, Backup: {Probes: append([]ProbeRef(nil), rs...)}}
	}
	rec := func(name, p, b string) []Record {
		return []Record{{Name: name, Type: "A", TTL: 60, Primary: []string{p}, Backup: []string{b}}}
	}
	return Policy{
		Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 3, Rise: 2, Interval: time.Second,
		Groups: []Group{
			{Name: "lms", AutoFailover: true, Sites: refs("web-lms", "kube"), Zone: "example.org.", Records: rec("lms", "203.0.113.1", "198.51.100.1")},
			{Name: "apps", AutoFailover: true, Sites: refs("web-apps", "kube"), Zone: "example.org.", Records: rec("apps", "203.0.113.2", "198.51.100.2")},
		},
	}
}

func TestPolicyWithGroupsNeedsTheGroupsLogFormat(t *testing.T) {
	p := twoGroupPolicy()
	c := Command{At: 1, Payload: SetPolicy{Policy: p, Actor: "ops"}}
	if got := c.NeedsFormat(); got != 3 {
		t.Fatalf("a policy with groups needs format %d, want 3", got)
	}
	var re *RefusedError
	if err := CheckFormat(c, 2); !errors.As(err, &re) || re.Rule != RuleLogFormat {
		t.Fatalf("a format-2 cluster must refuse a policy with groups, got %v", err)
	}
	// The leader's stamp refuses it until every voter reads format 3 (the
	// tick loop proposes the file's policy again every interval, so groups
	// turn on by themselves once the format is raised), and takes it then.
	b, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := StampFormat(b, 2, 2, 2); !errors.As(err, &re) || re.Rule != RuleLogFormat {
		t.Fatalf("stamp a policy with groups at format 2: %v, want refused by %s", err, RuleLogFormat)
	}
	if _, err := StampFormat(b, 2, 3, 3); err != nil {
		t.Fatalf("stamp a policy with groups at format 3: %v", err)
	}
	// A trio that has not enabled groups writes what it wrote before.
	for _, pl := range []Payload{Failover{To: Backup, AckBlock: true}, Failback{}, Pause{}, Resume{}, Ack{}, ActionResult{Gen: 1, Outcome: OutcomeVerified}} {
		b, err := Encode(Command{At: 1, Payload: pl})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "group") {
			t.Errorf("%T without a group encodes %s, want no group field", pl, b)
		}
		if n := (Command{At: 1, Payload: pl}).NeedsFormat(); n > 2 {
			t.Errorf("%T without a group needs format %d", pl, n)
		}
	}
	if n := (Command{At: 1, Payload: Pause{Group: "lms"}}).NeedsFormat(); n != 3 {
		t.Errorf("a pause for a group needs format %d, want 3", n)
	}
}

func TestGroupPolicyRefusesWhatWouldMixGroups(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Policy)
		field string
	}{
		{"reserved name", func(p *Policy) { p.Groups[0].Name = DefaultGroup }, "groups[0].name"},
		{"duplicate name", func(p *Policy) { p.Groups[1].Name = p.Groups[0].Name }, "groups[1].name"},
		{"name not a label", func(p *Policy) { p.Groups[0].Name = "LMS site" }, "groups[0].name"},
		{"record of two groups", func(p *Policy) { p.Groups[1].Records[0].Name = "lms.example.org." }, "records[0]"},
		{"group without critical probe", func(p *Policy) { p.Groups[1].Sites[Backup] = SitePolicy{} }, "groups[1].sites.backup.probes"},
		{"group zone empty", func(p *Policy) { p.Groups[0].Zone = "" }, "groups[0].zone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := twoGroupPolicy()
			tc.edit(&p)
			err := p.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Validate() = %v, want an error naming %s", err, tc.field)
			}
		})
	}
	if err := twoGroupPolicy().Validate(); err != nil {
		t.Fatalf("a valid two-group policy: %v", err)
	}
}

// A stale leader's report for one group must never touch another's state,
// whatever its generation: the generations of two groups can be equal.
func TestActionResultForOneGroupLeavesTheOtherUndone(t *testing.T) {
	m := New()
	step := func(i uint64, p Payload) Result {
		t.Helper()
		r, err := m.Step(i, Command{At: int64(i) * int64(time.Second), Payload: p})
		if err != nil {
			t.Fatalf("step %d %T: %v", i, p, err)
		}
		return r
	}
	step(1, SetPolicy{Policy: twoGroupPolicy(), Actor: "ops"})
	step(2, Failover{To: Backup, Group: "lms", Force: true, Actor: "alice", AckBlock: true})
	step(3, Failover{To: Backup, Group: "apps", Force: true, Actor: "alice", AckBlock: true})
	step(4, ActionResult{Group: "lms", Gen: 2, Outcome: OutcomeVerified})
	if _, err := m.Step(5, Command{At: 5, Payload: ActionResult{Group: "lms", Gen: 3, Outcome: OutcomeVerified}}); !errors.Is(err, ErrUnknownGen) {
		t.Fatalf("apps' gen reported for lms: %v, want unknown gen", err)
	}
	lms, _ := m.GroupDesired("lms")
	apps, _ := m.GroupDesired("apps")
	if !lms.Done || apps.Done || apps.Gen != 3 {
		t.Fatalf("lms %+v apps %+v: want lms done, apps gen 3 not done", lms, apps)
	}
}

// Without a default group, what needs one decision (the repairs' gen, the
// DNS check) follows the first group by name, and a repair keyed by its
// generation is accepted.
func TestWithoutDefaultGroupTheFirstGroupLeads(t *testing.T) {
	m := New()
	if _, err := m.Step(1, Command{At: 1, Payload: SetPolicy{Policy: twoGroupPolicy(), Actor: "ops"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Step(2, Command{At: 2, Payload: Failover{To: Backup, Group: "lms", Force: true, Actor: "alice", AckBlock: true}}); err != nil {
		t.Fatal(err)
	}
	if d := m.Desired(); d.Gen != 0 || len(d.Records) != 1 || d.Records[0].Name != "apps.example.org." {
		t.Fatalf("Desired() = %+v, want apps' (first by name), undecided", d)
	}
	if _, err := m.Step(3, Command{At: 3, Payload: Failover{To: Backup, Group: "apps", Force: true, Actor: "alice", AckBlock: true}}); err != nil {
		t.Fatal(err)
	}
	if d := m.Desired(); d.Gen != 3 || d.Active != Backup {
		t.Fatalf("Desired() = %+v, want apps' gen 3 on the backup", d)
	}
	rem := Remediation{Name: "octavia_stuck_lb", Verb: "failover", Target: "lb-1", Key: "lb-1", Gen: 3, Result: RemediationApplied}
	if _, err := m.Step(4, Command{At: 4, Payload: rem}); err != nil {
		t.Fatalf("a repair keyed by the lead group's gen: %v", err)
	}
	rem.Gen, rem.Key = 4, "lb-2"
	if _, err := m.Step(5, Command{At: 5, Payload: rem}); !errors.Is(err, ErrUnknownGen) {
		t.Fatalf("a repair keyed by a gen no group has: %v, want unknown gen", err)
	}
}

// A group's history never shows another group's moves: the default
// group's entries carry no group, as the cluster's do, and are told apart
// by their kind.
func TestGroupHistoryLeavesOutTheDefaultGroupsMoves(t *testing.T) {
	p := twoGroupPolicy()
	p.Groups = p.Groups[:1] // lms
	p.AutoFailover = true
	p.Sites = map[Site]SitePolicy{Primary: {Probes: []ProbeRef{{Name: "web", Critical: true}}}, Backup: {Probes: []ProbeRef{{Name: "web", Critical: true}}}}
	p.Zone = "example.org."
	p.Records = []Record{{Name: "www", Type: "A", TTL: 60, Primary: []string{"203.0.113.9"}, Backup: []string{"198.51.100.9"}}}
	m := New()
	steps := []Payload{
		SetPolicy{Policy: p, Actor: "ops"},
		Pause{Actor: "bob"},
		Failover{To: Backup, Force: true, Actor: "alice", AckBlock: true},
		Pause{Group: "lms", Actor: "bob"},
	}
	for i, pl := range steps {
		if _, err := m.Step(uint64(i+1), Command{At: int64(i + 1), Payload: pl}); err != nil {
			t.Fatalf("step %d %T: %v", i+1, pl, err)
		}
	}
	kinds := func(group string) []string {
		v, ok := m.GroupView(group)
		if !ok {
			t.Fatalf("no view of %q", group)
		}
		var out []string
		for _, e := range v.History {
			out = append(out, e.Kind+"/"+e.Group)
		}
		return out
	}
	if got, want := strings.Join(kinds("lms"), " "), "policy/ pause/lms"; got != want {
		t.Errorf("lms' history %q, want %q (the cluster's policy and its own pause only)", got, want)
	}
	if got, want := strings.Join(kinds(DefaultGroup), " "), "policy/ pause/ manual_failover/"; got != want {
		t.Errorf("the default group's history %q, want %q", got, want)
	}
}
