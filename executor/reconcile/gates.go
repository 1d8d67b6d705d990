package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/drwatch/drwatch/failover"
)

// Decision describes the decision a DNS write carries out, for gates and hooks.
type Decision struct {
	Gen       uint64
	From, To  failover.Site
	Kind      string // history kind: auto_failover, manual_failover, ...
	Actor     string
	Reason    string
	Forced    bool
	Automatic bool // made by drwatch itself (auto_failover, auto_failback)
}

// Gate runs before DNS is written for a decision: the backup warm-up wait,
// the pre-failover hooks. It is not run when DNS already holds the decision
// (a new leader finishing a flip never waits again).
type Gate interface {
	// Name names the gate in the history.
	Name() string
	// Before returns a note for the history. An error blocks the write of an
	// automatic decision (retried with backoff); a manual or forced one goes
	// ahead and the error is recorded. It may block up to its own timeout.
	Before(ctx context.Context, d Decision) (note string, err error)
}

// ErrBlocked means a gate held back an automatic decision's DNS write.
var ErrBlocked = errors.New("dns write blocked by a gate")

// decision finds the history entry behind the desired state.
func (r *Reconciler) decision(d failover.Desired) Decision {
	out := Decision{Gen: d.Gen, To: d.Active}
	h, ok := r.cfg.State.(historian)
	if !ok {
		return out
	}
	for _, e := range h.History() {
		if e.Gen == d.Gen && e.Index == d.Gen {
			out.From, out.Kind, out.Actor, out.Reason, out.Forced = e.From, e.Kind, e.Actor, e.Reason, e.Forced
			out.Automatic = e.Kind == failover.KindAutoFailover || e.Kind == failover.KindAutoFailback
		}
	}
	return out
}

// runGates runs every gate before a write. It returns the notes to record,
// or ErrBlocked for an automatic decision a gate refused.
func (r *Reconciler) runGates(ctx context.Context, dec Decision) ([]string, error) {
	if dec.From == dec.To {
		// New records for the same site (a policy change): nothing fails over.
		return nil, nil
	}
	var notes []string
	for _, g := range r.cfg.Gates {
		note, err := g.Before(ctx, dec)
		switch {
		case err != nil && dec.Automatic:
			detail := fmt.Sprintf("blocked by %s: %v", g.Name(), err)
			r.noteBlocked(ctx, dec.Gen, detail)
			return nil, fmt.Errorf("%w: %s", ErrBlocked, detail)
		case err != nil:
			notes = append(notes, fmt.Sprintf("%s failed, and this %s decision goes ahead: %v", g.Name(), dec.Kind, err))
		case note != "":
			notes = append(notes, note)
		}
	}
	return notes, nil
}

// noteBlocked records a block in the history once per distinct reason, so a
// retried block does not flood the log.
func (r *Reconciler) noteBlocked(ctx context.Context, gen uint64, detail string) {
	r.mu.Lock()
	if r.blocked == nil {
		r.blocked = map[uint64]string{}
	}
	same := r.blocked[gen] == detail
	r.blocked[gen] = detail
	r.mu.Unlock()
	if same {
		return
	}
	r.log.Warn("automatic flip held back", "gen", gen, "reason", detail)
	if err := r.propose(ctx, failover.ActionResult{Gen: gen, Outcome: failover.OutcomeFailed, Actor: r.cfg.Node, Detail: detail}); err != nil {
		r.log.Warn("could not record the block", "gen", gen, "err", err)
	}
}

func joinNotes(notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	return "; " + strings.Join(notes, "; ")
}
