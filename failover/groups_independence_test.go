package failover

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// independenceWorld drives one random log for a machine with groups a and
// b, and derives from it the log a machine with group a alone would see:
// b's own probe results stripped, and every command only for b replaced by
// an entry the machine refuses (so indexes, and so generations, match).
// Time never goes backwards here: a command for b moves the shared clock
// without judging a, and a backwards clock would make that visible.
type independenceWorld struct {
	r         *rand.Rand
	now       int64
	seq       map[string]uint64
	siteOK    map[string]bool // "primary/web-a" ... healthy or not
	gens      map[string][]uint64
	nodes     []string
	groupsPol Policy
}

func independencePolicy(groups ...string) Policy {
	p := Policy{Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 2, Rise: 2, Interval: time.Second}
	for i, g := range groups {
		refs := []ProbeRef{{Name: "web-" + g, Critical: true}, {Name: "kube", Critical: true}}
		p.Groups = append(p.Groups, Group{
			Name: g, AutoFailover: true, BlockWindow: 5 * time.Second, Failback: FailbackPolicy{Mode: FailbackAuto, After: 3 * time.Second},
			Sites: map[Site]SitePolicy{Primary: {Probes: refs}, Backup: {Probes: slices.Clone(refs)}},
			Zone:  "example.org.",
			Records: []Record{{Name: g, Type: "A", TTL: 60,
				Primary: []string{fmt.Sprintf("203.0.113.%d", i+1)}, Backup: []string{fmt.Sprintf("198.51.100.%d", i+1)}}},
		})
	}
	return p
}

// next returns the entry for the two-group machine and the one for the
// machine with group a alone.
func (w *independenceWorld) next() (both, alone []byte) {
	r := w.r
	w.now += int64(time.Second) / 3
	if r.IntN(20) == 0 {
		w.now += int64(time.Duration(r.IntN(10)) * time.Second)
	}
	at := w.now
	refused := []byte(`{"v":1}`)
	group := []string{"a", "b"}[r.IntN(2)]
	forB := func(p Payload) ([]byte, []byte) {
		b := mustEncode(Command{At: at, Payload: p})
		if group == "b" {
			return b, refused
		}
		return b, b
	}
	switch k := r.IntN(100); {
	case k < 6:
		keys := []string{"primary/web-a", "backup/web-a", "primary/web-b", "backup/web-b", "primary/kube", "backup/kube"}
		key := keys[r.IntN(len(keys))]
		w.siteOK[key] = !w.siteOK[key]
		return w.next()
	case k < 70:
		node := w.nodes[r.IntN(len(w.nodes))]
		w.seq[node]++
		o := Observe{Node: node, Seq: w.seq[node]}
		for _, site := range sites {
			for _, probe := range []string{"kube", "web-a", "web-b"} {
				ok := w.siteOK[string(site)+"/"+probe]
				if r.IntN(15) == 0 {
					ok = !ok
				}
				res := ProbeResult{Site: site, Probe: probe, OK: ok, CompletedAt: at - int64(r.IntN(500))*int64(time.Millisecond)}
				if !ok {
					res.Class, res.Reason = "connect", "refused"
				}
				o.Results = append(o.Results, res)
			}
		}
		b := mustEncode(Command{At: at, Payload: o})
		o.Results = slices.DeleteFunc(o.Results, func(res ProbeResult) bool { return res.Probe == "web-b" })
		return b, mustEncode(Command{At: at, Payload: o})
	case k < 75:
		b := mustEncode(Command{At: at, Payload: Tick{}})
		return b, b
	case k < 79:
		return forB(Failover{Group: group, To: sites[r.IntN(2)], Actor: "alice", Force: r.IntN(3) == 0, AckBlock: true})
	case k < 81:
		return forB(Failback{Group: group, Actor: "alice", Force: r.IntN(3) == 0, AckBlock: true})
	case k < 84:
		var until int64
		if r.IntN(2) == 0 {
			until = at + int64(time.Duration(1+r.IntN(10))*time.Second)
		}
		return forB(Pause{Group: group, Actor: "bob", Until: until})
	case k < 87:
		return forB(Resume{Group: group, Actor: "bob"})
	case k < 90:
		return forB(Ack{Group: group, Actor: "bob"})
	case k < 97:
		gen := uint64(r.IntN(5))
		if gs := w.gens[group]; len(gs) > 0 && r.IntN(5) != 0 {
			gen = gs[len(gs)-1]
		}
		return forB(ActionResult{Group: group, Gen: gen, Outcome: []string{OutcomeWritten, OutcomeVerified, OutcomeFailed}[r.IntN(3)]})
	default:
		// Every group at once: a is moved by its own rules, as if asked alone.
		f := Failover{To: sites[r.IntN(2)], Actor: "carol", Force: r.IntN(4) == 0, AckBlock: true}
		all := f
		all.AllGroups = true
		f.Group = "a"
		return mustEncode(Command{At: at, Payload: all}), mustEncode(Command{At: at, Payload: f})
	}
}

// groupPicture is group's replicated state, as the snapshot holds it, and
// its history entries. Views are left out on purpose: their tallies age
// with the shared clock, which any command moves.
func groupPicture(t *testing.T, m *Machine, group string) string {
	t.Helper()
	snap, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		State struct {
			Groups  map[string]json.RawMessage `json:"groups"`
			History []Entry                    `json:"history"`
		} `json:"state"`
	}
	if err := json.Unmarshal(snap, &s); err != nil {
		t.Fatal(err)
	}
	gs, ok := s.State.Groups[group]
	if !ok {
		t.Fatalf("no group %q in the snapshot", group)
	}
	hist := slices.DeleteFunc(s.State.History, func(e Entry) bool { return e.Group != group })
	b, err := json.Marshal(hist)
	if err != nil {
		t.Fatal(err)
	}
	return string(gs) + "\n" + string(b)
}

// A group's state is a function of its own inputs alone: whatever another
// group's probes, pauses, moves and reconciler reports do, group a in a
// trio with groups a and b is exactly group a in a trio with a alone
// (invariant 10).
func TestOneGroupNeverChangesAnother(t *testing.T) {
	decisions := 0
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			w := &independenceWorld{r: rand.New(rand.NewPCG(seed, seed*31)), now: base, seq: map[string]uint64{},
				siteOK: map[string]bool{}, gens: map[string][]uint64{}, nodes: []string{"a", "b", "c"}}
			for _, k := range []string{"primary/web-a", "backup/web-a", "primary/web-b", "backup/web-b", "primary/kube", "backup/kube"} {
				w.siteOK[k] = true
			}
			both, alone := New(), New()
			for _, m := range []struct {
				m *Machine
				p Policy
			}{{both, independencePolicy("a", "b")}, {alone, independencePolicy("a")}} {
				if _, err := m.m.Step(1, Command{At: w.now, Payload: SetPolicy{Policy: m.p, Actor: "ops"}}); err != nil {
					t.Fatal(err)
				}
			}
			const n = 500
			for i := uint64(2); i <= n; i++ {
				b, a := w.next()
				rb, _ := DecodeResponse(both.Apply(i, b))
				alone.Apply(i, a)
				for _, gr := range append([]Result{rb}, rb.Groups...) {
					if gr.Gen != 0 {
						g := gr.Group
						w.gens[g] = append(w.gens[g], gr.Gen)
						if g == "a" {
							decisions++
						}
					}
				}
				// Snapshots are dear under -race; a divergence stays in the
				// history, so every fifth entry is enough to catch it.
				if i%5 != 0 && i != n {
					continue
				}
				if got, want := groupPicture(t, both, "a"), groupPicture(t, alone, "a"); got != want {
					t.Fatalf("entry %d (%s): group a beside b differs from a alone:\n beside b %s\n alone    %s", i, b, got, want)
				}
			}
		})
	}
	if decisions < 20 {
		t.Fatalf("only %d decisions for group a in all seeds: the log no longer exercises the groups", decisions)
	}
}

// Replicas with groups agree byte for byte, and a replica restored from a
// snapshot in the middle of the log ends where the others do.
func TestReplicasWithGroupsAgreeAndRestore(t *testing.T) {
	w := &independenceWorld{r: rand.New(rand.NewPCG(99, 99*31)), now: base, seq: map[string]uint64{},
		siteOK: map[string]bool{}, gens: map[string][]uint64{}, nodes: []string{"a", "b", "c"}}
	for _, k := range []string{"primary/web-a", "backup/web-a", "primary/web-b", "backup/web-b", "primary/kube", "backup/kube"} {
		w.siteOK[k] = true
	}
	ms := []*Machine{New(), New()}
	first := mustEncode(Command{At: w.now, Payload: SetPolicy{Policy: independencePolicy("a", "b"), Actor: "ops"}})
	var restored *Machine
	for i := uint64(1); i <= 800; i++ {
		b := first
		if i > 1 {
			b, _ = w.next()
		}
		resp := ms[0].Apply(i, b)
		if got := ms[1].Apply(i, b); string(got) != string(resp) {
			t.Fatalf("entry %d: replicas answer %s and %s", i, resp, got)
		}
		if restored != nil {
			if got := restored.Apply(i, b); string(got) != string(resp) {
				t.Fatalf("entry %d: restored replica answers %s, want %s", i, got, resp)
			}
		}
		if i == 400 {
			snap, err := ms[0].Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			restored = New()
			if err := restored.Restore(snap); err != nil {
				t.Fatalf("restore a snapshot with groups: %v", err)
			}
		}
	}
	var snaps []string
	for _, m := range append(ms, restored) {
		s, err := m.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, string(s))
	}
	if snaps[0] != snaps[1] || snaps[0] != snaps[2] {
		t.Fatalf("replicas with groups differ after the same log")
	}
	for _, want := range []string{`"groups":{"a":`, `"group":"b"`, `"kind":"auto_failover"`} {
		if !strings.Contains(snaps[0], want) {
			t.Errorf("the log never made %s: it no longer exercises groups", want)
		}
	}
}
