package openstack

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover/remediate"
	"github.com/drwatch/drwatch/test/openstacksim"
)

func check(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: got %q, want %q", what, got, want)
	}
}

// simClients starts a simulator and authenticates with it through
// NewClients and application credential files, as the node would.
func simClients(t *testing.T) (*openstacksim.Sim, *Clients) {
	t.Helper()
	s := openstacksim.Start()
	t.Cleanup(s.Close)
	return s, simClientsAs(t, s, openstacksim.AppCredID, openstacksim.AppCredSecret)
}

// simClientsAs authenticates with s under another application credential
// (openstacksim.AdminAppCredID for an admin token).
func simClientsAs(t *testing.T, s *openstacksim.Sim, id, secret string) *Clients {
	t.Helper()
	dir := t.TempDir()
	idf, secf := filepath.Join(dir, "id"), filepath.Join(dir, "secret")
	if err := os.WriteFile(idf, []byte(id+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secf, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := NewClients(context.Background(), remediate.OpenStackAuth{AuthURL: s.AuthURL(),
		ApplicationCredentialIDFile: idf, ApplicationCredentialSecretFile: secf, Region: openstacksim.Region})
	if err != nil {
		t.Fatalf("clients: %v", err)
	}
	return c
}

var (
	podCIDR = netip.MustParsePrefix("198.19.0.0/16")
	cluster = Selector{NamePrefix: "k-", MetadataKey: "kluster", MetadataValue: "k"}
	t0      = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
)

// node adds a cluster instance with one port holding ip.
func node(s *openstacksim.Sim, id, name, status, ip string, launched time.Time, groups []string, pairs ...string) {
	s.PutServer(openstacksim.Server{ID: id, Name: name, Status: status, Metadata: map[string]string{"kluster": "k"},
		Created: launched, LaunchedAt: launched})
	var ap []openstacksim.AddressPair
	for _, p := range pairs {
		ap = append(ap, openstacksim.AddressPair{IPAddress: p})
	}
	s.PutPort(openstacksim.Port{ID: "port-" + id, NetworkID: "net", DeviceID: id, MACAddress: "fa:16:3e:00:00:01",
		FixedIPs: []string{ip}, SecurityGroups: groups, AllowedAddressPairs: ap, Revision: 3})
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func errorsIsPrecondition(err error) bool { return errors.Is(err, remediate.ErrPrecondition) }
