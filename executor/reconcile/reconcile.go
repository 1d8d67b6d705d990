package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/failover"
)

// State is the local replica's view of what DNS should be.
type State interface {
	// Desired returns the current desired state; safe for concurrent use.
	Desired() failover.Desired
}

// Verifier checks the answer of every authoritative server.
type Verifier interface {
	// Verify polls every authoritative server until each serves desired or
	// the verifier's timeout passes.
	Verify(ctx context.Context, desired []dnsprovider.RRset) (*dnsprovider.Verification, error)
}

// TogetherVerifier is a Verifier that can also verify the decisions of
// several groups at once (dnsprovider.Verifier.VerifyEach): the members of
// a batch whose write landed are verified together when their verifiers
// share a VerifyKey, each still getting its own Verification.
type TogetherVerifier interface {
	Verifier
	// VerifyEach verifies each of desired as Verify would, calling done
	// for each as soon as it is settled; an error (no server list) calls
	// done for none.
	VerifyEach(ctx context.Context, desired [][]dnsprovider.RRset, done func(i int, v *dnsprovider.Verification)) error
	// VerifyKey is equal for two verifiers that ask the same servers in
	// the same way.
	VerifyKey() string
}

// Config wires a Reconciler.
type Config struct {
	Node string // this node's ID, recorded as the actor of ActionResults
	// Group is the failover group the reconciler drives: its ActionResults
	// name it, and its logs. "" or failover.DefaultGroup is the default
	// group, whose ActionResults name none, as before groups existed. A
	// named group's State is GroupState, its DNS fenced on the group's own
	// record; it deals with no break-glass marker (dns set writes the
	// default group's records).
	Group    string
	State    State
	Cluster  failover.Leader      // proposes the ActionResults, confirms leadership before each write
	DNS      dnsprovider.Provider // if it also implements dnsprovider.CompareAndSwapper, writes are CAS
	Verifier Verifier             // nil: no propagation check beyond the provider's own read
	// Interval is the requeue period of a pass with nothing to do.
	Interval time.Duration
	// Backoff caps the exponential retry after an error (default 200ms to 10s).
	BackoffBase, BackoffMax time.Duration
	Logger                  *slog.Logger
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
	// Observe, if set, is told the outcome of each pass (metrics, status page).
	Observe func(Report)
	// Gates run, in order, before DNS is written for a decision.
	Gates []Gate
	// AfterVerified, if set, runs once a decision is verified, before that
	// is recorded (post-failover hooks); its note goes into the record.
	AfterVerified func(ctx context.Context, d Decision) (note string)
	// BreakGlassKey authenticates break-glass markers (HMAC-SHA256); nil
	// trusts none, so every marker is recorded as rejected.
	BreakGlassKey []byte
	// BreakGlassMaxAge is how old a marker may be; default
	// DefaultBreakGlassMaxAge.
	BreakGlassMaxAge time.Duration
	// MarkerRejectEvery is the least time between two recorded
	// rejections; default DefaultMarkerRejectEvery.
	MarkerRejectEvery time.Duration
}

// Report describes one pass, for metrics and the status page.
type Report struct {
	At       time.Time
	Gen      uint64
	Action   string // "none", "observe", "write", "verify", "skip"
	Match    bool   // DNS matched the desired records at the end of the pass
	Actual   []dnsprovider.RRset
	Fence    uint64
	Verified *dnsprovider.Verification
	Write    time.Duration // how long the write took, when one was made
	Err      error
}

// Result tells the loop when to run the next pass. Per the contract, a pass
// returns either a Result or an error, never both.
type Result struct {
	RequeueAfter time.Duration
}

// ErrStale means DNS carries a newer generation than this replica's desired
// state: a later decision was written, so this node must not write.
var ErrStale = errors.New("dns fence is newer than the desired generation")

// Reconciler drives DNS towards the desired state. Run it only while this
// node leads.
type Reconciler struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	last    Report
	blocked map[uint64]string // gen -> the block last recorded

	// Break-glass markers dealt with (by MarkerHash), and when a
	// rejection was last recorded; only the Run goroutine uses them.
	seenMarkers map[string]bool
	lastReject  time.Time

	// batch shares this reconciler's writes with others of its zone
	// (BatchWrites); nil writes alone.
	batch *batch

	// read is what this reconciler's last read found in DNS, nil after
	// any write of its own or a failed read; only Pass uses it (planRead).
	read *dnsRead

	// seen is the decision the latest pass started from (under mu), for
	// Wants.
	seen wakeKey

	// verifying, when set, brings the verification of this pass's write,
	// which its batch started with the other members' (batch.send); only
	// Pass uses it.
	verifying <-chan verified
	// batchWritten, when set, is when the UPDATE that made this pass's
	// write in its batch was answered (batch.send); only Pass uses it.
	batchWritten time.Time
}

// verified is a verification a batch made for a member, and when it
// started.
type verified struct {
	v     *dnsprovider.Verification
	start time.Time
	err   error
}

// wakeKey is what of a desired state a settled group's wake-up follows.
type wakeKey struct {
	gen  uint64
	done bool
}

// dnsRead is one read of a group's records and fence.
type dnsRead struct {
	ids    []dnsprovider.RRsetID
	actual []dnsprovider.RRset
	fence  uint64
}

// New checks cfg and returns a Reconciler.
func New(cfg Config) (*Reconciler, error) {
	switch {
	case cfg.State == nil || cfg.Cluster == nil || cfg.DNS == nil:
		return nil, errors.New("reconcile: State, Cluster and DNS are required")
	case cfg.Interval <= 0:
		return nil, errors.New("reconcile: Interval must be > 0")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Group == failover.DefaultGroup {
		cfg.Group = ""
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Group != "" {
		log = log.With("group", cfg.Group)
	}
	return &Reconciler{cfg: cfg, log: log}, nil
}

// Last returns the latest pass's report.
func (r *Reconciler) Last() Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// Wants reports whether a change to the replicated state (an applied
// command) should wake r's loop now rather than leave its next pass to
// the requeue. It does for the default group, always, as before groups:
// its pass also records break-glass markers and its gates read the
// history. A named group it wakes when its decision is not the one its
// latest pass started from (a new generation, or its verification), and
// on every change while a decision is unwritten or unverified, so a
// write held back by a gate or a retry meets each new command as it did.
// A settled group (its decision verified, or none) is left to its
// requeue: it reads its records and fence once an interval to report
// drift, not once per probe report, which with many groups was two
// signed queries per group for every applied command, and in a region
// outage kept the leader and the DNS server busy reading while the
// decision waited to be written.
func (r *Reconciler) Wants() bool {
	if r.cfg.Group == "" {
		return true
	}
	d := r.cfg.State.Desired()
	r.mu.Lock()
	seen := r.seen
	r.mu.Unlock()
	return seen != wakeKey{gen: d.Gen, done: d.Done} || (d.Gen != 0 && !d.Done)
}

// Run runs passes until ctx ends (leadership lost or shutdown). Errors are
// retried with capped exponential backoff; terminal errors (auth refused,
// bad config) are logged at error level and retried at the cap, since a
// human may fix the key without restarting drwatch.
func (r *Reconciler) Run(ctx context.Context, wake <-chan struct{}) {
	backoff := Backoff{Base: r.cfg.BackoffBase, Max: r.cfg.BackoffMax}
	for {
		res, err := r.Pass(ctx)
		var wait time.Duration
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			backoff.Reset()
			wait = res.RequeueAfter
		case dnsprovider.IsTerminal(err):
			r.log.Error("dns reconcile failed; a human must act", "err", err)
			wait = backoff.Cap()
		default:
			wait = backoff.Next()
			r.log.Warn("dns reconcile will retry", "err", err, "retry_in", wait)
		}
		if !Wait(ctx, wait, wake) {
			return
		}
	}
}

// Backoff is the capped exponential retry of the leader's loops: Base,
// doubling up to Max, until Reset. A zero Base is DefaultBackoffBase and a
// zero Max DefaultBackoffMax, so every loop that embeds one shares them.
type Backoff struct {
	Base, Max time.Duration
	cur       time.Duration
}

// The leader's loops' retry when their config leaves it zero.
const (
	DefaultBackoffBase = 200 * time.Millisecond
	DefaultBackoffMax  = 10 * time.Second
)

// Next returns the next wait after an error.
func (b *Backoff) Next() time.Duration {
	if b.cur == 0 {
		b.cur = cmp.Or(max(b.Base, 0), DefaultBackoffBase)
	} else {
		b.cur = min(2*b.cur, b.max())
	}
	return b.cur
}

// Cap jumps to the longest wait (a terminal error).
func (b *Backoff) Cap() time.Duration {
	b.cur = b.max()
	return b.cur
}

func (b *Backoff) max() time.Duration { return cmp.Or(max(b.Max, 0), DefaultBackoffMax) }

// Reset starts again from Base after a success.
func (b *Backoff) Reset() { b.cur = 0 }

// Wait blocks for d, or until wake fires; it returns false once ctx ends.
func Wait(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-wake:
	case <-t.C:
	}
	return true
}

// Pass runs one reconciliation. It is safe to repeat.
func (r *Reconciler) Pass(ctx context.Context) (Result, error) {
	rep := Report{At: r.cfg.Now()}
	r.verifying, r.batchWritten = nil, time.Time{}
	res, err := r.pass(ctx, &rep)
	rep.Err = err
	if r.batch != nil {
		r.batch.settle(r, rep.Gen)
	}
	r.mu.Lock()
	r.last = rep
	r.mu.Unlock()
	if r.cfg.Observe != nil {
		r.cfg.Observe(rep)
	}
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

func (r *Reconciler) pass(ctx context.Context, rep *Report) (Result, error) {
	// A write made without quorum comes first: it is what DNS holds, and the
	// log must say so before anything is written over it.
	if r.cfg.Group == "" {
		if _, err := r.recordBreakGlass(ctx); err != nil {
			return Result{}, err
		}
	}
	d := r.cfg.State.Desired()
	rep.Gen = d.Gen
	r.mu.Lock()
	r.seen = wakeKey{gen: d.Gen, done: d.Done}
	r.mu.Unlock()
	want := toProvider(d.Records, r.cfg.DNS.Zone())
	ids := make([]dnsprovider.RRsetID, len(want))
	for i, s := range want {
		ids[i] = s.ID()
	}
	cas, isCAS := r.cfg.DNS.(dnsprovider.CompareAndSwapper)
	seen, planned := r.planRead(d, ids, want, isCAS)
	if !planned {
		var err error
		if seen, err = r.readDNS(ctx, ids, cas, isCAS); err != nil {
			return Result{}, err
		}
	}
	actual, fence := seen.actual, seen.fence
	rep.Actual, rep.Fence = actual, fence
	rep.Match = sameRecords(actual, want)
	idle := Result{RequeueAfter: r.cfg.Interval}

	switch {
	case d.Gen == 0:
		// No decision yet: the operator's DNS is left as it is.
		rep.Action = "observe"
		return idle, nil
	case isCAS && fence > d.Gen:
		rep.Action = "skip"
		return Result{}, fmt.Errorf("%w: fence gen=%d, desired gen=%d", ErrStale, fence, d.Gen)
	case d.Done:
		// A verified decision: report drift, never silently revert it.
		rep.Action = "none"
		if !rep.Match {
			r.log.Warn("dns drifted from the verified decision", "gen", d.Gen, "actual", describe(actual))
		}
		return idle, nil
	}

	written := rep.Match && (!isCAS || fence == d.Gen)
	var writtenAt time.Time
	// recorded waits for the written record's proposal, when this pass
	// made one; every return after it waits, so no later pass can record
	// the flip verified before it is recorded written.
	recorded := func() error { return nil }
	dec := r.decision(d)
	if !written {
		notes, err := r.runGates(ctx, dec)
		if err != nil {
			rep.Action = "blocked"
			return Result{}, err
		}
		// A batch member's write is checked by the batch right before
		// its UPDATE, or by swap before a write of its own: a check here
		// too would make a region outage one leadership round trip per
		// group before the write.
		if r.batch == nil {
			if err := r.cfg.Cluster.VerifyLeader(ctx); err != nil {
				return Result{}, fmt.Errorf("verify leader before dns write: %w", err)
			}
		}
		start := r.cfg.Now()
		r.read = nil // from now on DNS may hold this write
		if isCAS {
			op := dnsprovider.SwapOp{Provider: cas, Expected: actual, Desired: want, FenceOld: fence, FenceNew: d.Gen}
			err = r.swap(ctx, op, planned)
			if errors.Is(err, errUnbatched) {
				// The batch was refused, and this member's plan came
				// from an earlier read: it writes on its own after a
				// fresh one, as every member of a refused batch does.
				err = r.swapAfterRead(ctx, op, ids, rep)
			}
		} else {
			_, err = r.cfg.DNS.SetRecords(ctx, want)
		}
		rep.Write = r.cfg.Now().Sub(start)
		rep.Action = "write"
		if err != nil {
			return Result{}, fmt.Errorf("write dns for gen %d: %w", d.Gen, err)
		}
		// A batch member's write is its batch's UPDATE: answered once for
		// every member, however long each then waits to be scheduled.
		writtenAt = cmp.Or(r.batchWritten, r.cfg.Now())
		rep.Match = true
		r.awaitBatchVerification(ctx)
		r.log.Info("dns records flipped", "gen", d.Gen, "site", d.Active, "records", describe(want), "took", rep.Write)
		// A group that writes alone commits the record while its servers
		// are verified, not before (a batch member's verification is
		// already in, see awaitBatchVerification): the pass waits for
		// the commit only before it records the verification.
		done := make(chan error, 1)
		go func() {
			done <- r.propose(ctx, failover.ActionResult{Gen: d.Gen, Outcome: failover.OutcomeWritten,
				Actor: r.cfg.Node, WrittenAt: writtenAt.UnixNano(), Detail: "written " + describe(want) + joinNotes(notes)})
		}()
		recorded = sync.OnceValue(func() error { return <-done })
		// An error after the write returns its own; this one the next
		// pass meets again.
		defer func() { _ = recorded() }()
	}

	rep.Action = "verify"
	detail := "provider read matches"
	var servers []failover.ServerVerification
	var verifiedAt time.Time
	if r.cfg.Verifier != nil {
		v, vstart, err := r.verify(ctx, withFence(want, cas, isCAS, d.Gen))
		rep.Verified = v
		if err != nil {
			return Result{}, fmt.Errorf("verify gen %d: %w", d.Gen, err)
		}
		if err := v.Err(); err != nil {
			return Result{}, fmt.Errorf("verify gen %d: %w", d.Gen, err)
		}
		detail = describeVerification(v)
		servers = serverTimes(v, vstart)
		// Verified is when the last server was seen serving the records
		// (failover.Timings), not when this pass got to stamp it: after a
		// region's one UPDATE, 50 members are handed their verifications
		// at once and then queue for the cores, and the hooks below may
		// take their time.
		verifiedAt = lastServerAt(servers)
	}
	if r.cfg.AfterVerified != nil {
		// Hooks act on the platform: only once the log holds the write,
		// so a node deposed since runs none.
		if err := recorded(); err != nil {
			return Result{}, err
		}
		if note := r.cfg.AfterVerified(ctx, dec); note != "" {
			detail += "; " + note
		}
	}
	if verifiedAt.IsZero() {
		verifiedAt = r.cfg.Now()
	}
	if err := recorded(); err != nil {
		return Result{}, err
	}
	if err := r.propose(ctx, failover.ActionResult{Gen: d.Gen, Outcome: failover.OutcomeVerified,
		Actor: r.cfg.Node, WrittenAt: unixOrZero(writtenAt), VerifiedAt: verifiedAt.UnixNano(), Detail: detail,
		Servers: servers}); err != nil {
		return Result{}, err
	}
	// The log holds the decision verified: the pass leaves it settled,
	// and Wants need not wake the loop for the verification.
	r.mu.Lock()
	r.seen = wakeKey{gen: d.Gen, done: true}
	r.mu.Unlock()
	r.log.Info("dns flip verified", "gen", d.Gen, "site", d.Active, "detail", detail)
	return idle, nil
}

// batchRecordGrace bounds how long a batch member holds back the record
// of its write (its log line and its "written" proposal) for its
// verification, which its batch started with the other members'.
const batchRecordGrace = 100 * time.Millisecond

// awaitBatchVerification waits, for a member of a batch that verifies it
// with the others (r.verifying), until its verification is in, or
// batchRecordGrace has passed: after a region's one UPDATE, 50 members'
// log lines and proposals, and their entries applied on every node, would
// otherwise take the cores the one verification of them all needs, and
// delay every member's. The verification, when in, stays r.verifying's
// for verify to take.
func (r *Reconciler) awaitBatchVerification(ctx context.Context) {
	if r.verifying == nil {
		return
	}
	t := time.NewTimer(batchRecordGrace)
	defer t.Stop()
	select {
	case res := <-r.verifying:
		ch := make(chan verified, 1)
		ch <- res
		r.verifying = ch
	case <-t.C:
	case <-ctx.Done():
	}
}

// verify checks every server for desired: by the verification the batch
// of this pass's write started for it, if it did, else on its own. It
// returns when the verification started, which its servers' propagation
// times count from.
func (r *Reconciler) verify(ctx context.Context, desired []dnsprovider.RRset) (*dnsprovider.Verification, time.Time, error) {
	ch := r.verifying
	r.verifying = nil
	if ch == nil {
		start := r.cfg.Now()
		v, err := r.cfg.Verifier.Verify(ctx, desired)
		return v, start, err
	}
	select {
	case res := <-ch:
		return res.v, res.start, res.err
	case <-ctx.Done():
		return nil, time.Time{}, ctx.Err()
	}
}

// swap makes the compare-and-swap of a decision: in one write with the
// other groups of its zone when it shares a batch (BatchWrites), else, or
// when the server refused the batch, on its own. When the batch was
// refused and op was planned from an earlier read (planned), it returns
// errUnbatched instead: op's expectations may be what the server refused.
// A member alone in its batch (one group's flip among many) writes op on
// its own even when planned: its prerequisites guard it as they guard a
// batch, and when the server refuses them it returns errUnbatched too, so
// the member reads again, as after a refused batch.
func (r *Reconciler) swap(ctx context.Context, op dnsprovider.SwapOp, planned bool) error {
	if r.batch == nil {
		return op.Provider.Swap(ctx, op.Expected, op.Desired, op.FenceOld, op.FenceNew)
	}
	err := r.batch.swap(ctx, r, op)
	// Done asking for this generation, whatever the answer: no batch
	// waits for this member again before its next pass.
	r.batch.settle(r, op.FenceNew)
	switch {
	case errors.Is(err, errAlone):
		err = r.swapAlone(ctx, op)
		if planned && errors.Is(err, dnsprovider.ErrConflict) {
			return errUnbatched
		}
		return err
	case errors.Is(err, errUnbatched) && !planned:
		return r.swapAlone(ctx, op)
	}
	return err
}

// swapAlone makes op's compare-and-swap in a write of its own. A batch
// may have waited: leadership is checked again right before this write,
// as before every write.
func (r *Reconciler) swapAlone(ctx context.Context, op dnsprovider.SwapOp) error {
	if err := r.cfg.Cluster.VerifyLeader(ctx); err != nil {
		return fmt.Errorf("verify leader before dns write: %w", err)
	}
	return op.Provider.Swap(ctx, op.Expected, op.Desired, op.FenceOld, op.FenceNew)
}

// swapAfterRead is the write on its own of a batch member whose refused
// op was planned from an earlier read: it reads the records and fence
// again and swaps from what it finds, as a pass that had read them right
// before would. A newer fence is ErrStale; nothing is written then.
func (r *Reconciler) swapAfterRead(ctx context.Context, op dnsprovider.SwapOp, ids []dnsprovider.RRsetID, rep *Report) error {
	seen, err := r.readDNS(ctx, ids, op.Provider, true)
	r.read = nil
	if err != nil {
		return err
	}
	rep.Actual, rep.Fence = seen.actual, seen.fence
	switch {
	case seen.fence > op.FenceNew:
		return fmt.Errorf("%w: fence gen=%d, desired gen=%d", ErrStale, seen.fence, op.FenceNew)
	case seen.fence == op.FenceNew && sameRecords(seen.actual, op.Desired):
		return nil // already there (a write of this generation landed)
	}
	op.Expected, op.FenceOld = seen.actual, seen.fence
	return r.swapAlone(ctx, op)
}

// readDNS reads the records of ids and, for a compare-and-swap provider,
// the fence, and keeps what it read for the next pass's plan (planRead).
func (r *Reconciler) readDNS(ctx context.Context, ids []dnsprovider.RRsetID, cas dnsprovider.CompareAndSwapper, isCAS bool) (*dnsRead, error) {
	r.read = nil
	actual, err := r.cfg.DNS.GetRecords(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("read dns: %w", err)
	}
	seen := &dnsRead{ids: ids, actual: actual}
	if isCAS {
		if seen.fence, err = cas.GetFence(ctx); err != nil {
			return nil, fmt.Errorf("read fence: %w", err)
		}
	}
	r.read = seen
	return seen, nil
}

// planRead returns the last read, and true, when a batched write for d
// may be planned from it without reading DNS again: in a region outage
// that is two signed queries per group fewer between the decision and
// the one UPDATE. It may when
//   - the write is a batched compare-and-swap: every op of the UPDATE
//     carries value-dependent prerequisites on the records it expects and
//     on its fence (RFC 2136 §2.4.2), so if DNS changed since the read the
//     server refuses it, nothing is written, and the member reads again
//     and writes on its own (swapAfterRead) as after any refused batch;
//   - the read was of the same RRsets, and no write of this reconciler
//     came after it (readDNS and the write clear it);
//   - d is an unwritten decision newer than the fence read: if anyone
//     wrote it, or a newer one, since, the fence prerequisite refuses
//     the plan, and the read after it finds that;
//   - every RRset changes: the write then replaces each one whole, so
//     what the prerequisites cannot see (a TTL) never survives it. When
//     the plan would leave one as it is, the group reads again.
func (r *Reconciler) planRead(d failover.Desired, ids []dnsprovider.RRsetID, want []dnsprovider.RRset, isCAS bool) (*dnsRead, bool) {
	seen := r.read
	switch {
	case r.batch == nil || !isCAS || seen == nil, d.Gen == 0, d.Done, seen.fence >= d.Gen, !slices.Equal(seen.ids, ids):
		return nil, false
	}
	for i, s := range seen.actual {
		if s.Equal(want[i]) {
			return nil, false
		}
	}
	return seen, true
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func (r *Reconciler) propose(ctx context.Context, ar failover.ActionResult) error {
	ar.Group = r.cfg.Group
	if err := r.proposeCmd(ctx, failover.Command{Payload: ar}); err != nil {
		return fmt.Errorf("action result gen %d: %w", ar.Gen, err)
	}
	return nil
}

func (r *Reconciler) proposeCmd(ctx context.Context, c failover.Command) error {
	_, index, err := failover.Submit(ctx, r.cfg.Cluster, c)
	switch {
	case err == nil:
		return nil
	case index != 0:
		// The log took it at index; the core refused it.
		return fmt.Errorf("%s rejected: %w", c.Type(), err)
	case errors.Is(err, failover.ErrBadCommand):
		// Submit proposes nothing that does not encode.
		return fmt.Errorf("encode %s: %w", c.Type(), err)
	}
	return fmt.Errorf("propose %s: %w", c.Type(), err)
}

// withFence adds the fence TXT to what every server must serve, so a server
// still holding the old fence is not taken as verified.
func withFence(want []dnsprovider.RRset, cas dnsprovider.CompareAndSwapper, isCAS bool, gen uint64) []dnsprovider.RRset {
	if !isCAS {
		return want
	}
	out := slices.Clone(want)
	return append(out, dnsprovider.RRset{Name: cas.FenceName(), Type: "TXT", TTL: dnsprovider.FenceTTL, Values: []string{dnsprovider.FenceText(gen)}})
}

// ToProvider converts the decision core's RRsets (absolute names) into the
// provider's (names relative to zone).
func toProvider(in []failover.RRset, zone string) []dnsprovider.RRset {
	out := make([]dnsprovider.RRset, len(in))
	for i, s := range in {
		out[i] = dnsprovider.RRset{
			Name:   dnsprovider.RelativeName(s.Name, zone),
			Type:   s.Type,
			TTL:    time.Duration(s.TTL) * time.Second,
			Values: slices.Clone(s.Values),
		}
	}
	return out
}

// ToProvider is toProvider for other packages (the CLI's dry run, dns check).
func ToProvider(in []failover.RRset, zone string) []dnsprovider.RRset { return toProvider(in, zone) }

// FromProvider is ToProvider's inverse: absolute names and TTLs in whole
// seconds, the shape the API shows beside the decision core's records.
func FromProvider(in []dnsprovider.RRset, zone string) []failover.RRset {
	if in == nil {
		return nil
	}
	out := make([]failover.RRset, len(in))
	for i, s := range in {
		out[i] = failover.RRset{
			Name:   dnsprovider.AbsoluteName(s.Name, zone),
			Type:   s.Type,
			TTL:    int(s.TTL / time.Second),
			Values: slices.Clone(s.Values),
		}
	}
	return out
}

// sameRecords reports whether DNS holds want, TTL included (RRset.Equal):
// a TTL that differs is drift to report and, for an unfinished decision,
// to write.
func sameRecords(actual, want []dnsprovider.RRset) bool {
	return slices.EqualFunc(actual, want, dnsprovider.RRset.Equal)
}

func describe(sets []dnsprovider.RRset) string {
	parts := make([]string, len(sets))
	for i, s := range sets {
		parts[i] = s.String()
	}
	return strings.Join(parts, ", ")
}

// ServerTimes is serverTimes for the drill executor, which verifies its
// canary as the reconciler verifies a decision.
func ServerTimes(v *dnsprovider.Verification, start time.Time) []failover.ServerVerification {
	return serverTimes(v, start)
}

// DescribeVerification is describeVerification for the drill executor.
func DescribeVerification(v *dnsprovider.Verification) string { return describeVerification(v) }

// serverTimes is when each server was first seen serving the records, on
// the reconciler's clock: the verification's start plus its propagation time.
func serverTimes(v *dnsprovider.Verification, start time.Time) []failover.ServerVerification {
	out := make([]failover.ServerVerification, 0, len(v.Servers))
	for _, s := range v.Servers {
		out = append(out, failover.ServerVerification{Server: s.Server, VerifiedAt: start.Add(s.After).UnixNano()})
	}
	return out
}

// lastServerAt is when the last of servers was first seen serving the
// records; zero when there are none.
func lastServerAt(servers []failover.ServerVerification) time.Time {
	var last int64
	for _, s := range servers {
		last = max(last, s.VerifiedAt)
	}
	if last == 0 {
		return time.Time{}
	}
	return time.Unix(0, last)
}

func describeVerification(v *dnsprovider.Verification) string {
	parts := make([]string, 0, len(v.Servers))
	for _, s := range v.Servers {
		parts = append(parts, fmt.Sprintf("%s after %s", s.Server, s.After.Round(time.Millisecond)))
	}
	return "verified at " + strings.Join(parts, ", ")
}
