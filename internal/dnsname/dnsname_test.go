package dnsname

import (
	"fmt"
	"net/netip"
	"testing"
)

func TestAbsolute(t *testing.T) {
	tests := []struct{ name, zone, want string }{
		{"@", "example.org.", "example.org."},
		{"", "example.org.", "example.org."},
		{"LMS", "Example.ORG.", "lms.example.org."},
		{"lms", "example.org", "lms.example.org."},
		{"Lms.Example.Org.", "example.org.", "lms.example.org."},
		{"other.net.", "example.org.", "other.net."},
		{"@", "", ""},
	}
	for _, tt := range tests {
		if got := Absolute(tt.name, tt.zone); got != tt.want {
			t.Errorf("Absolute(%q, %q): got %q, want %q", tt.name, tt.zone, got, tt.want)
		}
	}
}

func TestInZone(t *testing.T) {
	tests := []struct {
		name, zone string
		want       bool
	}{
		{"example.org.", "example.org.", true},
		{"lms.example.org.", "example.org.", true},
		{"a.b.example.org.", "example.org.", true},
		{"badexample.org.", "example.org.", false},
		{"example.net.", "example.org.", false},
		{"anything.", ".", true},
	}
	for _, tt := range tests {
		if got := InZone(tt.name, tt.zone); got != tt.want {
			t.Errorf("InZone(%q, %q): got %v, want %v", tt.name, tt.zone, got, tt.want)
		}
	}
}

func TestIsDomainName(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"example.org.", true},
		{"_dmarc.example.org.", true},
		{"*.example.org.", true},
		{"a-b.example.org.", true},
		{"example.org", false},
		{".", false},
		{"a..b.", false},
		{"-a.example.", false},
		{"a-.example.", false},
		{"a*.example.", false},
		{"a b.example.", false},
		{fmt.Sprintf("%063d.", 0), true},
		{fmt.Sprintf("%064d.", 0), false},
	}
	for _, tt := range tests {
		if got := IsDomainName(tt.s); got != tt.want {
			t.Errorf("IsDomainName(%q): got %v, want %v", tt.s, got, tt.want)
		}
	}
}

func TestValue(t *testing.T) {
	tests := []struct {
		typ, v, want string
		known        bool
	}{
		{"A", "192.0.2.1", "192.0.2.1", true},
		{"a", " 192.0.2.1 ", "192.0.2.1", true},
		{"AAAA", "2001:DB8:0:0:0:0:0:1", "2001:db8::1", true},
		{"AAAA", "::ffff:192.0.2.1", "192.0.2.1", true},
		{"A", "not-an-address", "not-an-address", true},
		{"CNAME", "App.Example.ORG.", "app.example.org.", true},
		{"CNAME", "app.example.org", "app.example.org.", true},
		{"TXT", "Gen=1", "Gen=1", true},
		{"MX", "10 Mail.Example.", "10 Mail.Example.", false},
	}
	for _, tt := range tests {
		got, known := Value(tt.typ, tt.v)
		if got != tt.want || known != tt.known {
			t.Errorf("Value(%q, %q): got %q %v, want %q %v", tt.typ, tt.v, got, known, tt.want, tt.known)
		}
	}
}

func TestSameValues(t *testing.T) {
	tests := []struct {
		typ  string
		a, b []string
		want bool
	}{
		{"AAAA", []string{"2001:db8::1", "2001:db8::2"}, []string{"2001:DB8::2", "2001:db8:0::1"}, true},
		{"CNAME", []string{"app.example.org."}, []string{"APP.Example.Org"}, true},
		{"A", []string{"192.0.2.1"}, []string{"192.0.2.2"}, false},
		{"A", []string{"192.0.2.1"}, []string{"192.0.2.1", "192.0.2.1"}, false},
		{"TXT", []string{"Gen=1"}, []string{"gen=1"}, false},
		{"A", nil, []string{}, true},
	}
	for _, tt := range tests {
		if got := SameValues(tt.typ, tt.a, tt.b); got != tt.want {
			t.Errorf("SameValues(%q, %q, %q): got %v, want %v", tt.typ, tt.a, tt.b, got, tt.want)
		}
	}
}

func TestAddrFits(t *testing.T) {
	tests := []struct {
		typ, addr string
		want      bool
	}{
		{"A", "192.0.2.1", true},
		{"A", "2001:db8::1", false},
		{"A", "::ffff:192.0.2.1", false},
		{"AAAA", "2001:db8::1", true},
		{"aaaa", "2001:db8::1", true},
		{"AAAA", "192.0.2.1", false},
		{"AAAA", "::ffff:192.0.2.1", false},
		{"CNAME", "192.0.2.1", false},
	}
	for _, tt := range tests {
		if got := AddrFits(tt.typ, netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("AddrFits(%q, %s): got %v, want %v", tt.typ, tt.addr, got, tt.want)
		}
	}
}
