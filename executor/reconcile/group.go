package reconcile

import "github.com/drwatch/drwatch/failover"

// GroupDesirer is what GroupState reads; *failover.Machine has it.
type GroupDesirer interface {
	// GroupDesired returns group's desired state, and false when the
	// replicated policy has no such group; safe for concurrent use.
	GroupDesired(group string) (failover.Desired, bool)
}

// GroupState is failover group's desired state, as a State for the
// reconciler that drives it (Config.Group). A group the replicated policy
// does not have (yet: the leader's file may be newer than the log) has no
// decision, generation 0, so its DNS is observed and never written.
func GroupState(m GroupDesirer, group string) State { return groupState{m: m, group: group} }

type groupState struct {
	m     GroupDesirer
	group string
}

func (g groupState) Desired() failover.Desired {
	d, ok := g.m.GroupDesired(g.group)
	if !ok {
		return failover.Desired{}
	}
	return d
}
