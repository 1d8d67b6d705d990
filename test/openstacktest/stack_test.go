package openstacktest

import (
	"os"
	"testing"
)

// The package's tests share one stack with every optional service on:
// each start costs 20-60 s on two cores, and no test here changes what
// another reads (the Nova test stops one of the three computes, which no
// other test uses; the Designate tests each write in their own names or
// zones). Start-up steps go to stderr (-v): the Neutron, Nova, Cinder and
// Designate steps carry the times docs/testing.md quotes.
func stack(t *testing.T) *Stack {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real OpenStack control plane")
	}
	return SharedWith(t, Options{Neutron: true, Nova: true, Cinder: true, Designate: true})
}

func TestMain(m *testing.M) {
	code := m.Run()
	CloseShared()
	os.Exit(code)
}
