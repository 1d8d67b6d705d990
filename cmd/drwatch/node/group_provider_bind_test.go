package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/config"
	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/executor/reconcile"
	"github.com/drwatch/drwatch/test/dnsservers"
	"github.com/drwatch/drwatch/watcher"
)

// startBIND starts a BIND of its own for example.test., stopped at the
// end of the test.
func startBIND(t *testing.T) *dnsservers.Server {
	t.Helper()
	s, err := dnsservers.StartBIND(t.TempDir())
	if err != nil {
		t.Fatalf("bind: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// keyFile writes s's TSIG secret to a file of its own.
func keyFile(t *testing.T, s *dnsservers.Server) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tsig.key")
	if err := os.WriteFile(p, []byte(s.Secret), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// twoServersParts is the parts of a node whose config is the config
// package's testdata/groups.yaml in zone example.test.: its dns section
// (so lms, and a third group, docs) on BIND a, the wiki group on a
// provider of its own, BIND b with b's TSIG key, and the blog group on
// BIND a with another key of a's; each verified at its own server. It has
// built the providers and verifiers.
func twoServersParts(t *testing.T, a, b *dnsservers.Server) *parts {
	t.Helper()
	y, err := os.ReadFile("../config/testdata/groups.yaml")
	if err != nil {
		t.Fatal(err)
	}
	keyA := keyFile(t, a)
	more := `  - name: docs
    sites:
      primary: { probes: [{ name: docs, type: tcp, address: "203.0.113.40:443" }] }
      backup: { probes: [{ name: docs, type: tcp, address: "198.51.100.40:443" }] }
    dns:
      records:
        - { name: docs, type: A, ttl: 60, primary: [203.0.113.40], backup: [198.51.100.40] }
  - name: blog
    sites:
      primary: { probes: [{ name: blog, type: tcp, address: "203.0.113.50:443" }] }
      backup: { probes: [{ name: blog, type: tcp, address: "198.51.100.50:443" }] }
    dns:
      provider: rfc2136
      rfc2136: { server: "` + a.Addr + `", key_name: ` + dnsservers.KeySHA512 + `, key_file: ` + keyA + `, algorithm: hmac-sha512 }
      verify: { servers: ["` + a.Addr + `"] }
      records:
        - { name: blog, type: A, ttl: 60, primary: [203.0.113.50], backup: [198.51.100.50] }
`
	text := strings.NewReplacer(
		`rfc2136: { server: "ns1.example.net:53", key_name: drwatch., key_file: /etc/drwatch/tsig.key, algorithm: hmac-sha256 }`,
		fmt.Sprintf(`rfc2136: { server: %q, key_name: %s, key_file: %s }`, a.Addr, dnsservers.KeySHA256, keyA),
		"\n  zone: example.org.\n",
		fmt.Sprintf("\n  zone: example.test.\n  verify: { servers: [%q] }\n", a.Addr),
		"      zone: example.com.\n",
		fmt.Sprintf("      zone: example.test.\n      provider: rfc2136\n      rfc2136: { server: %q, key_name: %s, key_file: %s }\n      verify: { servers: [%q] }\n",
			b.Addr, dnsservers.KeySHA256, keyFile(t, b), b.Addr),
	).Replace(string(y)) + more
	cfg, err := config.Parse("groups.yaml", []byte(text), config.Options{SkipFileChecks: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := newParts(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.buildDNS(); err != nil {
		t.Fatal(err)
	}
	if err := p.buildGroupDNS(); err != nil {
		t.Fatal(err)
	}
	return p
}

// groupDNS is the group's provider and verifier, as the leader's
// reconciler gets them.
func groupDNS(t *testing.T, p *parts, name string) watcher.GroupDNS {
	t.Helper()
	i := slices.IndexFunc(p.groups, func(g watcher.GroupDNS) bool { return g.Name == name })
	if i < 0 {
		t.Fatalf("no provider for group %s", name)
	}
	return p.groups[i]
}

// A group whose records live on another RFC 2136 server, with a TSIG key
// of its own, writes there and only there, fenced on its own record: a
// stale write is refused by its fence. Its verifier asks its own server;
// the group beside it still writes and verifies through the dns section's.
func TestGroupOnItsOwnServerWritesThereFencedOnBIND(t *testing.T) {
	a, b := startBIND(t), startBIND(t)
	p := twoServersParts(t, a, b)
	ctx := context.Background()
	wiki, lms := groupDNS(t, p, "wiki"), groupDNS(t, p, "lms")
	cas, ok := wiki.DNS.(dnsprovider.CompareAndSwapper)
	if !ok {
		t.Fatalf("wiki: got a %T, want a compare-and-swap provider", wiki.DNS)
	}
	id := dnsprovider.RRsetID{Name: "wiki", Type: "A"}
	fence := dnsprovider.RRsetID{Name: "_drwatch-wiki", Type: "TXT"}
	desired := []dnsprovider.RRset{{Name: "wiki", Type: "A", TTL: 60, Values: []string{"198.51.100.30"}}}
	before, err := cas.GetRecords(ctx, []dnsprovider.RRsetID{id})
	if err != nil {
		t.Fatalf("wiki: read on its own server: %v", err)
	}
	if err := cas.Swap(ctx, before, desired, 0, 1); err != nil {
		t.Fatalf("wiki: swap on its own server with its own key: %v", err)
	}
	if gen, err := cas.GetFence(ctx); err != nil || gen != 1 {
		t.Errorf("wiki's fence on its own server: got gen %d (%v), want 1", gen, err)
	}
	// The dns section's server, read with its own key, has neither the
	// record nor the fence.
	onA, err := lms.DNS.GetRecords(ctx, []dnsprovider.RRsetID{id, fence})
	if err != nil {
		t.Fatalf("read the dns section's server: %v", err)
	}
	for _, rs := range onA {
		if len(rs.Values) != 0 {
			t.Errorf("the dns section's server: got %s %s %v, want nothing of wiki's", rs.Name, rs.Type, rs.Values)
		}
	}
	// A stale leader's write (fence 0, gen 1 again) is refused.
	stale := []dnsprovider.RRset{{Name: "wiki", Type: "A", TTL: 60, Values: []string{"203.0.113.30"}}}
	if err := cas.Swap(ctx, desired, stale, 0, 1); !errors.Is(err, dnsprovider.ErrConflict) {
		t.Errorf("wiki: stale swap on its own server: got %v, want a conflict", err)
	}
	v, err := wiki.Verifier.Verify(ctx, desired)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Servers) != 1 || v.Servers[0].Server != b.Addr || !v.OK() {
		t.Errorf("wiki's verifier: got %+v, want its own server %s serving the record", v.Servers, b.Addr)
	}
	if lms.Verifier != p.verifier {
		t.Error("lms, in the dns section's zone with no provider of its own: got a verifier of its own, want the dns section's")
	}
}

// reconcilers are a leader's DNS reconcilers for the named groups, on the
// providers the node built.
func reconcilers(t *testing.T, p *parts, names ...string) []*reconcile.Reconciler {
	t.Helper()
	var out []*reconcile.Reconciler
	for _, name := range names {
		g := groupDNS(t, p, name)
		r, err := reconcile.New(reconcile.Config{Group: name, State: reconcile.GroupState(p.machine, name),
			Cluster: noLeader{}, DNS: g.DNS, Verifier: g.Verifier, Interval: p.c.Policy.Interval})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// noLeader is a cluster that never leads: the reconcilers here are
// batched, never run.
type noLeader struct{}

func (noLeader) Propose(context.Context, []byte) ([]byte, uint64, error) {
	return nil, 0, errors.New("not the leader")
}
func (noLeader) VerifyLeader(context.Context) error { return errors.New("not the leader") }

// Groups on the dns section's server, zone and key share their writes; a
// group on a provider of its own, on another server or with another key
// (the same zone name), never joins their batch.
func TestGroupOnItsOwnServerIsNeverBatchedWithTheOthers(t *testing.T) {
	a, b := startBIND(t), startBIND(t)
	p := twoServersParts(t, a, b)
	for _, tc := range []struct {
		groups  []string
		batches int
	}{
		{[]string{"lms", "docs"}, 1},
		{[]string{"lms", "wiki"}, 0},
		{[]string{"docs", "wiki"}, 0},
		{[]string{"lms", "blog"}, 0},
		{[]string{"lms", "docs", "blog", "wiki"}, 1},
	} {
		if got := reconcile.BatchWrites(time.Second, reconcilers(t, p, tc.groups...)); got != tc.batches {
			t.Errorf("groups %v: got %d batches, want %d", tc.groups, got, tc.batches)
		}
	}
}
