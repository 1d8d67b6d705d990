package failover

import (
	"reflect"
	"testing"
	"time"
)

// Before the first policy there are no groups, but the default group's
// view is still asked for (a status read on a fresh node): it is the empty
// view, as View's, not a crash.
func TestDefaultGroupViewBeforeAnyPolicy(t *testing.T) {
	for _, name := range []string{"", DefaultGroup} {
		v, ok := New().GroupView(name)
		if !ok || v.Policy != nil || len(v.Groups) != 0 {
			t.Errorf("GroupView(%q) before a policy: got ok=%v, policy %v, %d groups; want the empty default view", name, ok, v.Policy, len(v.Groups))
		}
	}
	// The look-alike: a named group before a policy does not exist.
	if _, ok := New().GroupView("lms"); ok {
		t.Errorf("GroupView(lms) before a policy: got ok, want no such group")
	}
}

// GroupViews is GroupView of every group without the overview, in the
// policy's order, with a default group among named ones and without one;
// before a policy it is the default group's one view.
func TestGroupViewsAreEachGroupsViewWithoutTheOverview(t *testing.T) {
	if names, views := New().GroupViews(); names != nil || len(views) != 1 || !reflect.DeepEqual(views[0], New().View()) {
		t.Fatalf("before a policy: got names %v and %d views, want nil and the default view", names, len(views))
	}
	withDefault := twoGroupPolicy()
	withDefault.Sites = withDefault.Groups[0].Sites
	withDefault.Zone, withDefault.Records = "example.org.", []Record{{Name: "www", Type: "A", TTL: 60, Primary: []string{"203.0.113.9"}, Backup: []string{"198.51.100.9"}}}
	for name, tc := range map[string]struct {
		p     Policy
		first string
	}{"named groups only": {twoGroupPolicy(), "apps"}, "with a default group": {withDefault, DefaultGroup}} {
		p := tc.p
		t.Run(name, func(t *testing.T) {
			m := New()
			stepAll(t, m, 0,
				Command{At: int64(time.Second), Payload: SetPolicy{Policy: p, Actor: "ops"}},
				Command{At: 2 * int64(time.Second), Payload: Failover{To: Backup, Group: "lms", Force: true, Actor: "alice", AckBlock: true}})
			names, views := m.GroupViews()
			if !reflect.DeepEqual(names, m.Groups()) || len(views) != len(names) || names[0] != tc.first {
				t.Fatalf("got names %v (%d views), want %v, %s first", names, len(views), m.Groups(), tc.first)
			}
			for i, name := range names {
				want, ok := m.GroupView(name)
				if !ok {
					t.Fatalf("GroupView(%s): no such group", name)
				}
				if len(want.Groups) != len(names) {
					t.Fatalf("GroupView(%s) has %d groups in its overview, want %d", name, len(want.Groups), len(names))
				}
				want.Groups = nil
				if !reflect.DeepEqual(views[i], want) {
					t.Errorf("group %s: GroupViews differs from GroupView less its overview:\n got %+v\nwant %+v", name, views[i], want)
				}
			}
		})
	}
}

// PolicyHash and LastIndex are View's, read without building the view,
// before a policy and after commands.
func TestPolicyHashAndLastIndexAreViewsWithoutTheRest(t *testing.T) {
	m := New()
	check := func(when string) {
		t.Helper()
		v := m.View()
		if m.PolicyHash() != v.PolicyHash || m.LastIndex() != v.Index {
			t.Errorf("%s: got hash %q, index %d; want View's %q, %d", when, m.PolicyHash(), m.LastIndex(), v.PolicyHash, v.Index)
		}
	}
	check("before a policy")
	mustStep(t, m, 3, Command{At: 1, Payload: SetPolicy{Policy: twoGroupPolicy(), Actor: "ops"}})
	mustStep(t, m, 7, Command{At: 2, Payload: Tick{}})
	if m.PolicyHash() == "" || m.LastIndex() != 7 {
		t.Fatalf("after a policy at 3 and a tick at 7: got hash %q, index %d", m.PolicyHash(), m.LastIndex())
	}
	check("after a policy and a tick")
}
