package remediate

import (
	"slices"
	"testing"

	"github.com/drwatch/drwatch/internal/field"
)

// A repair's OpenStack credentials follow the octavia probe's rules: once
// any of them is set, they must be complete, even while the repair is off
// (a half-filled block is a mistake, found before the repair is turned
// on). An off repair with no credentials, or with complete ones, is left
// alone.
func TestOpenStackCredentialsSetHalfwayAreRefusedEvenWhenOff(t *testing.T) {
	half := OpenStackAuth{ApplicationCredentialIDFile: "/etc/drwatch/ac-id"}
	for _, tc := range []struct {
		name string
		c    Config
		want field.Errors
	}{
		{"off, half set", Config{OctaviaStuckLB: OctaviaStuckLBConfig{OpenStackAuth: half}, OpenStack: OpenStackClusterConfig{OpenStackAuth: half},
			CloudDebris: CloudDebrisConfig{OpenStackAuth: half, ClusterName: "k"}}, field.Errors{
			{Path: "octavia_stuck_lb.auth_url", Msg: "required"},
			{Path: "octavia_stuck_lb.application_credential_secret_file", Msg: "required"},
			{Path: "openstack.auth_url", Msg: "required"},
			{Path: "openstack.application_credential_secret_file", Msg: "required"},
			{Path: "cloud_debris.auth_url", Msg: "required"},
			{Path: "cloud_debris.application_credential_secret_file", Msg: "required"},
		}},
		{"off, none", Config{}, nil},
		{"off, complete", Config{OctaviaStuckLB: OctaviaStuckLBConfig{OpenStackAuth: OpenStackAuth{Cloud: "c"}},
			OpenStack:   OpenStackClusterConfig{OpenStackAuth: OpenStackAuth{AuthURL: "https://k/v3", ApplicationCredentialIDFile: "/i", ApplicationCredentialSecretFile: "/s"}},
			CloudDebris: CloudDebrisConfig{OpenStackAuth: OpenStackAuth{Cloud: "c"}, ClusterName: "k"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.Defaulted().Validate(); !slices.Equal(got, tc.want) {
				t.Errorf("got\n%v\nwant\n%v", got, tc.want)
			}
		})
	}
}
