package failover

import "testing"

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
