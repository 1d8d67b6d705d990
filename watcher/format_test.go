package watcher

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	"github.com/drwatch/drwatch/failover"
)

// formatCluster is a fakeCluster whose servers run the given formats.
type formatCluster struct {
	*fakeCluster
	formats []int
}

func (f formatCluster) ServerInfos() []cluster.ServerInfo {
	var out []cluster.ServerInfo
	for i, fm := range f.formats {
		out = append(out, cluster.ServerInfo{ID: string(rune('a' + i)), Format: fm})
	}
	return out
}

// TestLeaderRaisesTheFormatOnlyWhenEveryServerReadsIt: the leader records
// a newer log format only once every server has said it reads it; a
// server from before formats, or one that could not be asked, holds it
// back, and a format already recorded is not proposed again.
func TestLeaderRaisesTheFormatOnlyWhenEveryServerReadsIt(t *testing.T) {
	w, fc := newTestWatcher(t, 0)
	ctx := context.Background()
	setFormats := func() int {
		n := 0
		for _, c := range fc.commands() {
			if _, ok := c.Payload.(failover.SetFormat); ok {
				n++
			}
		}
		return n
	}
	for _, held := range [][]int{
		{failover.Format, failover.Format, failover.LegacyFormat},
		{failover.Format, cluster.UnknownFormat, failover.Format},
	} {
		w.cfg.Cluster = formatCluster{fc, held}
		w.raiseFormat(ctx)
		if n, f := setFormats(), w.machine.Format(); n != 0 || f != failover.LegacyFormat {
			t.Errorf("servers at formats %v: %d set_format proposed, cluster at format %d; want none, %d", held, n, f, failover.LegacyFormat)
		}
	}
	w.cfg.Cluster = formatCluster{fc, []int{failover.Format, failover.Format, failover.Format}}
	w.raiseFormat(ctx)
	w.raiseFormat(ctx)
	if n, f := setFormats(), w.machine.Format(); n != 1 || f != failover.Format {
		t.Errorf("every server at format %d: %d set_format proposed, cluster at format %d; want 1, %d", failover.Format, n, f, failover.Format)
	}
}

// WaitApplied: the in-memory log applies as it commits.
func (formatCluster) WaitApplied(context.Context, uint64) error { return nil }

func (f formatCluster) Stats() cluster.Stats {
	var st cluster.Stats
	for _, i := range f.ServerInfos() {
		st.Peers = append(st.Peers, cluster.Member{ID: i.ID, Format: i.Format, Release: "r"})
	}
	return st
}

// TestOperatorCommandNeedingANewerFormatIsRefusedNamingTheLaggards: a
// command that needs a newer log format than the cluster writes is
// refused where it is submitted, by the rule log_format (exit 3), naming
// the servers that do not read it yet; a command of the cluster's format
// is proposed as before.
func TestOperatorCommandNeedingANewerFormatIsRefusedNamingTheLaggards(t *testing.T) {
	w, fc := newTestWatcher(t, 0)
	w.cfg.Cluster = formatCluster{fc, []int{failover.Format, failover.LegacyFormat, cluster.UnknownFormat}}
	ctx := context.Background()
	_, _, err := w.Submit(ctx, failover.Command{Payload: failover.SetFormat{Format: failover.Format}})
	var re *failover.RefusedError
	if !errors.As(err, &re) || re.Rule != failover.RuleLogFormat ||
		!strings.Contains(re.Message, "b format 0") || !strings.Contains(re.Message, "c not reachable") || strings.Contains(re.Message, "a format") {
		t.Fatalf("submit set_format at format 0: %v, want refused by %s naming b and c only", err, failover.RuleLogFormat)
	}
	if n := len(fc.commands()); n != 0 {
		t.Errorf("refused command: %d proposed, want none", n)
	}
	if _, _, err := w.Submit(ctx, failover.Command{Payload: failover.Tick{}}); err != nil {
		t.Errorf("submit tick: %v, want it committed", err)
	}
}

// TestReplicaHaltsOnAnEntryItCannotRead: an entry this binary cannot
// decode stops the replica, which then applies nothing more, rather than
// skipping it; an entry the core merely refuses is applied as before.
func TestReplicaHaltsOnAnEntryItCannotRead(t *testing.T) {
	m := failover.New()
	fsm := NewFSM(m, nil)
	enc := func(c failover.Command) []byte {
		b, err := failover.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	fsm.Apply(1, enc(failover.Command{At: 1, Payload: failover.Tick{}}))
	fsm.Apply(2, enc(failover.Command{At: 2, Payload: failover.Failover{To: failover.Backup}})) // refused: no policy
	if err := fsm.Halted(); err != nil {
		t.Fatalf("after a refused command: halted (%v), want applying", err)
	}
	if got := m.View().Index; got != 1 {
		t.Fatalf("applied through %d, want 1", got)
	}

	resp := fsm.Apply(3, []byte(`{"v":1,"type":"group_observe","group_observe":{"at":3}}`))
	if _, err := failover.DecodeResponse(resp); err == nil {
		t.Errorf("an unreadable entry answered as applied")
	}
	err := fsm.Halted()
	if err == nil || !strings.Contains(err.Error(), "log entry 3") {
		t.Fatalf("after an unreadable entry: halted = %v, want an error naming entry 3", err)
	}
	select {
	case <-fsm.HaltCh():
	default:
		t.Errorf("HaltCh not closed")
	}
	fsm.Apply(4, enc(failover.Command{At: 4, Payload: failover.Tick{}}))
	if got := m.View().Index; got != 1 {
		t.Errorf("a halted replica applied through %d, want still 1", got)
	}
	if err := fsm.Restore([]byte(`{}`)); err == nil {
		t.Errorf("a halted replica restored a snapshot")
	}
}

// TestMixedReleasesWarnUntilTheyAgree: the status warns while the servers
// differ in release or format, naming the format the leader writes, and
// says nothing once they agree.
func TestMixedReleasesWarnUntilTheyAgree(t *testing.T) {
	mixed := []cluster.Member{{ID: "a", Format: 1, Release: "new"}, {ID: "b", Format: 0}, {ID: "c", Format: 1, Release: "new"}}
	got := MixedReleases(mixed, 0)
	for _, want := range []string{"a format 1 (new)", "b format 0 (a release from before log formats)", "writes log format 0 until every server reads 1"} {
		if !strings.Contains(got, want) {
			t.Errorf("MixedReleases = %q, want it to say %q", got, want)
		}
	}
	mixed[1] = cluster.Member{ID: "b", Format: 1, Release: "new"}
	if got := MixedReleases(mixed, 1); got != "" {
		t.Errorf("one release everywhere: MixedReleases = %q, want none", got)
	}
}

// TestReplicaRefusesASnapshotOfANewerFormat: a downgrade below the log
// format in use is refused at start: restoring a snapshot that records a
// newer format than this binary's fails and halts the replica, while a
// snapshot of its own format restores.
func TestReplicaRefusesASnapshotOfANewerFormat(t *testing.T) {
	snap, err := failover.New().Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	fsm := NewFSM(failover.New(), nil)
	if err := fsm.Restore(snap); err != nil || fsm.Halted() != nil {
		t.Fatalf("restore of a format %d snapshot: %v (halted %v), want restored", failover.LegacyFormat, err, fsm.Halted())
	}
	newer := strings.Replace(string(snap), `"state":{`, `"state":{"format":`+strconv.Itoa(failover.Format+1)+`,`, 1)
	err = fsm.Restore([]byte(newer))
	if !errors.Is(err, failover.ErrUnreadable) || fsm.Halted() == nil {
		t.Errorf("restore of a format %d snapshot: %v (halted %v), want ErrUnreadable and halted", failover.Format+1, err, fsm.Halted())
	}
}

// TestFormatMetrics: the binary's and the cluster's log formats are
// metrics, and so is a replica that halted.
func TestFormatMetrics(t *testing.T) {
	w, fc := newTestWatcher(t, 0)
	read := func() (binary, clusterFormat, halted float64) {
		mfs, err := w.cfg.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				switch mf.GetName() {
				case "drwatch_log_format":
					if m.GetLabel()[0].GetValue() == "binary" {
						binary = m.GetGauge().GetValue()
					} else {
						clusterFormat = m.GetGauge().GetValue()
					}
				case "drwatch_replica_halted":
					halted = m.GetGauge().GetValue()
				}
			}
		}
		return
	}
	if b, c, h := read(); b != failover.Format || c != failover.LegacyFormat || h != 0 {
		t.Errorf("at first: binary %v cluster %v halted %v, want %d %d 0", b, c, h, failover.Format, failover.LegacyFormat)
	}
	fc.log.Step(t, failover.Command{Payload: failover.SetFormat{Format: failover.Format}})
	w.cfg.FSM.Apply(99, []byte(`{"v":1,"type":"group_observe","group_observe":{"at":3}}`))
	if b, c, h := read(); b != failover.Format || c != failover.Format || h != 1 {
		t.Errorf("after set_format and an unreadable entry: binary %v cluster %v halted %v, want %d %d 1", b, c, h, failover.Format, failover.Format)
	}
}

// TestLeaderHoldsAPolicyWithGroupsUntilEveryServerReadsIt: a leader whose
// file adds failover groups, in a trio where a server still reads only
// format 2, keeps the clock going with a Tick each interval and proposes
// no policy its stamp would refuse; its status says why the file's policy
// is not the cluster's. Once every server reads format 3 the leader
// raises the format and then proposes its policy, and the groups are on.
// A file's policy without groups is proposed at once, whatever the format.
func TestLeaderHoldsAPolicyWithGroupsUntilEveryServerReadsIt(t *testing.T) {
	l := remediatetest.NewLog()
	fc := &fakeCluster{log: l}
	withGroups := testPolicy()
	withGroups.Interval = time.Second
	withGroups.Groups = twoGroups().Groups
	w, err := New(Config{Node: "a", Policy: withGroups, Interval: time.Second, FSM: NewFSM(l.M, nil),
		Cluster: formatCluster{fc, []int{failover.Format, failover.Format, 2}}})
	if err != nil {
		t.Fatal(err)
	}
	without := testPolicy()
	without.Interval = time.Second
	l.Step(t, failover.Command{Payload: failover.SetPolicy{Policy: without}})
	l.Step(t, failover.Command{Payload: failover.SetFormat{Format: 2}})
	ctx := context.Background()
	types := func(cs []failover.Command) []failover.CommandType {
		var out []failover.CommandType
		for _, c := range cs {
			out = append(out, c.Type())
		}
		return out
	}

	held := false
	for i := range 2 {
		held = w.tick(ctx, held)
		if got := types(fc.commands()); !held || !slices.Equal(got, []failover.CommandType{failover.CmdTick}) {
			t.Fatalf("interval %d at format 2: held %v, proposed %v; want held, one tick", i+1, held, got)
		}
		fc.mu.Lock()
		fc.proposed = nil
		fc.mu.Unlock()
	}
	v := w.machine.View()
	if len(v.Groups) != 0 {
		t.Fatalf("at format 2 the replicated policy has groups %v", v.Groups)
	}
	warned := false
	for _, wn := range w.Warnings(v, cluster.Stats{}, 0) {
		warned = warned || strings.Contains(wn, "needs log format 3 (the cluster writes 2)")
	}
	if !warned {
		t.Errorf("at format 2: warnings %q, want the file's policy's log format named", w.Warnings(v, cluster.Stats{}, 0))
	}

	w.cfg.Cluster = formatCluster{fc, []int{failover.Format, failover.Format, failover.Format}}
	held = w.tick(ctx, held) // raises the format
	held = w.tick(ctx, held) // proposes the policy
	got := types(fc.commands())
	want := []failover.CommandType{failover.CmdTick, failover.CmdSetFormat, failover.CmdSetPolicy}
	if held || !slices.Equal(got, want) {
		t.Fatalf("every server at format 3: held %v, proposed %v; want not held, %v", held, got, want)
	}
	if v := w.machine.View(); v.PolicyHash != w.hash || len(v.Groups) != 3 {
		t.Errorf("every server at format 3: replicated policy %s with groups %v, want the file's %s with default, alpha and beta",
			failover.ShortHash(v.PolicyHash), v.Groups, failover.ShortHash(w.hash))
	}

	// Without groups, a file's policy that differs is proposed at once.
	w2, fc2 := newTestWatcher(t, time.Second)
	w2.cfg.Cluster = formatCluster{fc2, []int{failover.Format, failover.Format, failover.LegacyFormat}}
	other := testPolicy()
	other.Interval, other.Fall = time.Second, 5
	fc2.log.Step(t, failover.Command{Payload: failover.SetPolicy{Policy: other}})
	if held := w2.tick(ctx, false); held || !slices.Equal(types(fc2.commands()), []failover.CommandType{failover.CmdSetPolicy}) {
		t.Errorf("a file's policy without groups at format 0: held %v, proposed %v; want the policy proposed", held, types(fc2.commands()))
	}
	if v := w2.machine.View(); v.PolicyHash != w2.hash {
		t.Errorf("a file's policy without groups at format 0: replicated %s, want the file's %s", failover.ShortHash(v.PolicyHash), failover.ShortHash(w2.hash))
	}
}
