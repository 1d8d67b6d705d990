package failover

import (
	"context"
	"errors"
	"testing"
	"time"
)

// machineProposer applies each proposal to a Machine, as a one-node log.
type machineProposer struct {
	m     *Machine
	index uint64
	err   error
}

func (p *machineProposer) Propose(_ context.Context, cmd []byte) ([]byte, uint64, error) {
	if p.err != nil {
		return nil, 0, p.err
	}
	p.index++
	stamped, err := Stamp(cmd, time.Unix(1_700_000_000, 0).UnixNano())
	if err != nil {
		return nil, 0, err
	}
	return p.m.Apply(p.index, stamped), p.index, nil
}

func TestSubmitReturnsTheCoresAnswerAndIndex(t *testing.T) {
	p := &machineProposer{m: New()}
	_, _, err := Submit(context.Background(), p, Command{Payload: Observe{Node: "a", Seq: 1}})
	if !errors.Is(err, ErrNoPolicy) {
		t.Fatalf("report before any policy: err = %v, want ErrNoPolicy as the core answered it", err)
	}
	pol := testPolicy()
	if _, idx, err := Submit(context.Background(), p, Command{Payload: SetPolicy{Policy: pol, Actor: "node:a"}}); err != nil || idx != 2 {
		t.Fatalf("set policy: index %d, err %v; want index 2, no error", idx, err)
	}
	if p.m.View().PolicyHash != pol.Hash() {
		t.Errorf("policy hash after Submit = %q, want %q", p.m.View().PolicyHash, pol.Hash())
	}
	_, _, err = Submit(context.Background(), p, Command{Payload: Failover{To: Backup, Actor: "alice", Reason: "backup not seen UP"}})
	var refused *RefusedError
	if !errors.As(err, &refused) {
		t.Errorf("failover to an unjudged backup: err = %v, want a *RefusedError", err)
	}
}

func TestSubmitNeverProposesACommandThatDoesNotEncode(t *testing.T) {
	p := &machineProposer{m: New()}
	_, _, err := Submit(context.Background(), p, Command{Payload: Pause{Actor: "al\x00ice"}})
	if !errors.Is(err, ErrBadCommand) {
		t.Errorf("actor with a NUL: err = %v, want ErrBadCommand", err)
	}
	if p.index != 0 {
		t.Errorf("%d proposals made, want none", p.index)
	}
	p.err = errors.New("no leader")
	if _, _, err := Submit(context.Background(), p, Command{Payload: Tick{}}); err == nil || err.Error() != "no leader" {
		t.Errorf("propose failure: err = %v, want the proposer's error as it is", err)
	}
}
