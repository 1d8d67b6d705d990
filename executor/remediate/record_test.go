package remediate

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
)

var errNoLeader = errors.New("no leader")

// leaderless is a cluster with no leader to propose to.
type leaderless struct{}

func (leaderless) Propose(context.Context, []byte) ([]byte, uint64, error) {
	return nil, 0, errNoLeader
}
func (leaderless) VerifyLeader(context.Context) error { return errNoLeader }

// A record that cannot be committed stops the pass, and the error says
// whether it did not encode or which record the log did not take.
func TestRecordErrorsStopThePassAndNameTheRecord(t *testing.T) {
	c := newFakeCluster(time.Now)
	r := &Runner{cfg: RunnerConfig{Cluster: c}}
	counted := 0
	count := func(string) { counted++ }
	check := func(name string, err error, want string, is error) {
		t.Helper()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if prefix, cut := strings.CutSuffix(want, "..."); cut && !strings.HasPrefix(got, prefix) || !cut && got != want {
			t.Errorf("%s: got %q, want %q", name, got, want)
		}
		if !errors.Is(err, is) || !errors.As(err, new(errStop)) {
			t.Errorf("%s: got %#v, want an errStop matching %v", name, err, is)
		}
	}
	rec := failover.Remediation{Name: "n", Gen: 5, Target: "node/w3", Verb: "taint", Result: failover.RemediationPlanned, Key: "n/w3"}
	huge := rec
	huge.Detail = strings.Repeat("x", failover.MaxCommandSize)
	check("encode", recordErr(r.record(context.Background(), huge, count)), "encode record: encode command: ...", failover.ErrBadCommand)
	if c.proposed != 0 {
		t.Errorf("got %d proposals of a record that does not encode, want none", c.proposed)
	}
	check("rejected", recordErr(r.record(context.Background(), rec, count)),
		"record taint node/w3: remediation for gen 5 (latest 0): unknown generation", failover.ErrUnknownGen)
	r.cfg.Cluster = leaderless{}
	check("propose", recordErr(r.record(context.Background(), rec, count)), "record taint node/w3: no leader", errNoLeader)
	if counted != 0 {
		t.Errorf("got %d records counted, want none", counted)
	}
}

func recordErr(_ bool, err error) error { return err }
