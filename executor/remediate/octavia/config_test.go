package octavia

import (
	"strings"
	"testing"

	"github.com/drwatch/drwatch/executor/remediate"
)

// TestConfigValidate checks the octavia_stuck_lb rules of remediate.Config.
func TestConfigValidate(t *testing.T) {
	on := remediate.Settings{Mode: remediate.ModeOn}
	for _, tc := range []struct {
		name string
		cfg  remediate.OctaviaStuckLBConfig
		want string // substring of the problems as the config file shows them; empty means valid
	}{
		{"off needs nothing", remediate.OctaviaStuckLBConfig{}, ""},
		{"on with cloud", remediate.OctaviaStuckLBConfig{Settings: on, OpenStackAuth: remediate.OpenStackAuth{Cloud: "c"}}, ""},
		{"on without credentials", remediate.OctaviaStuckLBConfig{Settings: on}, "remediations.octavia_stuck_lb.cloud: cloud or auth_url must be set"},
		{"both", remediate.OctaviaStuckLBConfig{OpenStackAuth: remediate.OpenStackAuth{Cloud: "c", AuthURL: "https://k/v3"}}, "auth_url: set either cloud or application credentials, not both"},
		{"auth url without files", remediate.OctaviaStuckLBConfig{Settings: on, OpenStackAuth: remediate.OpenStackAuth{AuthURL: "https://k/v3"}}, "application_credential_secret_file: required"},
		{"bad auth url", remediate.OctaviaStuckLBConfig{Settings: on, OpenStackAuth: remediate.OpenStackAuth{AuthURL: "k", ApplicationCredentialIDFile: "i", ApplicationCredentialSecretFile: "s"}}, "must be an http(s) URL"},
		{"ca with cloud", remediate.OctaviaStuckLBConfig{OpenStackAuth: remediate.OpenStackAuth{Cloud: "c", CAFile: "/ca"}}, "ca_file: only with auth_url"},
		{"clouds file alone", remediate.OctaviaStuckLBConfig{OpenStackAuth: remediate.OpenStackAuth{CloudsFile: "/c.yaml"}}, "clouds_file: needs cloud"},
		{"empty lb", remediate.OctaviaStuckLBConfig{OpenStackAuth: remediate.OpenStackAuth{Cloud: "c"}, LoadBalancers: []string{""}}, "load_balancers[0]: must not be empty"},
		{"repeated lb", remediate.OctaviaStuckLBConfig{OpenStackAuth: remediate.OpenStackAuth{Cloud: "c"}, LoadBalancers: []string{"a", "a"}}, "load_balancers[1]: \"a\" is listed twice"},
		{"bad mode", remediate.OctaviaStuckLBConfig{Settings: remediate.Settings{Mode: "maybe"}}, "remediations.octavia_stuck_lb.mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := remediate.Config{OctaviaStuckLB: tc.cfg}.Defaulted().Validate()
			shown := errs.Under(remediate.Section).Err()
			switch {
			case tc.want == "" && shown != nil:
				t.Fatalf("got %v, want valid", shown)
			case tc.want != "" && (shown == nil || !strings.Contains(shown.Error(), tc.want)):
				t.Fatalf("got %v, want an error containing %q", shown, tc.want)
			}
			for _, e := range errs {
				if !strings.HasPrefix(e.Path, "octavia_stuck_lb.") {
					t.Errorf("got a problem at %q, want its path relative to the remediations section (octavia_stuck_lb.…)", e.Path)
				}
			}
		})
	}
	if d := (remediate.Config{}).Defaulted().OctaviaStuckLB; d.PendingTimeout != remediate.DefaultOctaviaPendingTimeout || d.Mode != remediate.ModeOff {
		t.Fatalf("got defaults %+v, want pending_timeout 10m and mode off", d)
	}
}
