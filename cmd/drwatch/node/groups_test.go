package node

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/cmd/drwatch/config"
	"github.com/drwatch/drwatch/dnsprovider"
)

// groupsParts is the parts of a node whose config is the config
// package's testdata/groups.yaml, with a TSIG key file of its own.
func groupsParts(t *testing.T) *parts {
	t.Helper()
	b, err := os.ReadFile("../config/testdata/groups.yaml")
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(t.TempDir(), "tsig.key")
	if err := os.WriteFile(key, []byte(base64.StdEncoding.EncodeToString([]byte("node-groups-test-secret-01234567"))), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("groups.yaml", []byte(strings.Replace(string(b), "/etc/drwatch/tsig.key", key, 1)), config.Options{SkipFileChecks: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := newParts(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Each failover group of the config gets its own provider, in its own
// zone and fenced on its own record, and a verifier of its zone: the
// dns section's when the zone is the same, one of its own otherwise.
func TestEachGroupWritesThroughItsOwnFencedProvider(t *testing.T) {
	p := groupsParts(t)
	if err := p.buildDNS(); err != nil {
		t.Fatal(err)
	}
	if err := p.buildGroupDNS(); err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{"lms": {"example.org.", "_drwatch-lms"}, "wiki": {"example.com.", "_drwatch-wiki"}}
	if len(p.groups) != len(want) {
		t.Fatalf("got %d group providers, want %d", len(p.groups), len(want))
	}
	for _, g := range p.groups {
		cas, ok := g.DNS.(dnsprovider.CompareAndSwapper)
		if !ok {
			t.Fatalf("group %s: got a %T, want a compare-and-swap provider", g.Name, g.DNS)
		}
		if got := [2]string{cas.Zone(), cas.FenceName()}; got != want[g.Name] {
			t.Errorf("group %s: got zone and fence %v, want %v", g.Name, got, want[g.Name])
		}
		if sameZone := g.Name == "lms"; (g.Verifier == p.verifier) != sameZone {
			t.Errorf("group %s: verifier shared with the dns section: %v, want %v", g.Name, g.Verifier == p.verifier, sameZone)
		}
	}
	// The default group's provider is the dns section's, on its own fence.
	if cas, ok := p.dns.(dnsprovider.CompareAndSwapper); !ok || cas.FenceName() != "_drwatch" {
		t.Errorf("dns section's provider: got %T, want one fenced on _drwatch", p.dns)
	}
}

// The node's scheduler runs the union of the groups' probes: region-kube,
// which both groups name on the primary, once per round.
func TestSharedProbeRunsOncePerRound(t *testing.T) {
	p := groupsParts(t)
	if err := p.buildProbes(); err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for _, r := range p.sched.RunOnce(t.Context()).Results {
		runs[r.Site+"/"+r.Probe]++
	}
	wantRuns := map[string]int{"primary/lms": 1, "primary/region-kube": 1, "primary/wiki": 1, "backup/lms": 1, "backup/wiki": 1}
	if len(runs) != len(wantRuns) {
		t.Errorf("one round ran %v, want %v", runs, wantRuns)
	}
	for k, n := range wantRuns {
		if runs[k] != n {
			t.Errorf("one round ran %s %d times, want %d (all: %v)", k, runs[k], n, runs)
		}
	}
}

// A group's own provider that cannot be built names its own field, at the
// group's path, never the dns section's; the dns section's still builds.
func TestGroupProviderErrorNamesTheGroupsField(t *testing.T) {
	p := groupsParts(t)
	wiki := &p.c.Groups[1].DNS
	wiki.Provider = dnsprovider.NamePowerDNS
	wiki.Sections = dnsprovider.Sections{PowerDNS: &dnsprovider.PowerDNSConfig{URL: "http://127.0.0.1:1", APITokenFile: filepath.Join(t.TempDir(), "missing")}}
	if err := p.buildDNS(); err != nil {
		t.Fatal(err)
	}
	err := p.buildGroupDNS()
	if err == nil || !strings.Contains(err.Error(), "groups[wiki].dns.powerdns.api_token_file: ") || strings.Contains(err.Error(), " dns.powerdns") {
		t.Errorf("got %v, want an error naming groups[wiki].dns.powerdns.api_token_file", err)
	}
}
