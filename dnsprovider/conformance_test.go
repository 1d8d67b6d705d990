package dnsprovider_test

import (
	"os"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/dnsprovider/dnstest"
	"github.com/drwatch/drwatch/dnsprovider/providertest"
)

const (
	testZone   = "example.test."
	testKey    = "drwatch-key."
	testSecret = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMzQ=" // test-only key
	wrongKey   = "d3Jvbmctd3Jvbmctd3Jvbmctd3Jvbmctd3JvbmctMTI=" // test-only wrong secret
)

// embedded is the embedded server shared by this package's tests.
var embedded *dnstest.Server

func TestMain(m *testing.M) {
	s, err := dnstest.Start("127.0.0.1:0", testZone,
		dnstest.Key{Name: testKey, Algorithm: "hmac-sha256", Secret: testSecret},
		dnstest.Key{Name: "drwatch-512.", Algorithm: "hmac-sha512", Secret: testSecret})
	if err != nil {
		panic("start embedded dns server: " + err.Error())
	}
	embedded = s
	code := m.Run()
	s.Close()
	os.Exit(code)
}

func newEmbeddedProvider(t *testing.T, fence string, wrong bool) dnsprovider.Provider {
	return newEmbeddedProviderKey(t, testKey, "hmac-sha256", fence, wrong)
}

func newEmbeddedProviderKey(t *testing.T, keyName, alg, fence string, wrong bool) dnsprovider.Provider {
	t.Helper()
	secret := testSecret
	if wrong {
		secret = wrongKey
	}
	key, err := dnsprovider.NewTSIGKey(keyName, alg, secret)
	if err != nil {
		t.Fatalf("key: %v", err)
	}
	p, err := dnsprovider.NewRFC2136WithKey(testZone, fence, embedded.Addr(), key, 5*time.Second, nil)
	if err != nil {
		t.Fatalf("NewRFC2136WithKey: %v", err)
	}
	return p
}

func TestConformanceEmbedded(t *testing.T) {
	providertest.Run(t, func(t *testing.T) providertest.Target {
		return providertest.Target{
			Name:   "embedded",
			Zone:   testZone,
			DNS:    embedded.Addr(),
			New:    newEmbeddedProvider,
			Verify: dnsprovider.VerifyConfig{Resolver: embedded.Addr(), Port: port(t, embedded.Addr())},
		}
	})
}

func TestConformanceEmbeddedSHA512(t *testing.T) {
	providertest.Run(t, func(t *testing.T) providertest.Target {
		return providertest.Target{
			Name: "embedded-sha512",
			Zone: testZone,
			DNS:  embedded.Addr(),
			New: func(t *testing.T, fence string, wrong bool) dnsprovider.Provider {
				return newEmbeddedProviderKey(t, "drwatch-512.", "hmac-sha512", fence, wrong)
			},
			Verify: dnsprovider.VerifyConfig{Servers: []string{embedded.Addr()}},
		}
	})
}
