package providertest

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/miekg/dns"
)

// Target is one implementation under test, bound to a running server.
type Target struct {
	// Name labels failures ("bind9", "knot", "embedded", "powerdns").
	Name string
	// Zone is the zone's FQDN.
	Zone string
	// DNS is a "host:port" that answers DNS for the zone (SOA serial checks).
	DNS string
	// New returns a provider whose fence record is fence (relative name).
	// With wrongCredentials it must return one the server will refuse.
	New func(t *testing.T, fence string, wrongCredentials bool) dnsprovider.Provider
	// Verify configures verification against the target's authoritative servers.
	Verify dnsprovider.VerifyConfig
	// Serial, if set, returns the zone's SOA serial instead of a query to
	// DNS: for a target with no wire (the simulator's in-memory authority),
	// or one whose servers get a write after the API has accepted it
	// (Designate: the serial once the zone is ACTIVE again).
	Serial func(t *testing.T) uint32
	// NewVerifier, if set, replaces dnsprovider.NewVerifier(Zone, cfg): for
	// a target with no wire, whose servers cannot be queried.
	NewVerifier func(t *testing.T, cfg dnsprovider.VerifyConfig) Verifier
}

// Verifier checks what every authoritative server of a target serves
// (dnsprovider.Verifier's Verify).
type Verifier interface {
	Verify(ctx context.Context, desired []dnsprovider.RRset) (*dnsprovider.Verification, error)
}

var seq atomic.Int64

// Run runs the conformance suite. factory is called once per subtest; it
// should hand out a server started once per test package.
func Run(t *testing.T, factory func(t *testing.T) Target) {
	tests := []struct {
		name string
		cas  bool
		fn   func(t *testing.T, tg Target, c *tcase)
	}{
		{"read", false, testRead},
		{"set_idempotent", false, testSetIdempotent},
		{"swap_multi_atomic", true, testSwapMulti},
		{"swap_one_prereq_fails_changes_nothing", true, testSwapPartialFail},
		{"swap_first_write", true, testFirstWrite},
		{"stale_writer_rejected", true, testStaleWriter},
		{"wrong_credentials", false, testWrongKey},
		{"verify", false, testVerify},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := factory(t)
			n := seq.Add(1)
			c := &tcase{prefix: fmt.Sprintf("c%d", n), fence: fmt.Sprintf("_drwatch-c%d", n)}
			p := tg.New(t, c.fence, false)
			if _, ok := p.(dnsprovider.CompareAndSwapper); !ok && tt.cas {
				t.Logf("%s: provider %T has no compare-and-swap; %s not applicable (weaker fencing, see dnsprovider docs)", tg.Name, p, tt.name)
				return
			}
			c.p = p
			tt.fn(t, tg, c)
		})
	}
}

type tcase struct {
	prefix string
	fence  string
	p      dnsprovider.Provider
}

func (c *tcase) name(s string) string { return c.prefix + "-" + s }

func ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func a(name string, ttl int, ips ...string) dnsprovider.RRset {
	return dnsprovider.RRset{Name: name, Type: "A", TTL: time.Duration(ttl) * time.Second, Values: ips}
}

func ids(sets ...dnsprovider.RRset) []dnsprovider.RRsetID {
	out := make([]dnsprovider.RRsetID, len(sets))
	for i, s := range sets {
		out[i] = s.ID()
	}
	return out
}

// mustRead reads sets and fails the test on error.
func mustRead(t *testing.T, p dnsprovider.Provider, sets ...dnsprovider.RRset) []dnsprovider.RRset {
	t.Helper()
	got, err := p.GetRecords(ctx(t), ids(sets...))
	if err != nil {
		t.Fatalf("GetRecords: got error %v, want nil", err)
	}
	if len(got) != len(sets) {
		t.Fatalf("GetRecords: got %d rrsets, want %d", len(got), len(sets))
	}
	return got
}

// assertHolds checks that the zone holds exactly want (values, TTL ignored).
func assertHolds(t *testing.T, p dnsprovider.Provider, want ...dnsprovider.RRset) {
	t.Helper()
	got := mustRead(t, p, want...)
	for i := range want {
		if !sameValues(got[i].Values, want[i].Values) {
			t.Errorf("rrset %s: got %v, want %v", want[i].ID(), got[i].Values, want[i].Values)
		}
	}
}

func sameValues(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	norm := func(v []string) map[string]bool {
		m := map[string]bool{}
		for _, s := range v {
			if ip, err := netip.ParseAddr(s); err == nil {
				s = ip.String()
			}
			m[strings.ToLower(s)] = true
		}
		return m
	}
	ma, mb := norm(a), norm(b)
	for k := range ma {
		if !mb[k] {
			return false
		}
	}
	return len(ma) == len(mb)
}

// serial reads the zone's SOA serial from the target's DNS server.
func serial(t *testing.T, tg Target) uint32 {
	t.Helper()
	if tg.Serial != nil {
		return tg.Serial(t)
	}
	m := new(dns.Msg)
	m.SetQuestion(dns.CanonicalName(tg.Zone), dns.TypeSOA)
	m.RecursionDesired = false
	c := &dns.Client{Net: "tcp", Timeout: 5 * time.Second}
	r, _, err := c.ExchangeContext(ctx(t), m, tg.DNS)
	if err != nil {
		t.Fatalf("SOA query to %s: got error %v, want nil", tg.DNS, err)
	}
	for _, rr := range r.Answer {
		if soa, ok := rr.(*dns.SOA); ok {
			return soa.Serial
		}
	}
	t.Fatalf("SOA query to %s: got rcode %s and no SOA, want a SOA", tg.DNS, dns.RcodeToString[r.Rcode])
	return 0
}

func testRead(t *testing.T, tg Target, c *tcase) {
	absent := a(c.name("absent"), 60)
	got := mustRead(t, c.p, absent)
	if len(got[0].Values) != 0 {
		t.Fatalf("read of absent %s: got %v, want no values", absent.ID(), got[0].Values)
	}
	set := a(c.name("www"), 60, "192.0.2.1", "192.0.2.2")
	if _, err := c.p.SetRecords(ctx(t), []dnsprovider.RRset{set}); err != nil {
		t.Fatalf("SetRecords: got error %v, want nil", err)
	}
	got = mustRead(t, c.p, set, absent)
	if !sameValues(got[0].Values, set.Values) || got[0].TTL != 60*time.Second {
		t.Errorf("read %s: got %v ttl %s, want %v ttl 60s", set.ID(), got[0].Values, got[0].TTL, set.Values)
	}
	if len(got[1].Values) != 0 {
		t.Errorf("read %s: got %v, want none", absent.ID(), got[1].Values)
	}
}

func testSetIdempotent(t *testing.T, tg Target, c *tcase) {
	sets := []dnsprovider.RRset{a(c.name("x"), 60, "192.0.2.10"), a(c.name("y"), 60, "192.0.2.11", "192.0.2.12")}
	changed, err := c.p.SetRecords(ctx(t), sets)
	if err != nil {
		t.Fatalf("SetRecords: got error %v, want nil", err)
	}
	if len(changed) != 2 {
		t.Errorf("first SetRecords: got %d rrsets written, want 2", len(changed))
	}
	before := serial(t, tg)
	changed, err = c.p.SetRecords(ctx(t), sets)
	if err != nil {
		t.Fatalf("second SetRecords: got error %v, want nil", err)
	}
	if len(changed) != 0 {
		t.Errorf("second SetRecords: got %d rrsets written, want 0", len(changed))
	}
	if after := serial(t, tg); after != before {
		t.Errorf("SOA serial after idempotent re-apply: got %d, want %d (unchanged)", after, before)
	}
	assertHolds(t, c.p, sets...)
	// A change of one RRset writes only that one.
	sets[1] = a(c.name("y"), 60, "192.0.2.13")
	changed, err = c.p.SetRecords(ctx(t), sets)
	if err != nil || len(changed) != 1 {
		t.Fatalf("third SetRecords: got %d written, err %v; want 1, nil", len(changed), err)
	}
	assertHolds(t, c.p, sets...)
}

func casOf(t *testing.T, p dnsprovider.Provider) dnsprovider.CompareAndSwapper {
	t.Helper()
	return p.(dnsprovider.CompareAndSwapper)
}

func three(c *tcase, ip string) []dnsprovider.RRset {
	return []dnsprovider.RRset{a(c.name("lms"), 60, ip), a(c.name("studio"), 60, ip), a(c.name("api"), 60, ip)}
}

func testSwapMulti(t *testing.T, tg Target, c *tcase) {
	p := casOf(t, c.p)
	primary, backup := three(c, "203.0.113.10"), three(c, "198.51.100.10")
	if _, err := p.SetRecords(ctx(t), primary); err != nil {
		t.Fatalf("seed: %v", err)
	}
	if err := p.Swap(ctx(t), primary, backup, 0, 7); err != nil {
		t.Fatalf("Swap 3 rrsets + fence: got error %v, want nil", err)
	}
	assertHolds(t, p, backup...)
	gen, err := p.GetFence(ctx(t))
	if err != nil || gen != 7 {
		t.Fatalf("GetFence: got %d, %v; want 7, nil", gen, err)
	}
	// And back, with the fence moving again.
	if err := p.Swap(ctx(t), backup, primary, 7, 8); err != nil {
		t.Fatalf("Swap back: got error %v, want nil", err)
	}
	assertHolds(t, p, primary...)
	if gen, _ := p.GetFence(ctx(t)); gen != 8 {
		t.Errorf("fence after swap back: got %d, want 8", gen)
	}
}

func testSwapPartialFail(t *testing.T, tg Target, c *tcase) {
	p := casOf(t, c.p)
	primary, backup := three(c, "203.0.113.10"), three(c, "198.51.100.10")
	if _, err := p.SetRecords(ctx(t), primary); err != nil {
		t.Fatalf("seed: %v", err)
	}
	if err := p.Swap(ctx(t), primary, primary, 0, 1); err != nil {
		t.Fatalf("fence init swap: %v", err)
	}
	before := serial(t, tg)
	wrong := three(c, "203.0.113.10")
	wrong[2] = a(c.name("api"), 60, "203.0.113.99") // one expectation is stale
	err := p.Swap(ctx(t), wrong, backup, 1, 2)
	var ce *dnsprovider.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, dnsprovider.ErrConflict) {
		t.Fatalf("Swap with one failing prerequisite: got %v, want *ConflictError", err)
	}
	if dnsprovider.IsRetryable(err) || dnsprovider.IsTerminal(err) {
		t.Errorf("conflict: got retryable=%v terminal=%v, want both false", dnsprovider.IsRetryable(err), dnsprovider.IsTerminal(err))
	}
	if ce.Fence != 1 || len(ce.Current) != 3 || !sameValues(ce.Current[2].Values, []string{"203.0.113.10"}) {
		t.Errorf("conflict carries: got fence %d current %v, want fence 1 and the zone's records", ce.Fence, ce.Current)
	}
	assertHolds(t, p, primary...)
	if after := serial(t, tg); after != before {
		t.Errorf("SOA serial after rejected swap: got %d, want %d", after, before)
	}
	if gen, _ := p.GetFence(ctx(t)); gen != 1 {
		t.Errorf("fence after rejected swap: got %d, want 1", gen)
	}
}

func testFirstWrite(t *testing.T, tg Target, c *tcase) {
	p := casOf(t, c.p)
	empty := []dnsprovider.RRset{a(c.name("new1"), 60), a(c.name("new2"), 60)}
	want := []dnsprovider.RRset{a(c.name("new1"), 60, "192.0.2.50"), a(c.name("new2"), 60, "192.0.2.51")}
	if err := p.Swap(ctx(t), empty, want, 0, 1); err != nil {
		t.Fatalf("first write with RRset-does-not-exist prerequisites: got %v, want nil", err)
	}
	assertHolds(t, p, want...)
	// A second "first write" from a writer that still believes the names are empty fails.
	err := p.Swap(ctx(t), empty, want, 1, 2)
	if !errors.Is(err, dnsprovider.ErrConflict) {
		t.Fatalf("second first-write: got %v, want ErrConflict", err)
	}
	// A writer that believes there is no fence yet fails too.
	err = p.Swap(ctx(t), want, empty, 0, 5)
	if !errors.Is(err, dnsprovider.ErrConflict) {
		t.Fatalf("swap expecting no fence: got %v, want ErrConflict", err)
	}
	assertHolds(t, p, want...)
}

func testStaleWriter(t *testing.T, tg Target, c *tcase) {
	leader1 := casOf(t, c.p)
	leader2 := casOf(t, tg.New(t, c.fence, false))
	primary, backup := three(c, "203.0.113.10"), three(c, "198.51.100.10")
	if _, err := leader1.SetRecords(ctx(t), primary); err != nil {
		t.Fatalf("seed: %v", err)
	}
	if err := leader1.Swap(ctx(t), primary, primary, 0, 10); err != nil {
		t.Fatalf("fence init: %v", err)
	}
	// Both read the same state at gen 10. Leader 1 is deposed; leader 2
	// decides gen 11 (back to... backup) and writes first.
	if err := leader2.Swap(ctx(t), primary, backup, 10, 11); err != nil {
		t.Fatalf("new leader's swap: got %v, want nil", err)
	}
	// The deposed leader, still holding gen-10 expectations, tries its own
	// decision: rejected by the server.
	err := leader1.Swap(ctx(t), primary, three(c, "192.0.2.99"), 10, 12)
	var ce *dnsprovider.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("stale leader's swap: got %v, want *ConflictError", err)
	}
	if ce.Fence != 11 {
		t.Errorf("conflict fence: got %d, want 11", ce.Fence)
	}
	// Even if its record expectations happen to be right, the stale fence alone rejects it.
	err = leader1.Swap(ctx(t), backup, primary, 10, 12)
	if !errors.Is(err, dnsprovider.ErrConflict) {
		t.Fatalf("stale fence with right records: got %v, want ErrConflict", err)
	}
	assertHolds(t, leader1, backup...)
}

func testWrongKey(t *testing.T, tg Target, c *tcase) {
	set := a(c.name("guarded"), 60, "192.0.2.77")
	if _, err := c.p.SetRecords(ctx(t), []dnsprovider.RRset{set}); err != nil {
		t.Fatalf("seed: %v", err)
	}
	bad := tg.New(t, c.fence, true)
	_, err := bad.SetRecords(ctx(t), []dnsprovider.RRset{a(c.name("guarded"), 60, "10.9.9.9")})
	if err == nil {
		t.Fatalf("SetRecords with wrong credentials: got nil, want an error")
	}
	if !errors.Is(err, dnsprovider.ErrAuth) || !dnsprovider.IsTerminal(err) {
		t.Errorf("wrong credentials: got %v (terminal=%v), want ErrAuth and terminal", err, dnsprovider.IsTerminal(err))
	}
	if cas, ok := bad.(dnsprovider.CompareAndSwapper); ok {
		err := cas.Swap(ctx(t), []dnsprovider.RRset{set}, []dnsprovider.RRset{a(c.name("guarded"), 60, "10.9.9.9")}, 0, 1)
		if !errors.Is(err, dnsprovider.ErrAuth) {
			t.Errorf("Swap with wrong key: got %v, want ErrAuth", err)
		}
	}
	assertHolds(t, c.p, set)
}

func testVerify(t *testing.T, tg Target, c *tcase) {
	want := []dnsprovider.RRset{a(c.name("v1"), 60, "192.0.2.31"), a(c.name("v2"), 60, "192.0.2.32", "192.0.2.33")}
	if _, err := c.p.SetRecords(ctx(t), want); err != nil {
		t.Fatalf("seed: %v", err)
	}
	cfg := tg.Verify
	cfg.Timeout = 20 * time.Second
	cfg.Interval = 50 * time.Millisecond
	v := newVerifier(t, tg, cfg)
	res, err := v.Verify(ctx(t), want)
	if err != nil {
		t.Fatalf("Verify: got error %v, want nil", err)
	}
	if !res.OK() || res.Err() != nil || len(res.Servers) == 0 {
		t.Fatalf("Verify desired: got ok=%v err=%v servers=%d, want ok", res.OK(), res.Err(), len(res.Servers))
	}
	for _, s := range res.Servers {
		if !s.Matched || s.After < 0 || len(s.Got) != 2 {
			t.Errorf("server %s: got matched=%v after=%s got=%v, want matched", s.Server, s.Matched, s.After, s.Got)
		}
	}
	// Something nobody serves: every server is named after the timeout.
	cfg.Timeout = 300 * time.Millisecond
	v = newVerifier(t, tg, cfg)
	other := []dnsprovider.RRset{a(c.name("v1"), 60, "192.0.2.250")}
	res, err = v.Verify(ctx(t), other)
	if err != nil {
		t.Fatalf("Verify: got error %v, want nil", err)
	}
	if res.OK() || !errors.Is(res.Err(), dnsprovider.ErrNotPropagated) {
		t.Fatalf("Verify undesired: got ok=%v err=%v, want not ok, ErrNotPropagated", res.OK(), res.Err())
	}
	for _, s := range res.Servers {
		if s.Matched || !strings.Contains(res.Err().Error(), s.Server) {
			t.Errorf("server %s: got matched=%v, named in %q; want unmatched and named", s.Server, s.Matched, res.Err())
		}
	}
}

// newVerifier returns the target's verifier for cfg.
func newVerifier(t *testing.T, tg Target, cfg dnsprovider.VerifyConfig) Verifier {
	t.Helper()
	if tg.NewVerifier != nil {
		return tg.NewVerifier(t, cfg)
	}
	v, err := dnsprovider.NewVerifier(tg.Zone, cfg, nil)
	if err != nil {
		t.Fatalf("NewVerifier: %v", err)
	}
	return v
}
