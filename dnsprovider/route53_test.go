package dnsprovider

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/libdns/route53"
)

// The documented hosted_zone_id reaches the Route 53 client, which then
// skips discovering the zone by name (and the IAM permission that needs).
func TestRoute53HostedZoneIDReachesTheClient(t *testing.T) {
	key := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(key, []byte("AKIAEXAMPLE\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{Provider: NameRoute53, Zone: "example.test", Sections: Sections{Route53: &Route53Config{
		Region: "eu-central-1", HostedZoneID: "Z0123456789ABC", AccessKeyIDFile: key, SecretAccessKeyFile: key}}}, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	client := p.(*Libdns).client.(*route53.Provider)
	if client.HostedZoneID != "Z0123456789ABC" {
		t.Fatalf("HostedZoneID: got %q, want Z0123456789ABC", client.HostedZoneID)
	}
}
