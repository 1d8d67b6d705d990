package simdns

import (
	"cmp"
	"context"

	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/internal/dnsname"
	"github.com/miekg/dns"
)

// FaultKind is what an injected fault does to a call.
type FaultKind int

const (
	// FaultNone: calls behave normally.
	FaultNone FaultKind = iota
	// FaultTimeout: the call times out and applies nothing.
	FaultTimeout
	// FaultRefused: the call is answered REFUSED and applies nothing.
	FaultRefused
	// FaultServFail: the call is answered SERVFAIL and applies nothing.
	FaultServFail
	// FaultLostReply: the call applies, then its reply is lost (timeout).
	FaultLostReply
)

func (k FaultKind) String() string {
	switch k {
	case FaultNone:
		return "none"
	case FaultTimeout:
		return "timeout"
	case FaultRefused:
		return "refused"
	case FaultServFail:
		return "servfail"
	case FaultLostReply:
		return "lost-reply"
	}
	return fmt.Sprintf("fault(%d)", int(k))
}

// Stage says when a hook runs relative to a call's effect.
type Stage int

const (
	// BeforeApply: the call has not looked at the zone yet.
	BeforeApply Stage = iota
	// AfterApply: the call's effect (if any) is in the zone; its reply is
	// not yet with the caller.
	AfterApply
)

// Call describes one provider call, for the hook.
type Call struct {
	Seq   int       // 1-based, in the order calls reached the authority
	Op    string    // "get", "fence", "set", "swap", "batch" (SwapBatch)
	Fault FaultKind // the fault this call suffers
	Stage Stage
}

// Write is one applied write.
type Write struct {
	Seq         int    // the call that made it
	Op          string // "set", "swap" or "batch" (SwapBatch: every op's writes)
	FenceBefore uint64 // the authority's fence before (0: none or malformed)
	FenceAfter  uint64 // and after
	// Sets are the RRsets written, sorted by name and type; an RRset with
	// no Values was deleted.
	Sets []dnsprovider.RRset
}

// Authority is the in-memory zone. Its methods are safe for concurrent use.
type Authority struct {
	zone  string
	fence string

	mu      sync.Mutex
	rrsets  map[dnsprovider.RRsetID]dnsprovider.RRset
	serial  uint32
	seq     int
	cur     int // the call whose effect runs under the lock
	history []Write
	fault   FaultKind
	// writesOnly: the fault spares reads.
	writesOnly bool
	left       int // calls the fault still applies to; <0: until Clear
	hook       func(Call)
}

// New returns an empty authority for zone whose fence TXT (the one Fence,
// History and FenceWentBackwards watch) is fenceName ("" means
// dnsprovider.DefaultFenceName).
func New(zone, fenceName string) *Authority {
	zone = dns.CanonicalName(zone)
	if fenceName == "" {
		fenceName = dnsprovider.DefaultFenceName
	}
	return &Authority{zone: zone, fence: dnsprovider.RelativeName(dnsprovider.AbsoluteName(fenceName, zone), zone),
		rrsets: map[dnsprovider.RRsetID]dnsprovider.RRset{}, serial: 1}
}

// Zone returns the zone's canonical FQDN.
func (a *Authority) Zone() string { return a.zone }

// Inject makes the next n calls (n < 0: every call until Clear) suffer k.
// It replaces any fault still pending.
func (a *Authority) Inject(k FaultKind, n int) { a.inject(k, n, false) }

// InjectWrites is Inject for writes (SetRecords, Swap) only: reads pass and
// do not count.
func (a *Authority) InjectWrites(k FaultKind, n int) { a.inject(k, n, true) }

func (a *Authority) inject(k FaultKind, n int, writesOnly bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fault, a.left, a.writesOnly = k, n, writesOnly
	if n == 0 {
		a.fault = FaultNone
	}
}

// Clear removes any pending fault.
func (a *Authority) Clear() { a.Inject(FaultNone, 0) }

// SetHook sets the function called before and after every call takes
// effect (nil: none). It runs on the caller's goroutine without the
// authority's lock, so it may block (virtual time in a bubble) or call the
// authority.
func (a *Authority) SetHook(h func(Call)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.hook = h
}

// Records returns every RRset in the zone, sorted by name and type.
func (a *Authority) Records() []dnsprovider.RRset {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sortedLocked()
}

// Serial returns the SOA serial: it moves only when a write changed the zone.
func (a *Authority) Serial() uint32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.serial
}

// Fence returns the generation the authority's fence TXT holds (0: none).
func (a *Authority) Fence() (uint64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return fenceOf(a.rrsets[fenceID(a.fence)])
}

// History returns every applied write, oldest first.
func (a *Authority) History() []Write {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Write, len(a.history))
	for i, w := range a.history {
		w.Sets = cloneSets(w.Sets)
		out[i] = w
	}
	return out
}

// FenceWentBackwards returns the first applied write that lowered the
// authority's fence generation, if any. A fence removed (0) counts as going
// backwards.
func (a *Authority) FenceWentBackwards() (Write, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, w := range a.history {
		if w.FenceAfter < w.FenceBefore {
			w.Sets = cloneSets(w.Sets)
			return w, true
		}
	}
	return Write{}, false
}

// NamedFenceWentBackwards is FenceWentBackwards for the fence TXT
// fenceName ("" means the authority's), which clients made with that
// name write: several failover groups share one zone, each with a fence
// of its own. It replays every applied write (the zone starts empty), and
// the Write it returns has FenceBefore and FenceAfter of that fence.
func (a *Authority) NamedFenceWentBackwards(fenceName string) (Write, bool) {
	id := fenceID(a.Client(fenceName).fence)
	a.mu.Lock()
	defer a.mu.Unlock()
	var gen uint64
	for _, w := range a.history {
		i := slices.IndexFunc(w.Sets, func(s dnsprovider.RRset) bool { return s.ID() == id })
		if i < 0 {
			continue
		}
		after, _ := fenceOf(w.Sets[i]) // malformed counts as 0, as in Write
		if after < gen {
			w.Sets = cloneSets(w.Sets)
			w.FenceBefore, w.FenceAfter = gen, after
			return w, true
		}
		gen = after
	}
	return Write{}, false
}

// Client returns a provider on the zone whose fence TXT is fenceName (""
// means the authority's). Options: Unauthorised.
func (a *Authority) Client(fenceName string, opts ...Option) *Client {
	if fenceName == "" {
		fenceName = a.fence
	}
	c := &Client{a: a, fence: dnsprovider.RelativeName(dnsprovider.AbsoluteName(fenceName, a.zone), a.zone)}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Option configures a Client.
type Option func(*Client)

// Unauthorised makes every call of the client fail as BIND refuses a wrong
// TSIG key through the RFC 2136 client: a terminal *dnsprovider.AuthError.
func Unauthorised(c *Client) { c.unauthorised = true }

// Client is one writer's view of the authority: dnsprovider.Provider,
// dnsprovider.CompareAndSwapper and dnsprovider.BatchSwapper.
type Client struct {
	a            *Authority
	fence        string
	unauthorised bool
}

var (
	_ dnsprovider.Provider          = (*Client)(nil)
	_ dnsprovider.CompareAndSwapper = (*Client)(nil)
	_ dnsprovider.BatchSwapper      = (*Client)(nil)
)

// Zone implements dnsprovider.Provider.
func (c *Client) Zone() string { return c.a.zone }

// FenceName implements dnsprovider.CompareAndSwapper.
func (c *Client) FenceName() string { return c.fence }

// GetRecords implements dnsprovider.Provider.
func (c *Client) GetRecords(ctx context.Context, want []dnsprovider.RRsetID) ([]dnsprovider.RRset, error) {
	var out []dnsprovider.RRset
	err := c.do(ctx, "get", func(z *Authority) error {
		var err error
		out, err = z.readLocked(want)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("simdns read: %w", err)
	}
	return out, nil
}

// GetFence implements dnsprovider.CompareAndSwapper.
func (c *Client) GetFence(ctx context.Context) (uint64, error) {
	var gen uint64
	err := c.do(ctx, "fence", func(z *Authority) error {
		var err error
		gen, err = fenceOf(z.rrsets[fenceID(c.fence)])
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("simdns read fence: %w", err)
	}
	return gen, nil
}

// SetRecords implements dnsprovider.Provider: one atomic write without
// prerequisites of every RRset that differs (TTL included).
func (c *Client) SetRecords(ctx context.Context, sets []dnsprovider.RRset) ([]dnsprovider.RRset, error) {
	var changed []dnsprovider.RRset
	err := c.do(ctx, "set", func(z *Authority) error {
		norm := make([]dnsprovider.RRset, len(sets))
		for i, s := range sets {
			n, err := z.normalize(s)
			if err != nil {
				return err
			}
			norm[i] = n
		}
		changed = nil
		for _, s := range norm {
			if !s.Equal(z.rrsets[s.ID()]) {
				changed = append(changed, s)
			}
		}
		z.applyLocked("set", changed)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("simdns set: %w", err)
	}
	return changed, nil
}

// Swap implements dnsprovider.CompareAndSwapper with BIND's prerequisite
// semantics (see the package doc).
func (c *Client) Swap(ctx context.Context, expected, desired []dnsprovider.RRset, fenceOld, fenceNew uint64) error {
	if err := checkFences(fenceOld, fenceNew); err != nil {
		return fmt.Errorf("simdns swap: %w", err)
	}
	var conflict *dnsprovider.ConflictError
	err := c.do(ctx, "swap", func(z *Authority) error {
		conflict = nil
		prereqs, writes, err := c.planLocked(expected, desired, fenceNew)
		if err != nil {
			return err
		}
		if rc, ok := z.prereqsFailLocked(prereqs(fenceOld)); ok {
			conflict = &dnsprovider.ConflictError{Rcode: dns.RcodeToString[rc]}
			ids := make([]dnsprovider.RRsetID, len(expected))
			for i, s := range expected {
				ids[i] = s.ID()
			}
			conflict.Current, conflict.ReadErr = z.readLocked(ids)
			if conflict.ReadErr == nil {
				conflict.Fence, conflict.ReadErr = fenceOf(z.rrsets[fenceID(c.fence)])
			}
			if conflict.ReadErr != nil {
				conflict.Current = nil
			}
			return nil
		}
		z.applyLocked("swap", writes)
		return nil
	})
	if err != nil {
		return fmt.Errorf("simdns swap: %w", err)
	}
	if conflict != nil {
		return fmt.Errorf("simdns swap: %w", conflict)
	}
	return nil
}

// checkFences is the client's own check of a swap's generations, made
// before anything is sent, as the RFC 2136 client makes it.
func checkFences(fenceOld, fenceNew uint64) error {
	if fenceNew == 0 || fenceNew == fenceOld {
		return fmt.Errorf("%w: new fence gen=%d must be non-zero and differ from gen=%d", dnsprovider.ErrConfig, fenceNew, fenceOld)
	}
	return nil
}

// planLocked turns one swap into what the authority checks and writes:
// its prerequisites (every expected RRset, then c's fence holding
// fenceOld) and its writes (every desired RRset that differs from its
// expected state, then c's fence at fenceNew), as the RFC 2136 client
// puts one swap in an UPDATE.
func (c *Client) planLocked(expected, desired []dnsprovider.RRset, fenceNew uint64) (prereqs func(fenceOld uint64) []dnsprovider.RRset, writes []dnsprovider.RRset, err error) {
	z := c.a
	exp := map[dnsprovider.RRsetID]dnsprovider.RRset{}
	pre := make([]dnsprovider.RRset, 0, len(expected)+1)
	for _, s := range expected {
		n, err := z.normalize(s)
		if err != nil {
			return nil, nil, err
		}
		if n.ID() == fenceID(c.fence) {
			return nil, nil, fmt.Errorf("%w: the fence %s is not a managed RRset", dnsprovider.ErrConfig, n.ID())
		}
		exp[n.ID()] = n
		pre = append(pre, n)
	}
	for _, s := range desired {
		n, err := z.normalize(s)
		if err != nil {
			return nil, nil, err
		}
		e, ok := exp[n.ID()]
		if !ok {
			return nil, nil, fmt.Errorf("%w: desired %s has no expected state", dnsprovider.ErrConfig, n.ID())
		}
		if !n.Equal(e) {
			writes = append(writes, n)
		}
	}
	writes = append(writes, dnsprovider.RRset{Name: c.fence, Type: "TXT", TTL: dnsprovider.FenceTTL,
		Values: []string{dnsprovider.FenceText(fenceNew)}})
	prereqs = func(fenceOld uint64) []dnsprovider.RRset {
		fenceWas := dnsprovider.RRset{Name: c.fence, Type: "TXT"}
		if fenceOld != 0 {
			fenceWas.Values = []string{dnsprovider.FenceText(fenceOld)}
		}
		return append(pre, fenceWas)
	}
	return prereqs, writes, nil
}

// BatchKey implements dnsprovider.BatchSwapper. The RFC 2136 client's key
// is the server, zone and TSIG key a message goes to and is signed with;
// here the server is the authority (its identity: two authorities never
// share a message even for one zone), and a client's key is good
// (Client) or wrong (Unauthorised), so a wrongly keyed client never
// batches with a good one.
func (c *Client) BatchKey() string {
	key := "good"
	if c.unauthorised {
		key = "unauthorised"
	}
	return fmt.Sprintf("simdns %p %s %s", c.a, c.a.zone, key)
}

// SwapBatch implements dnsprovider.BatchSwapper as the RFC 2136 client
// makes it, one UPDATE carrying every op's prerequisites and updates: one
// call to the authority (one fault, one hook, one history entry, one
// serial bump), which checks every op's prerequisites, its fence
// included, before it applies any op's writes, and applies all of them or
// none. A failed prerequisite of any op fails them all with
// dnsprovider.ErrConflict and no re-read, as BIND's rcode comes back for
// the whole message. Every op's provider must be a *Client of this
// authority with this client's BatchKey, and no two ops may name one
// RRset or fence (dnsprovider.ErrConfig), checked before anything is
// sent.
func (c *Client) SwapBatch(ctx context.Context, ops []dnsprovider.SwapOp) error {
	clients := make([]*Client, len(ops))
	seen := map[dnsprovider.RRsetID]bool{}
	for i, op := range ops {
		q, ok := op.Provider.(*Client)
		if !ok || q.BatchKey() != c.BatchKey() {
			return fmt.Errorf("simdns swap batch: %w: op %d is not for %s", dnsprovider.ErrConfig, i, c.BatchKey())
		}
		if err := checkFences(op.FenceOld, op.FenceNew); err != nil {
			return fmt.Errorf("simdns swap batch: op %d: %w", i, err)
		}
		ids := []dnsprovider.RRsetID{fenceID(q.fence)}
		for _, s := range op.Expected {
			id, err := c.a.normalizeID(s.ID())
			if err != nil {
				return fmt.Errorf("simdns swap batch: op %d: %w", i, err)
			}
			ids = append(ids, id)
		}
		for _, id := range ids {
			if seen[id] {
				// The RFC 2136 client refuses it too: the server would
				// check two prerequisites on one RRset as one.
				return fmt.Errorf("simdns swap batch: %w: %s is in two swaps", dnsprovider.ErrConfig, id)
			}
			seen[id] = true
		}
		clients[i] = q
	}
	var failed string
	err := c.do(ctx, "batch", func(z *Authority) error {
		failed = ""
		var prereqs, writes []dnsprovider.RRset
		for i, op := range ops {
			pre, w, err := clients[i].planLocked(op.Expected, op.Desired, op.FenceNew)
			if err != nil {
				return fmt.Errorf("op %d: %w", i, err)
			}
			prereqs = append(prereqs, pre(op.FenceOld)...)
			writes = append(writes, w...)
		}
		if rc, ok := z.prereqsFailLocked(prereqs); ok {
			failed = dns.RcodeToString[rc]
			return nil
		}
		z.applyLocked("batch", writes)
		return nil
	})
	if err != nil {
		return fmt.Errorf("simdns swap batch: %w", err)
	}
	if failed != "" {
		return fmt.Errorf("simdns swap batch: %w (%s)", dnsprovider.ErrConflict, failed)
	}
	return nil
}

// do runs one call: the hook, the fault, the effect (under the lock), the
// hook again.
func (c *Client) do(ctx context.Context, op string, effect func(*Authority) error) error {
	a := c.a
	a.mu.Lock()
	a.seq++
	call := Call{Seq: a.seq, Op: op}
	if !a.writesOnly || rcodeOp(op) == "update" {
		call.Fault = a.fault
	}
	if call.Fault != FaultNone && a.left > 0 {
		a.left--
		if a.left == 0 {
			a.fault = FaultNone
		}
	}
	hook := a.hook
	a.mu.Unlock()

	if hook != nil {
		hook(call)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var err error
	switch {
	case c.unauthorised:
		// BIND answers a wrong key NOTAUTH with TSIG error BADSIG; the RFC
		// 2136 client turns that into this error. Nothing is applied.
		err = &dnsprovider.AuthError{Key: "simdns-wrong-key.", Reason: "NOTAUTH/BADSIG"}
	case call.Fault == FaultTimeout:
		err = timeout(op, a.zone)
	case call.Fault == FaultRefused:
		err = &dnsprovider.RcodeError{Op: rcodeOp(op), Rcode: dns.RcodeRefused}
	case call.Fault == FaultServFail:
		err = &dnsprovider.RcodeError{Op: rcodeOp(op), Rcode: dns.RcodeServerFailure}
	default:
		a.mu.Lock()
		a.cur = call.Seq
		err = effect(a)
		a.mu.Unlock()
		if err == nil && call.Fault == FaultLostReply {
			err = timeout(op, a.zone)
		}
	}
	if hook != nil {
		call.Stage = AfterApply
		hook(call)
	}
	return err
}

func rcodeOp(op string) string {
	if op == "set" || op == "swap" || op == "batch" {
		return "update"
	}
	return "query"
}

// timeout is what the RFC 2136 client returns when no reply came in time:
// a network timeout (net.Error with Timeout() true), retryable.
func timeout(op, zone string) error {
	return fmt.Errorf("%s %s via simdns: %w", rcodeOp(op), zone, os.ErrDeadlineExceeded)
}

func fenceID(name string) dnsprovider.RRsetID { return dnsprovider.RRsetID{Name: name, Type: "TXT"} }

// fenceOf reads a fence RRset as the RFC 2136 client does.
func fenceOf(s dnsprovider.RRset) (uint64, error) {
	switch len(s.Values) {
	case 0:
		return 0, nil
	case 1:
		return dnsprovider.ParseFence(s.Values[0])
	}
	return 0, fmt.Errorf("%w: %d fence records", dnsprovider.ErrBadFence, len(s.Values))
}

// normalizeID gives an RRset ID the zone-relative lower-case name and
// upper-case type the zone is keyed by.
func (a *Authority) normalizeID(id dnsprovider.RRsetID) (dnsprovider.RRsetID, error) {
	fqdn := dnsprovider.AbsoluteName(id.Name, a.zone)
	if !dns.IsSubDomain(a.zone, fqdn) {
		return id, fmt.Errorf("%w: %s is outside zone %s", dnsprovider.ErrConfig, fqdn, a.zone)
	}
	typ := strings.ToUpper(id.Type)
	if _, ok := dns.StringToType[typ]; !ok {
		return id, fmt.Errorf("rrset %s: unknown type %q", id, id.Type)
	}
	return dnsprovider.RRsetID{Name: dnsprovider.RelativeName(fqdn, a.zone), Type: typ}, nil
}

// normalize returns s keyed as the zone keys it, its values deduplicated in
// canonical form (a server holds a set of records) and its TTL in whole
// seconds.
func (a *Authority) normalize(s dnsprovider.RRset) (dnsprovider.RRset, error) {
	id, err := a.normalizeID(s.ID())
	if err != nil {
		return s, err
	}
	out := dnsprovider.RRset{Name: id.Name, Type: id.Type, TTL: s.TTL / time.Second * time.Second}
	if len(s.Values) > 0 {
		out.Values = dnsname.Values(id.Type, s.Values)
	} else {
		out.TTL = 0
	}
	return out, nil
}

func (a *Authority) readLocked(want []dnsprovider.RRsetID) ([]dnsprovider.RRset, error) {
	out := make([]dnsprovider.RRset, 0, len(want))
	for _, w := range want {
		id, err := a.normalizeID(w)
		if err != nil {
			return nil, err
		}
		s, ok := a.rrsets[id]
		if !ok {
			s = dnsprovider.RRset{Name: id.Name, Type: id.Type}
		}
		s.Values = slices.Clone(s.Values)
		out = append(out, s)
	}
	return out, nil
}

// prereqsFailLocked checks the prerequisites as BIND orders them: the
// "RRset does not exist" ones first (YXRRSET), then the value-dependent
// ones (NXRRSET), as dnsprovider/dnstest does.
func (a *Authority) prereqsFailLocked(prereqs []dnsprovider.RRset) (int, bool) {
	for _, p := range prereqs {
		if len(p.Values) == 0 && len(a.rrsets[p.ID()].Values) != 0 {
			return dns.RcodeYXRrset, true
		}
	}
	for _, p := range prereqs {
		if len(p.Values) == 0 {
			continue
		}
		have := a.rrsets[p.ID()]
		if !dnsname.SameValues(p.Type, have.Values, p.Values) {
			return dns.RcodeNXRrset, true
		}
	}
	return 0, false
}

// applyLocked replaces each given RRset (deleting the empty ones), records
// the write and bumps the serial when anything changed.
func (a *Authority) applyLocked(op string, sets []dnsprovider.RRset) {
	before, _ := fenceOf(a.rrsets[fenceID(a.fence)])
	changed := false
	for _, s := range sets {
		if s.Equal(a.rrsets[s.ID()]) {
			continue
		}
		changed = true
		if len(s.Values) == 0 {
			delete(a.rrsets, s.ID())
			continue
		}
		a.rrsets[s.ID()] = dnsprovider.RRset{Name: s.Name, Type: s.Type, TTL: s.TTL, Values: slices.Clone(s.Values)}
	}
	if !changed {
		return
	}
	a.serial++
	after, _ := fenceOf(a.rrsets[fenceID(a.fence)])
	written := cloneSets(sets)
	sortSets(written)
	a.history = append(a.history, Write{Seq: a.cur, Op: op, FenceBefore: before, FenceAfter: after, Sets: written})
}

func (a *Authority) sortedLocked() []dnsprovider.RRset {
	out := make([]dnsprovider.RRset, 0, len(a.rrsets))
	for _, s := range a.rrsets {
		s.Values = slices.Clone(s.Values)
		out = append(out, s)
	}
	sortSets(out)
	return out
}

func sortSets(sets []dnsprovider.RRset) {
	slices.SortFunc(sets, func(x, y dnsprovider.RRset) int {
		return cmp.Or(strings.Compare(x.Name, y.Name), strings.Compare(x.Type, y.Type))
	})
}

func cloneSets(sets []dnsprovider.RRset) []dnsprovider.RRset {
	out := make([]dnsprovider.RRset, len(sets))
	for i, s := range sets {
		s.Values = slices.Clone(s.Values)
		out[i] = s
	}
	return out
}
