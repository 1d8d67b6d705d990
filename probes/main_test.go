package probes

import (
	"os"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/kubetest"
	"github.com/drwatch/drwatch/test/openstacktest"
)

// The real servers are heavy (a kube-apiserver, a whole Keystone + Octavia
// stack), so each starts at most once per test binary, on first use
// (kubetest.Shared, openstacktest.Shared), and TestMain stops them.
func TestMain(m *testing.M) {
	code := m.Run()
	kubetest.CloseShared()
	openstacktest.CloseShared()
	os.Exit(code)
}

// kubeEventually polls cond until it returns true or d passes. It never
// sleeps longer than the poll interval.
func kubeEventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("got no %s within %v", what, d)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("test ended waiting for %s", what)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
