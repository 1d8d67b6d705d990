package openstacktest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/dnsprovider/providertest"
	"github.com/drwatch/drwatch/test/daemon"
	"github.com/miekg/dns"
)

// The Designate provider (dnsprovider.Designate) against the real
// Designate of the shared stack: its API, central, worker, producer and
// mdns, with the BIND9 backend's private named serving what it writes.

// designateZone is the zone the conformance suite writes in, created once
// in the demo project.
const designateZone = "designate.test."

var designateZoneOnce struct {
	once sync.Once
	id   string
	err  error
}

// designateStack returns the shared stack with designateZone created.
func designateStack(t *testing.T) *Stack {
	t.Helper()
	s := stack(t)
	designateZoneOnce.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
		defer cancel()
		designateZoneOnce.id, designateZoneOnce.err = s.CreateZone(ctx, s.Member, designateZone)
	})
	if designateZoneOnce.err != nil {
		t.Fatalf("designate zone: %v", designateZoneOnce.err)
	}
	return s
}

// servedSerial is the SOA serial named serves for designateZone once
// Designate has it there: a write is accepted (zone PENDING) before named
// has pulled it, so a serial read at once could still move without any
// further write. Designate marks the zone ACTIVE after its worker saw the
// new serial at named.
func servedSerial(t *testing.T, s *Stack) uint32 {
	t.Helper()
	ctx := designateCtx(t)
	if err := s.WaitZone(ctx, s.Member, designateZoneOnce.id, "ACTIVE"); err != nil {
		t.Fatal(err)
	}
	m := new(dns.Msg)
	m.SetQuestion(designateZone, dns.TypeSOA)
	r, _, err := (&dns.Client{Net: "tcp", Timeout: 5 * time.Second}).ExchangeContext(ctx, m, s.DesignateDNS())
	if err != nil {
		t.Fatalf("SOA query to named: %v", err)
	}
	for _, rr := range r.Answer {
		if soa, ok := rr.(*dns.SOA); ok {
			return soa.Serial
		}
	}
	t.Fatalf("SOA query to named: got rcode %s and no SOA", dns.RcodeToString[r.Rcode])
	return 0
}

// designateProvider builds the provider the way drwatch does, from a
// Config with a password file, as the demo member.
func designateProvider(t *testing.T, s *Stack, zone, region, password string) dnsprovider.Provider {
	t.Helper()
	pw := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pw, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := dnsprovider.New(dnsprovider.Config{Provider: dnsprovider.NameDesignate, Zone: zone,
		Sections: dnsprovider.Sections{Designate: &dnsprovider.DesignateConfig{AuthURL: s.AuthURL, Region: region, Username: s.Member.Username,
			UserDomainName: s.Member.Domain, ProjectName: s.Member.ProjectName, ProjectDomainName: s.Member.Domain, PasswordFile: pw}}}, nil)
	if err != nil {
		t.Fatalf("New designate: %v", err)
	}
	return p
}

func designateCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// The conformance suite: reads, idempotent writes (the SOA serial named
// serves does not move), wrong credentials, and verification at the pool's
// name server. Designate has no compare-and-swap, so the swap cases log
// that they do not apply.
func TestDesignateConformance(t *testing.T) {
	s := designateStack(t)
	providertest.Run(t, func(t *testing.T) providertest.Target {
		return providertest.Target{
			Name:   "designate",
			Zone:   designateZone,
			DNS:    s.DesignateDNS(),
			Serial: func(t *testing.T) uint32 { return servedSerial(t, s) },
			New: func(t *testing.T, fence string, wrong bool) dnsprovider.Provider {
				pw := s.Member.Password
				if wrong {
					pw = "wrong-password"
				}
				return designateProvider(t, s, designateZone, s.Region, pw)
			},
			Verify: dnsprovider.VerifyConfig{Servers: []string{s.DesignateDNS()}},
		}
	})
}

// Designate cannot guard a write: the provider must not claim
// compare-and-swap, whatever the API offers.
func TestDesignateHasNoCompareAndSwap(t *testing.T) {
	s := designateStack(t)
	p := designateProvider(t, s, designateZone, s.Region, s.Member.Password)
	if _, ok := p.(dnsprovider.CompareAndSwapper); ok {
		t.Fatalf("designate provider: got a CompareAndSwapper, want none")
	}
}

// Refused credentials, a zone the project does not have and a region
// without a dns endpoint are terminal, and the error never carries the
// password.
func TestDesignateErrorsAreTerminal(t *testing.T) {
	s := designateStack(t)
	tests := []struct {
		name, zone, region, password string
		wantIs                       error
	}{
		{"wrong_password", designateZone, s.Region, "wrong-password", dnsprovider.ErrAuth},
		{"zone_missing", "other.test.", s.Region, s.Member.Password, dnsprovider.ErrWrongZone},
		{"region_without_endpoint", designateZone, "RegionNine", s.Member.Password, dnsprovider.ErrConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := designateProvider(t, s, tt.zone, tt.region, tt.password)
			_, err := p.GetRecords(designateCtx(t), []dnsprovider.RRsetID{{Name: "lms", Type: "A"}})
			if !errors.Is(err, tt.wantIs) || !dnsprovider.IsTerminal(err) {
				t.Fatalf("GetRecords: got %v (terminal=%v), want %v, terminal", err, dnsprovider.IsTerminal(err), tt.wantIs)
			}
			if strings.Contains(err.Error(), tt.password) {
				t.Errorf("error carries the password: %v", err)
			}
		})
	}
}

// A zone with more recordsets than Designate returns in one page (20 by
// default) is read whole: a recordset on a later page is found, not
// created a second time (which Designate would refuse with 409).
func TestDesignateReadsEveryPage(t *testing.T) {
	s := designateStack(t)
	ctx := designateCtx(t)
	zone := "pages.designate.test."
	if _, err := s.CreateZone(ctx, s.Member, zone); err != nil {
		t.Fatal(err)
	}
	p := designateProvider(t, s, zone, s.Region, s.Member.Password)
	var sets []dnsprovider.RRset
	for i := range 25 {
		sets = append(sets, dnsprovider.RRset{Name: fmt.Sprintf("h%02d", i), Type: "A", TTL: time.Minute, Values: []string{fmt.Sprintf("192.0.2.%d", i+1)}})
	}
	if changed, err := p.SetRecords(ctx, sets); err != nil || len(changed) != len(sets) {
		t.Fatalf("create: got %d written, %v; want %d, nil", len(changed), err, len(sets))
	}
	got, err := p.GetRecords(ctx, []dnsprovider.RRsetID{sets[0].ID(), sets[24].ID()})
	if err != nil || len(got[0].Values) != 1 || len(got[1].Values) != 1 || got[1].Values[0] != "192.0.2.25" {
		t.Fatalf("read first and last: got %v, %v; want both", got, err)
	}
	if changed, err := p.SetRecords(ctx, sets); err != nil || len(changed) != 0 {
		t.Fatalf("re-apply: got %d written, %v; want 0, nil", len(changed), err)
	}
}

// designateProxy is a reverse proxy in front of the real Designate, as a
// second region's dns endpoint; before it forwards a request, hook (when
// set) may act as another writer. It counts the requests it forwards.
type designateProxy struct {
	mu       sync.Mutex
	hook     func(r *http.Request)
	requests atomic.Int64
	region   string
}

var proxyRegions atomic.Int64

func newDesignateProxy(t *testing.T, s *Stack) *designateProxy {
	t.Helper()
	target, err := url.Parse(s.DesignateURL)
	if err != nil {
		t.Fatal(err)
	}
	d := &designateProxy{region: fmt.Sprintf("RegionProxy%d", proxyRegions.Add(1))}
	rp := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.requests.Add(1)
		d.mu.Lock()
		hook := d.hook
		d.mu.Unlock()
		if hook != nil {
			hook(r)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	if err := s.AddDNSEndpoint(designateCtx(t), d.region, srv.URL); err != nil {
		t.Fatal(err)
	}
	return d
}

// once runs f before the first request that match accepts.
func (d *designateProxy) once(match func(r *http.Request) bool, f func()) {
	var done atomic.Bool
	d.mu.Lock()
	d.hook = func(r *http.Request) {
		if match(r) && done.CompareAndSwap(false, true) {
			f()
		}
	}
	d.mu.Unlock()
}

// memberCall is a request to the Designate API as the demo member. It
// returns an error rather than failing t: the proxy's hooks call it from
// the server's goroutine.
func memberCall(t *testing.T, s *Stack, method, path string, in, out any) error {
	ctx := designateCtx(t)
	tok, err := s.Token(ctx, s.Member)
	if err != nil {
		return err
	}
	_, err = s.call(ctx, method, s.DesignateURL+path, tok, in, out)
	return err
}

// recordsetID finds the ID of recordset name (FQDN) of type typ in zone.
func recordsetID(t *testing.T, s *Stack, zoneID, name, typ string) string {
	t.Helper()
	var out struct {
		Recordsets []struct{ ID string } `json:"recordsets"`
	}
	err := memberCall(t, s, http.MethodGet, "/v2/zones/"+zoneID+"/recordsets?name="+name+"&type="+typ, nil, &out)
	if err != nil || len(out.Recordsets) != 1 {
		t.Fatalf("recordset %s %s: got %d, %v; want 1", name, typ, len(out.Recordsets), err)
	}
	return out.Recordsets[0].ID
}

// The provider talks to the endpoint of its configured region only.
func TestDesignateUsesTheConfiguredRegion(t *testing.T) {
	s := designateStack(t)
	proxy := newDesignateProxy(t, s)
	p := designateProvider(t, s, designateZone, s.Region, s.Member.Password)
	if _, err := p.GetRecords(designateCtx(t), []dnsprovider.RRsetID{{Name: "region", Type: "A"}}); err != nil {
		t.Fatal(err)
	}
	if n := proxy.requests.Load(); n != 0 {
		t.Errorf("provider for %s: got %d requests at %s's endpoint, want 0", s.Region, n, proxy.region)
	}
	p = designateProvider(t, s, designateZone, proxy.region, s.Member.Password)
	if _, err := p.GetRecords(designateCtx(t), []dnsprovider.RRsetID{{Name: "region", Type: "A"}}); err != nil {
		t.Fatal(err)
	}
	if proxy.requests.Load() == 0 {
		t.Errorf("provider for %s: got no request at its endpoint", proxy.region)
	}
}

// The weak guard: another writer updates the recordset between the
// provider's list and its update. Designate bumps the recordset's version,
// the provider's re-read sees it and refuses, and the other writer's
// value stays.
func TestDesignateConcurrentUpdateIsRefused(t *testing.T) {
	s := designateStack(t)
	proxy := newDesignateProxy(t, s)
	p := designateProvider(t, s, designateZone, proxy.region, s.Member.Password)
	ctx := designateCtx(t)
	set := dnsprovider.RRset{Name: "race-update", Type: "A", TTL: time.Minute, Values: []string{"203.0.113.10"}}
	if _, err := p.SetRecords(ctx, []dnsprovider.RRset{set}); err != nil {
		t.Fatal(err)
	}
	rsID := recordsetID(t, s, designateZoneOnce.id, "race-update."+designateZone, "A")
	proxy.once(func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/recordsets/"+rsID)
	}, func() {
		if err := memberCall(t, s, http.MethodPut, "/v2/zones/"+designateZoneOnce.id+"/recordsets/"+rsID,
			map[string]any{"records": []string{"192.0.2.66"}}, nil); err != nil {
			t.Errorf("the other writer's update: %v", err)
		}
	})
	set.Values = []string{"198.51.100.10"}
	_, err := p.SetRecords(ctx, []dnsprovider.RRset{set})
	var ce *dnsprovider.ConflictError
	if !errors.As(err, &ce) || len(ce.Current) != 1 || len(ce.Current[0].Values) != 1 || ce.Current[0].Values[0] != "192.0.2.66" {
		t.Fatalf("update raced by another writer: got %v, want *ConflictError carrying 192.0.2.66", err)
	}
	got, err := p.GetRecords(ctx, []dnsprovider.RRsetID{set.ID()})
	if err != nil || len(got[0].Values) != 1 || got[0].Values[0] != "192.0.2.66" {
		t.Fatalf("after the refused update: got %v, %v; want the other writer's 192.0.2.66", got, err)
	}
}

// Designate's API takes no precondition: a recordset update carrying a
// stale If-Match (the ETag of an earlier version) is applied all the same.
// This is why the provider has no compare-and-swap, checked against the
// real service rather than assumed.
func TestDesignateUpdateIgnoresIfMatch(t *testing.T) {
	s := designateStack(t)
	ctx := designateCtx(t)
	p := designateProvider(t, s, designateZone, s.Region, s.Member.Password)
	set := dnsprovider.RRset{Name: "if-match", Type: "A", TTL: time.Minute, Values: []string{"203.0.113.10"}}
	if _, err := p.SetRecords(ctx, []dnsprovider.RRset{set}); err != nil {
		t.Fatal(err)
	}
	rsID := recordsetID(t, s, designateZoneOnce.id, "if-match."+designateZone, "A")
	tok, err := s.Token(ctx, s.Member)
	if err != nil {
		t.Fatal(err)
	}
	path := s.DesignateURL + "/v2/zones/" + designateZoneOnce.id + "/recordsets/" + rsID
	var before struct {
		Version int `json:"version"`
	}
	hdr, err := s.call(ctx, http.MethodGet, path, tok, nil, &before)
	if err != nil {
		t.Fatal(err)
	}
	if etag := hdr.Get("ETag"); etag != "" {
		t.Logf("recordset GET carries ETag %q", etag)
	}
	// Another writer moves the recordset on; our If-Match names the
	// version we read, as an HTTP conditional update would.
	if err := memberCall(t, s, http.MethodPut, "/v2/zones/"+designateZoneOnce.id+"/recordsets/"+rsID,
		map[string]any{"records": []string{"192.0.2.66"}}, nil); err != nil {
		t.Fatal(err)
	}
	stale := map[string]string{"If-Match": fmt.Sprintf(`"%d"`, before.Version), "If-Unmodified-Since": "Thu, 01 Jan 1970 00:00:00 GMT"}
	var after struct {
		Version int      `json:"version"`
		Records []string `json:"records"`
	}
	if _, err := s.callWith(ctx, http.MethodPut, path, tok, stale, map[string]any{"records": []string{"198.51.100.10"}}, &after); err != nil {
		t.Fatalf("update with a stale If-Match: got %v, want it applied (Designate has no conditional update)", err)
	}
	if len(after.Records) != 1 || after.Records[0] != "198.51.100.10" || after.Version <= before.Version+1 {
		t.Fatalf("update with a stale If-Match: got records %v version %d, want 198.51.100.10 at a version above %d", after.Records, after.Version, before.Version+1)
	}
}

// TXT values go through Designate quoted and come back as written,
// spaces and quotes included: re-applying them writes nothing, and named
// serves them.
func TestDesignateTXTRoundTrip(t *testing.T) {
	s := designateStack(t)
	ctx := designateCtx(t)
	p := designateProvider(t, s, designateZone, s.Region, s.Member.Password)
	set := dnsprovider.RRset{Name: "note", Type: "TXT", TTL: time.Minute, Values: []string{"hello world", `say "hi"`}}
	if changed, err := p.SetRecords(ctx, []dnsprovider.RRset{set}); err != nil || len(changed) != 1 {
		t.Fatalf("create: got %d written, %v; want 1, nil", len(changed), err)
	}
	got, err := p.GetRecords(ctx, []dnsprovider.RRsetID{set.ID()})
	if err != nil || len(got[0].Values) != 2 || !slices.Contains(got[0].Values, "hello world") || !slices.Contains(got[0].Values, `say "hi"`) {
		t.Fatalf("read back: got %v, %v; want %q", got, err, set.Values)
	}
	if changed, err := p.SetRecords(ctx, []dnsprovider.RRset{set}); err != nil || len(changed) != 0 {
		t.Fatalf("re-apply: got %d written, %v; want 0, nil", len(changed), err)
	}
	v, err := dnsprovider.NewVerifier(designateZone, dnsprovider.VerifyConfig{Servers: []string{s.DesignateDNS()}, Timeout: 30 * time.Second, Interval: 100 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := v.Verify(ctx, []dnsprovider.RRset{set}); err != nil || !res.OK() {
		t.Fatalf("named: got %v, %v; want it serving %q", res, err, set.Values)
	}
}

// Another writer creates the recordset between the provider's read and
// its create: Designate answers 409 (duplicate recordset), which the
// provider reports as a *ConflictError carrying what the other writer
// wrote: re-plan, do not retry blindly and do not give up.
func TestDesignateConcurrentCreateIsAConflict(t *testing.T) {
	s := designateStack(t)
	proxy := newDesignateProxy(t, s)
	p := designateProvider(t, s, designateZone, proxy.region, s.Member.Password)
	name := "race-create." + designateZone
	proxy.once(func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/recordsets")
	}, func() {
		if err := memberCall(t, s, http.MethodPost, "/v2/zones/"+designateZoneOnce.id+"/recordsets",
			map[string]any{"name": name, "type": "A", "ttl": 60, "records": []string{"192.0.2.66"}}, nil); err != nil {
			t.Errorf("the other writer's create: %v", err)
		}
	})
	_, err := p.SetRecords(designateCtx(t), []dnsprovider.RRset{{Name: "race-create", Type: "A", TTL: time.Minute, Values: []string{"203.0.113.10"}}})
	var ce *dnsprovider.ConflictError
	if !errors.As(err, &ce) || len(ce.Current) != 1 || len(ce.Current[0].Values) != 1 || ce.Current[0].Values[0] != "192.0.2.66" {
		t.Fatalf("create raced by another writer: got %v, want *ConflictError carrying 192.0.2.66", err)
	}
	if dnsprovider.IsRetryable(err) || dnsprovider.IsTerminal(err) {
		t.Errorf("conflict: got retryable=%v terminal=%v, want neither", dnsprovider.IsRetryable(err), dnsprovider.IsTerminal(err))
	}
}

// A zone whose name server is down goes to ERROR once Designate gives up
// polling it. Writes into it are accepted and sent when the zone
// recovers, but until then SetRecords reports ErrZoneError (retryable):
// the flip is not known to be served. With the name server back,
// Designate's periodic recovery pushes the zone and the error goes away.
func TestDesignateZoneInErrorIsReported(t *testing.T) {
	s := designateStack(t)
	ctx := designateCtx(t)
	zone := "broken.designate.test."
	zid, err := s.CreateZone(ctx, s.Member, zone)
	if err != nil {
		t.Fatal(err)
	}
	p := designateProvider(t, s, zone, s.Region, s.Member.Password)
	lms := func(ip string) []dnsprovider.RRset {
		return []dnsprovider.RRset{{Name: "lms", Type: "A", TTL: time.Minute, Values: []string{ip}}}
	}
	s.StopDesignateBackend()
	t.Cleanup(func() {
		if !s.alive("named") {
			if err := s.StartDesignateBackend(); err != nil {
				t.Errorf("restart named: %v", err)
			}
		}
	})
	if _, err := p.SetRecords(ctx, lms("203.0.113.10")); err != nil {
		t.Fatalf("write while the zone is still ACTIVE: got %v, want nil", err)
	}
	if err := s.WaitZone(ctx, s.Member, zid, "ERROR"); err != nil {
		t.Fatal(err)
	}
	changed, err := p.SetRecords(ctx, lms("198.51.100.10"))
	if len(changed) != 1 || !errors.Is(err, dnsprovider.ErrZoneError) || !dnsprovider.IsRetryable(err) {
		t.Fatalf("write into a zone in ERROR: got %d written, %v (retryable=%v); want 1, ErrZoneError, retryable", len(changed), err, dnsprovider.IsRetryable(err))
	}
	if err := s.WaitZone(ctx, s.Member, zid, "ERROR"); err != nil {
		t.Fatal(err)
	}
	changed, err = p.SetRecords(ctx, lms("198.51.100.10"))
	if len(changed) != 0 || !errors.Is(err, dnsprovider.ErrZoneError) {
		t.Fatalf("re-apply into a zone still in ERROR: got %d written, %v; want 0, ErrZoneError", len(changed), err)
	}
	if err := s.StartDesignateBackend(); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitZone(ctx, s.Member, zid, "ACTIVE"); err != nil {
		t.Fatal(err)
	}
	if changed, err := p.SetRecords(ctx, lms("198.51.100.10")); len(changed) != 0 || err != nil {
		t.Fatalf("re-apply after recovery: got %d written, %v; want 0, nil", len(changed), err)
	}
	v, err := dnsprovider.NewVerifier(zone, dnsprovider.VerifyConfig{Servers: []string{s.DesignateDNS()}, Timeout: 30 * time.Second, Interval: 100 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := v.Verify(ctx, lms("198.51.100.10")); err != nil || !res.OK() {
		t.Fatalf("named after recovery: got %v, %v; want it serving 198.51.100.10", res, err)
	}
}

// PENDING is every zone's status for a few seconds after a change: a
// write then is no error.
func TestDesignatePendingZoneIsNotAnError(t *testing.T) {
	s := designateStack(t)
	ctx := designateCtx(t)
	zone := "pending.designate.test."
	zid, err := s.CreateZone(ctx, s.Member, zone)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetZoneStatus(ctx, zid, "PENDING", "UPDATE"); err != nil {
		t.Fatal(err)
	}
	p := designateProvider(t, s, zone, s.Region, s.Member.Password)
	changed, err := p.SetRecords(ctx, []dnsprovider.RRset{{Name: "lms", Type: "A", TTL: time.Minute, Values: []string{"203.0.113.10"}}})
	if len(changed) != 1 || err != nil {
		t.Fatalf("write into a PENDING zone: got %d written, %v; want 1, nil", len(changed), err)
	}
}

// A zone being deleted (action DELETE, as a delete the backend has not
// finished leaves it) takes no writes: Designate answers 400, and the
// provider says so first, as a terminal wrong-zone error, writing nothing.
func TestDesignateDeletingZoneIsTerminal(t *testing.T) {
	s := designateStack(t)
	ctx := designateCtx(t)
	zone := "deleting.designate.test."
	zid, err := s.CreateZone(ctx, s.Member, zone)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetZoneStatus(ctx, zid, "PENDING", "DELETE"); err != nil {
		t.Fatal(err)
	}
	p := designateProvider(t, s, zone, s.Region, s.Member.Password)
	changed, err := p.SetRecords(ctx, []dnsprovider.RRset{{Name: "lms", Type: "A", TTL: time.Minute, Values: []string{"203.0.113.10"}}})
	if len(changed) != 0 || !errors.Is(err, dnsprovider.ErrWrongZone) || !dnsprovider.IsTerminal(err) {
		t.Fatalf("write into a zone being deleted: got %d written, %v (terminal=%v); want 0, ErrWrongZone, terminal", len(changed), err, dnsprovider.IsTerminal(err))
	}
}

// With a program missing (here: named and rndc, with an empty PATH) the
// Designate part of the stack refuses to start, naming the Debian package
// to install, before it starts anything.
func TestDesignateMissingBinaryNamesThePackage(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	want := ""
	for _, b := range designateBinaries {
		if _, err := os.Stat(b.path); !strings.HasPrefix(b.path, "/") || err != nil {
			want = b.pkg // the first one missing: bind9 where Designate is installed
			break
		}
	}
	s := &Stack{Dir: t.TempDir(), procs: map[string]*daemon.Process{}}
	err := s.startDesignate(context.Background(), Options{Designate: true}, stackPorts{})
	if !errors.Is(err, ErrNoBinary) || !strings.Contains(err.Error(), "install Debian package "+want+" ") {
		t.Fatalf("start without named: got %v, want ErrNoBinary naming package %s", err, want)
	}
	if s.DesignateURL != "" || len(s.procs) != 0 {
		t.Errorf("start without named: got URL %q and %d processes, want nothing started", s.DesignateURL, len(s.procs))
	}
}

// An RRset with no values deletes the recordset; deleting what is absent
// writes nothing.
func TestDesignateEmptyRRsetDeletes(t *testing.T) {
	s := designateStack(t)
	ctx := designateCtx(t)
	p := designateProvider(t, s, designateZone, s.Region, s.Member.Password)
	set := dnsprovider.RRset{Name: "gone", Type: "A", TTL: time.Minute, Values: []string{"203.0.113.10"}}
	if _, err := p.SetRecords(ctx, []dnsprovider.RRset{set}); err != nil {
		t.Fatal(err)
	}
	empty := dnsprovider.RRset{Name: "gone", Type: "A"}
	if changed, err := p.SetRecords(ctx, []dnsprovider.RRset{empty}); err != nil || len(changed) != 1 {
		t.Fatalf("delete: got %d written, %v; want 1, nil", len(changed), err)
	}
	got, err := p.GetRecords(ctx, []dnsprovider.RRsetID{set.ID()})
	if err != nil || len(got[0].Values) != 0 {
		t.Fatalf("read after delete: got %v, %v; want no values", got, err)
	}
	if changed, err := p.SetRecords(ctx, []dnsprovider.RRset{empty}); err != nil || len(changed) != 0 {
		t.Fatalf("delete again: got %d written, %v; want 0, nil", len(changed), err)
	}
}
