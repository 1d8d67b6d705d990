package failover

import (
	"reflect"
	"testing"
)

// The index answers every lookup by name exactly as the scan of the
// groups does, for names the policy has, names it has not, and a site
// that is neither.
func TestPolicyIndexAnswersAsTheScanOfTheGroups(t *testing.T) {
	p := twoGroupPolicy().normalize()
	// The default group's probes come first, and a name two groups share
	// keeps the first's Critical (siteProbes, probe).
	p.Sites = map[Site]SitePolicy{Primary: {Probes: []ProbeRef{{Name: "edge"}, {Name: "kube", Critical: false}}}}
	p.Groups[1].Sites[Backup] = SitePolicy{Probes: append(p.Groups[1].Sites[Backup].Probes, ProbeRef{Name: "only-apps"})}
	scan := p.clone()
	idx := p.clone()
	idx.indexed()
	if scan.index != nil || idx.index == nil {
		t.Fatal("clone must leave the index out, indexed must set it")
	}
	names := []string{"edge", "kube", "web-lms", "web-apps", "only-apps", "nope", ""}
	for _, site := range []Site{Primary, Backup, "elsewhere"} {
		if got, want := idx.siteProbes(site), scan.siteProbes(site); !reflect.DeepEqual(got, want) {
			t.Errorf("siteProbes(%s) = %v, want %v", site, got, want)
		}
		for _, n := range names {
			r1, ok1 := idx.probe(site, n)
			r2, ok2 := scan.probe(site, n)
			if r1 != r2 || ok1 != ok2 {
				t.Errorf("probe(%s, %q) = %v %v, want %v %v", site, n, r1, ok1, r2, ok2)
			}
		}
	}
	for _, g := range []string{"lms", "apps", DefaultGroup, "", "nope"} {
		q1, ok1 := idx.ForGroup(g)
		q2, ok2 := scan.ForGroup(g)
		if ok1 != ok2 {
			t.Fatalf("ForGroup(%q) ok = %v, want %v", g, ok1, ok2)
		}
		if !ok1 || g == DefaultGroup || g == "" {
			continue
		}
		if q1.index != nil || q2.index != nil {
			t.Errorf("ForGroup(%q) must hold no index", g)
		}
		if !reflect.DeepEqual(q1, q2) {
			t.Errorf("ForGroup(%q) = %+v, want %+v", g, q1, q2)
		}
	}
}

// The machine's policy is indexed whether it came from a SetPolicy or a
// snapshot, and what it hands out is a copy without the index.
func TestMachinePolicyIsIndexedAfterSetPolicyAndRestore(t *testing.T) {
	m := New()
	if _, err := DecodeResponse(m.Apply(1, mustEncode(Command{At: 1, Payload: SetPolicy{Policy: twoGroupPolicy(), Actor: "ops"}}))); err != nil {
		t.Fatal(err)
	}
	if m.st.Policy.index == nil {
		t.Fatal("SetPolicy left the policy without its index")
	}
	r := restoredCopy(t, m)
	if r.st.Policy.index == nil {
		t.Fatal("Restore left the policy without its index")
	}
	if p, _ := r.Policy(); p.index != nil {
		t.Fatal("Policy() handed out the index with its copy")
	}
}

// restoredCopy is a new machine restored from m's snapshot.
func restoredCopy(t *testing.T, m *Machine) *Machine {
	t.Helper()
	snap, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	r := New()
	if err := r.Restore(snap); err != nil {
		t.Fatal(err)
	}
	return r
}

// Indexed is a copy with an index: the same policy, and the original is
// left as it was.
func TestIndexedIsAnIndexedCopy(t *testing.T) {
	p := twoGroupPolicy().normalize()
	q := p.Indexed()
	if q.index == nil || p.index != nil || q.Hash() != p.Hash() {
		t.Fatalf("Indexed: index %v (original %v), hash %s, want an index on the copy only and hash %s", q.index != nil, p.index != nil, q.Hash(), p.Hash())
	}
	if g, ok := q.ForGroup("lms"); !ok || g.Records[0].Name != "lms.example.org." {
		t.Fatalf("ForGroup(lms) on the copy: %+v %v", g, ok)
	}
}
