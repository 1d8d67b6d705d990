package simdns_test

import (
	"testing"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/dnsprovider/providertest"
	"github.com/drwatch/drwatch/test/sim/simdns"
)

const zone = "example.test."

// TestConformance runs the suite every DNS provider passes against the
// in-memory authority: reads, idempotent set, atomic CAS with a fence, the
// guarded first write, the stale writer, refused credentials (mapped to
// the AuthError BIND's refusal gives) and verification.
func TestConformance(t *testing.T) {
	auth := simdns.New(zone, "")
	providertest.Run(t, func(t *testing.T) providertest.Target {
		return providertest.Target{
			Name: "simdns",
			Zone: zone,
			New: func(t *testing.T, fence string, wrong bool) dnsprovider.Provider {
				if wrong {
					return auth.Client(fence, simdns.Unauthorised)
				}
				return auth.Client(fence)
			},
			Serial: func(*testing.T) uint32 { return auth.Serial() },
			NewVerifier: func(*testing.T, dnsprovider.VerifyConfig) providertest.Verifier {
				return auth.Verifier("")
			},
		}
	})
}
