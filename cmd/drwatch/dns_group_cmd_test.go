package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/config"
	"github.com/drwatch/drwatch/cmd/drwatch/demo"
	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/dnsservers"
	"github.com/drwatch/drwatch/test/poll"
)

// dns check --group checks that failover group's records: the demo's wiki
// in the demo's zone, from the cluster's decision or a site's records of
// the config; and, with a provider of its own in another zone (BIND),
// at that provider's server only. An unknown group is a usage error naming
// the groups there are; without --group the dns section's records are
// checked as before.
func TestDNSCheckOfAGroupChecksItsRecordsAtItsServers(t *testing.T) {
	_, d := startDemo(t)
	poll.Until(t, 60*time.Second, func() bool {
		v := d.View()
		return d.Leader() != nil && v.Policy != nil
	}, "the policy is replicated")
	cfg := []string{"--config", d.Configs[0]}

	var out, stderr string
	var code int
	poll.Until(t, 60*time.Second, func() bool {
		out, stderr, code = run(t, append([]string{"dns", "check", "--group", demo.WikiGroup}, cfg...)...)
		return code == 0
	}, "dns check --group wiki matches the cluster's decision")
	if !strings.Contains(out, "group wiki, cluster decision") || !strings.Contains(out, "wiki/A ttl=5s ["+demo.WikiPrimaryIP+"]") {
		t.Errorf("dns check --group wiki: got\n%s\nwant the wiki group's decision", out)
	}
	if strings.Contains(out, "lms") {
		t.Errorf("dns check --group wiki: got\n%s\nwant none of the default group's records", out)
	}
	if out, stderr, code = run(t, append([]string{"dns", "check", "--group", demo.WikiGroup, "--site", "backup"}, cfg...)...); code != 1 {
		t.Errorf("dns check --group wiki --site backup while the wiki is on its primary: exit %d %s\n%s, want 1", code, stderr, out)
	}
	// The look-alike: without --group, the default group's records.
	if out, stderr, code = run(t, append([]string{"dns", "check", "--site", "primary"}, cfg...)...); code != 0 || !strings.Contains(out, "lms") || strings.Contains(out, "wiki") {
		t.Errorf("dns check --site primary: exit %d %s\n%s, want 0 with the default group's records only", code, stderr, out)
	}
	_, stderr, code = run(t, append([]string{"dns", "check", "--group", "shop"}, cfg...)...)
	if code != 2 || !strings.Contains(stderr, `unknown failover group "shop"`) || !strings.Contains(stderr, "groups: default, wiki") {
		t.Errorf("dns check --group shop: exit %d %q, want 2 naming shop and the groups default, wiki", code, stderr)
	}

	// Every node checks the wiki too, and its status per group says so;
	// the status without a group keeps the default group's check.
	n := d.Running()[0]
	poll.Until(t, 60*time.Second, func() bool {
		st, err := n.GroupStatus(t.Context(), demo.WikiGroup)
		return err == nil && st.DNS.Match && len(st.DNS.Desired) == 1 && st.DNS.Desired[0].Name == "wiki.demo.test."
	}, "node a's status of the wiki shows the wiki's DNS check, matching")
	if st := n.Status(t.Context()); len(st.DNS.Desired) != 2 || st.DNS.Desired[0].Name != "lms.demo.test." {
		t.Errorf("node a's status: dns desired %+v, want the default group's lms and studio", st.DNS.Desired)
	}

	// The wiki on a provider of its own, in zone example.test. on BIND.
	b, err := dnsservers.StartBIND(t.TempDir())
	if err != nil {
		t.Fatalf("bind: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	keyPath := filepath.Join(t.TempDir(), "tsig.key")
	if err := os.WriteFile(keyPath, []byte(b.Secret), 0o600); err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(d.Configs[0])
	if err != nil {
		t.Fatal(err)
	}
	own := strings.Replace(string(y), "    dns:\n      records:\n", fmt.Sprintf(
		"    dns:\n      zone: example.test.\n      provider: rfc2136\n      rfc2136: { server: %q, key_name: %s, key_file: %s }\n      verify: { servers: [%q] }\n      records:\n",
		b.Addr, dnsservers.KeySHA256, keyPath, b.Addr), 1)
	if own == string(y) {
		t.Fatal("the demo's config has no dns section in its wiki group to replace")
	}
	ownPath := filepath.Join(filepath.Dir(d.Configs[0]), "own-provider.yaml")
	if err := os.WriteFile(ownPath, []byte(own), 0o600); err != nil {
		t.Fatal(err)
	}
	ownCfg := []string{"--config", ownPath, "--group", demo.WikiGroup, "--site", "primary"}
	// The demo's DNS serves the wiki's primary record; its own zone not yet.
	if out, stderr, code = run(t, append([]string{"dns", "check"}, ownCfg...)...); code != 1 || !strings.Contains(out, b.Addr) {
		t.Fatalf("dns check of the wiki on its own empty zone: exit %d %s\n%s, want 1 from %s", code, stderr, out, b.Addr)
	}
	key, err := dnsprovider.NewTSIGKey(dnsservers.KeySHA256, "hmac-sha256", b.Secret)
	if err != nil {
		t.Fatal(err)
	}
	p, err := dnsprovider.NewRFC2136WithKey("example.test.", "_drwatch-wiki", b.Addr, key, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.SetRecords(t.Context(), []dnsprovider.RRset{{Name: "wiki", Type: "A", TTL: 5 * time.Second, Values: []string{demo.WikiPrimaryIP}}}); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = run(t, append([]string{"dns", "check"}, ownCfg...)...)
	if code != 0 || !strings.Contains(out, b.Addr) || strings.Contains(out, d.DNS.Addr()) {
		t.Errorf("dns check of the wiki on its own zone: exit %d %s\n%s, want 0 from %s only", code, stderr, out, b.Addr)
	}
}

// Without a default group (groups and no dns.records), dns check needs
// --group: the cluster's decision would be the first group's, compared
// in the dns section's zone, a mismatch that is no drift. Look-alike: a
// config with a default group, or without groups, needs none.
func TestDNSCheckWithoutADefaultGroupNeedsGroup(t *testing.T) {
	cfg := &config.Config{Groups: []config.Group{{Name: "lms"}, {Name: "wiki"}}}
	err := needsDefaultGroup(cfg)
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--group is required") || !strings.Contains(err.Error(), "groups: lms, wiki") {
		t.Errorf("groups without dns.records: got %v, want a usage error asking for --group and naming lms, wiki", err)
	}
	cfg.DNS.Records = []failover.Record{{Name: "www", Type: "A", TTL: 60}}
	if err := needsDefaultGroup(cfg); err != nil {
		t.Errorf("groups beside dns.records (a default group): got %v, want none", err)
	}
	if err := needsDefaultGroup(&config.Config{}); err != nil {
		t.Errorf("no groups: got %v, want none", err)
	}
}
