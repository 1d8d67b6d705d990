package config

import (
	"regexp"
	"strings"
	"testing"
	"time"
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
