package field

import (
	"slices"
	"testing"
)

func TestHostPort(t *testing.T) {
	tests := []struct {
		val  string
		want []string
	}{
		{"ns1.example.net:53", nil},
		{"10.0.0.1:7400", nil},
		{"[2001:db8::1]:53", nil},
		{" ", []string{"addr: required"}},
		{"host", []string{`addr: "host" is not host:port`}},
		{":53", []string{`addr: ":53" has no host; bind an explicit address`}},
		{"h:0", []string{`addr: port "0" is not 1-65535`}},
		{":http", []string{`addr: ":http" has no host; bind an explicit address`, `addr: port "http" is not 1-65535`}},
	}
	for _, tt := range tests {
		var errs Errors
		errs.HostPort("addr", tt.val)
		var got []string
		for _, e := range errs {
			got = append(got, e.Error())
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("HostPort(%q): got %q, want %q", tt.val, got, tt.want)
		}
	}
}
