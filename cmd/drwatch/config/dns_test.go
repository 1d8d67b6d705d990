package config

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/reconcile"
)

// One RFC 2136 exchange may take at most a probe interval, within 1s..5s:
// a query lost while the server is down must not delay the retry after it
// returns. The loader derives it from policy.interval.
func TestRFC2136ExchangeTimeoutFollowsInterval(t *testing.T) {
	policy := regexp.MustCompile(`(?m)^policy: .*$`)
	for _, tt := range []struct {
		interval, timeout string
		want              time.Duration
	}{
		{"2s", "1500ms", 2 * time.Second},
		{"10s", "1500ms", 5 * time.Second},
		{"500ms", "400ms", time.Second},
	} {
		text := policy.ReplaceAllString(validYAML(t), "policy: { interval: "+tt.interval+", timeout: "+tt.timeout+" }")
		c, ps := loadString(t, text)
		if ps != nil {
			t.Fatalf("interval %s: got problems:\n%v", tt.interval, ps)
		}
		if got := c.DNS.RFC2136.Timeout; got != tt.want {
			t.Errorf("interval %s: got rfc2136 exchange timeout %s, want %s", tt.interval, got, tt.want)
		}
	}
}

// The file is at least as strict as the replicated policy: an AAAA value
// that is an IPv4-mapped address (an A record's address) is refused at
// validation, not first when the node starts and the policy refuses it.
func TestAAAARefusesIPv4MappedAddress(t *testing.T) {
	text := strings.Replace(validYAML(t), "backup: [198.51.100.10] }", "backup: [198.51.100.10] }\n    - { name: v6, type: AAAA, ttl: 60, primary: [\"::ffff:192.0.2.1\"], backup: [\"2001:db8::1\"] }", 1)
	_, ps := loadString(t, text)
	want := `dns.records[v6].primary: "::ffff:192.0.2.1" is not an IPv6 address`
	for _, p := range ps {
		if strings.HasSuffix(p.String(), want) {
			return
		}
	}
	t.Errorf("got problems %v, want %q", ps, want)
}

// dns.break_glass defaults max_age to 72h and refuses a non-positive one;
// its key file is read by Key, whose errors name the field and never the
// path nor the contents.
func TestBreakGlassSection(t *testing.T) {
	c, ps := loadString(t, validYAML(t))
	if ps != nil {
		t.Fatal(ps)
	}
	if c.DNS.BreakGlass.MaxAge != 72*time.Hour || c.DNS.BreakGlass.KeyFile != "" {
		t.Errorf("got %+v, want max_age 72h and no key file", c.DNS.BreakGlass)
	}
	if k, err := c.DNS.BreakGlass.Key(); k != nil || err != nil {
		t.Errorf("no key file: got %v %v, want nil, nil", k, err)
	}
	text := strings.Replace(validYAML(t), "  zone: example.org.", "  zone: example.org.\n  break_glass: { max_age: 0s }", 1)
	if _, ps := loadString(t, text); ps == nil || !strings.Contains(ps.Error(), "dns.break_glass.max_age: 0s must be > 0") {
		t.Errorf("max_age 0s: got %v, want it refused by path", ps)
	}

	dir := t.TempDir()
	for _, tc := range []struct {
		name, content string
		want          error
	}{
		{"good", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n", nil},
		{"short", "c2VjcmV0LXZhbHVl\n", reconcile.ErrBadBreakGlassKey},
	} {
		path := filepath.Join(dir, tc.name)
		if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		key, err := BreakGlass{KeyFile: path}.Key()
		if !errors.Is(err, tc.want) || (tc.want == nil && len(key) != 32) {
			t.Errorf("%s: got %d bytes, %v; want %v", tc.name, len(key), err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "c2VjcmV0")) {
			t.Errorf("%s: error %q quotes the path or the file", tc.name, err)
		}
	}
	_, err := BreakGlass{KeyFile: filepath.Join(dir, "s3cret-pasted-here")}.Key()
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "dns.break_glass.key_file: no such file") {
		t.Errorf("missing file: got %v, want the field and the problem, not the value", err)
	}
}
