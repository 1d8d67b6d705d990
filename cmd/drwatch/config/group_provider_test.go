package config

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
)

// wikiDNS is the wiki group's dns section of testdata/groups.yaml.
const wikiDNS = `    dns:
      zone: example.com.
`

// withWikiDNS is groups.yaml with lines added to the wiki group's dns
// section.
func withWikiDNS(t *testing.T, lines string) string {
	t.Helper()
	y := groupsYAML(t)
	if !strings.Contains(y, wikiDNS) {
		t.Fatal("test bug: groups.yaml has no wiki dns section")
	}
	return strings.Replace(y, wikiDNS, wikiDNS+lines, 1)
}

// wikiOnItsOwnServer gives the wiki group an RFC 2136 server and TSIG key
// of its own.
const wikiOnItsOwnServer = `      provider: rfc2136
      rfc2136: { server: "ns1.wiki.example.net:53", key_name: wiki., key_file: /etc/drwatch/wiki-tsig.key }
`

// A group that names a provider of its own writes through it, with that
// provider's defaults, in its zone and fence, verified on its own (the
// zone's NS set, through its server); the group beside it still writes
// through the dns section's. The provider is not replicated: the policy
// hash is the one without it.
func TestGroupWritesThroughAProviderOfItsOwn(t *testing.T) {
	before, ps := loadString(t, groupsYAML(t))
	if ps != nil {
		t.Fatalf("groups.yaml: got problems:\n%v", ps)
	}
	c, ps := loadString(t, withWikiDNS(t, wikiOnItsOwnServer))
	if ps != nil {
		t.Fatalf("wiki on its own server: got problems:\n%v", ps)
	}
	wiki, _ := c.GroupDNS("wiki")
	want := dnsprovider.Config{Provider: "rfc2136", Zone: "example.com.", FenceName: "_drwatch-wiki", Path: "groups[wiki].dns",
		Verify: dnsprovider.VerifyConfig{Timeout: 30 * time.Second},
		Sections: dnsprovider.Sections{RFC2136: &dnsprovider.RFC2136Config{Server: "ns1.wiki.example.net:53", KeyName: "wiki.",
			KeyFile: "/etc/drwatch/wiki-tsig.key", Algorithm: "hmac-sha256", Timeout: 2 * time.Second}}}
	if !reflect.DeepEqual(wiki, want) {
		t.Errorf("GroupDNS(wiki): got %+v (rfc2136 %+v), want %+v (rfc2136 %+v)", wiki, wiki.RFC2136, want, want.RFC2136)
	}
	lms, _ := c.GroupDNS("lms")
	if wantLMS, _ := before.GroupDNS("lms"); !reflect.DeepEqual(lms, wantLMS) {
		t.Errorf("GroupDNS(lms) beside wiki's own provider: got %+v, want %+v", lms, wantLMS)
	}
	if got, want := c.ReplicatedPolicy().Hash(), before.ReplicatedPolicy().Hash(); got != want {
		t.Errorf("policy hash with wiki's own provider: got %s, want %s (the provider is not replicated)", got, want)
	}
	if !c.Groups[1].DNS.OwnVerifier(c.DNS.Config) {
		t.Error("wiki with a provider of its own: OwnVerifier false, want true")
	}
}

// A group without a provider of its own writes through the dns section's
// provider, credentials and verification, exactly: only its zone and
// fence are its own.
func TestGroupWithoutAProviderUsesTheDNSSection(t *testing.T) {
	c, ps := loadString(t, groupsYAML(t))
	if ps != nil {
		t.Fatalf("groups.yaml: got problems:\n%v", ps)
	}
	for _, g := range c.Groups {
		got, _ := c.GroupDNS(g.Name)
		want := c.DNS.Config
		want.Zone, want.FenceName = g.DNS.Zone, g.DNS.FenceName
		if !reflect.DeepEqual(got, want) {
			t.Errorf("GroupDNS(%s): got %+v, want the dns section's %+v in its zone and fence", g.Name, got, want)
		}
		if g.DNS.Verify != nil || g.DNS.Provider != "" || len(g.DNS.Sections.Set()) != 0 {
			t.Errorf("group %s: got provider %q sections %v verify %v, want none of its own", g.Name, g.DNS.Provider, g.DNS.Sections.Set(), g.DNS.Verify)
		}
	}
	if lms := c.Groups[0]; lms.DNS.OwnVerifier(c.DNS.Config) {
		t.Error("lms in the dns section's zone: OwnVerifier true, want the dns section's verifier")
	}
}

// A group's own provider section is checked by the dns section's rules,
// each problem at its full path; a provider section without a provider
// of the group's own is refused, not ignored.
func TestGroupProviderProblemsNameTheirPath(t *testing.T) {
	for _, tc := range []struct {
		name, lines string
		want        []string
	}{
		{"provider without its section", "      provider: rfc2136\n",
			[]string{"groups[wiki].dns.rfc2136: required for provider rfc2136"}},
		{"unknown provider", "      provider: bogus\n",
			[]string{`groups[wiki].dns.provider: "bogus" must be one of`}},
		{"section incomplete", "      provider: rfc2136\n      rfc2136: { key_name: wiki., key_file: /etc/drwatch/wiki-tsig.key }\n",
			[]string{"groups[wiki].dns.rfc2136.server: required"}},
		{"section of another provider", wikiOnItsOwnServer + "      powerdns: { url: \"https://pdns.example.net:8081\", api_token_env: PDNS_TOKEN }\n",
			[]string{"groups[wiki].dns.powerdns: section for provider powerdns"}},
		{"section without a provider", "      rfc2136: { server: \"ns1.wiki.example.net:53\", key_file: /etc/drwatch/wiki-tsig.key }\n",
			[]string{"groups[wiki].dns.rfc2136: section for provider rfc2136, but the group names no provider of its own"}},
		{"bad verify server", wikiOnItsOwnServer + "      verify: { servers: [\"ns1\"] }\n",
			[]string{"groups[wiki].dns.verify.servers[0]: "}},
		{"verify timeout without a provider", "      verify: { timeout: 0s }\n",
			[]string{"groups[wiki].dns.verify.timeout: 0s must be > 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ps := loadString(t, withWikiDNS(t, tc.lines))
			if ps == nil {
				t.Fatalf("got no problem, want %q", tc.want)
			}
			msg := ps.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("got:\n%s\nwant a problem %q", msg, w)
				}
			}
			for _, p := range ps {
				if !strings.HasPrefix(p.Path, "groups[wiki].dns.") {
					t.Errorf("got a problem at %s: %s, want only the group's", p.Path, p.Msg)
				}
			}
		})
	}
}

// A secret pasted into a group's own TSIG key_file is refused by its full
// path and never printed; the group's file fields are checked as the dns
// section's are (a missing file is named).
func TestGroupProviderSecretIsNeverPrinted(t *testing.T) {
	for name, secret := range pastedSecrets {
		y := withWikiDNS(t, strings.Replace(wikiOnItsOwnServer, "/etc/drwatch/wiki-tsig.key", yamlQuote(secret), 1))
		expectSecretRefused(t, name, secret, y, "groups[wiki].dns.rfc2136.key_file")
	}
	_, err := Parse("f.yaml", []byte(withWikiDNS(t, wikiOnItsOwnServer)), Options{})
	if err == nil || !strings.Contains(err.Error(), "groups[wiki].dns.rfc2136.key_file: ") {
		t.Errorf("a group's key file that does not exist: got %v, want it named by groups[wiki].dns.rfc2136.key_file", err)
	}
}

// The two-platform example's commented lines, uncommented, put the wiki
// on a provider of its own in another zone; the other group keeps the
// dns section's.
func TestTwoPlatformExampleWikiOnItsOwnProvider(t *testing.T) {
	b, err := os.ReadFile("../../../deploy/examples/platforms-node-a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	y := string(b)
	for _, line := range []string{"zone: example.com.", "provider: rfc2136", "rfc2136: {", "verify: {"} {
		if !strings.Contains(y, "      # "+line) {
			t.Fatalf("test bug: the example has no commented %q", line)
		}
		y = strings.Replace(y, "      # "+line, "      "+line, 1)
	}
	c, ps := loadString(t, y)
	if ps != nil {
		t.Fatalf("the example with the wiki on its own provider: got problems:\n%v", ps)
	}
	wiki, _ := c.GroupDNS("wiki")
	if wiki.Zone != "example.com." || wiki.RFC2136 == nil || wiki.RFC2136.Server != "ns1.other-dns.example.net:53" || wiki.RFC2136.KeyName != "wiki." ||
		!slices.Equal(wiki.Verify.Servers, []string{"ns1.other-dns.example.net:53"}) {
		t.Errorf("GroupDNS(wiki): got zone %s rfc2136 %+v verify %+v, want its own server and key in example.com.", wiki.Zone, wiki.RFC2136, wiki.Verify)
	}
	if learn, _ := c.GroupDNS("learn"); learn.RFC2136 == nil || learn.RFC2136.Server != "ns1.dns-provider.example.net:53" {
		t.Errorf("GroupDNS(learn): got %+v, want the dns section's server", learn.RFC2136)
	}
}
