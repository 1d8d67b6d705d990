package failover

import "fmt"

// Membership operations.
const (
	MemberAdd    = "add"
	MemberRemove = "remove"
)

// Membership records a change of the Raft voters that the cluster has
// made. Raft's own configuration entries carry neither who nor why, so the
// node proposes this right after the change; it changes nothing but the
// history. Older versions cannot decode it (see docs/operations.md).
type Membership struct {
	Op     string `json:"op"` // MemberAdd or MemberRemove
	ID     string `json:"id"`
	Addr   string `json:"addr,omitempty"` // with MemberAdd: the Raft address
	Reason string `json:"reason"`
	Actor  string `json:"actor,omitempty"`
}

// CommandType implements Payload.
func (Membership) CommandType() CommandType { return CmdMembership }

func (m Membership) text() (reason, actor string) { return m.Reason, m.Actor }

func (m Membership) apply(s *state, a applyArgs) error {
	return s.membership(a.index, a.now, &m, a.res)
}

func (s *state) membership(index uint64, now int64, c *Membership, res *Result) error {
	e := Entry{Index: index, At: now, Actor: c.Actor, Reason: c.Reason, Detail: c.ID}
	switch {
	case c.ID == "":
		return fmt.Errorf("membership: id is required: %w", ErrBadCommand)
	case c.Reason == "":
		return fmt.Errorf("membership %s %s: reason is required: %w", c.Op, c.ID, ErrBadCommand)
	case c.Op == MemberAdd && c.Addr == "":
		return fmt.Errorf("membership add %s: addr is required: %w", c.ID, ErrBadCommand)
	case c.Op == MemberAdd:
		e.Kind, e.Detail = KindMemberAdd, c.ID+" at "+c.Addr
	case c.Op == MemberRemove:
		e.Kind = KindMemberRemove
	default:
		return fmt.Errorf("membership: op %q must be %s or %s: %w", c.Op, MemberAdd, MemberRemove, ErrBadCommand)
	}
	s.Now = now
	s.appendHistory(e)
	res.Kind = e.Kind
	res.Message = "member " + c.Op + " " + e.Detail + " recorded"
	return nil
}
