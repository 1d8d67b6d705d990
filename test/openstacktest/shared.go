package openstacktest

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
)

// The Keystone + Octavia stack takes tens of seconds to start: a test
// package shares one, started on first use by Shared and stopped by
// CloseShared in TestMain.
var shared struct {
	once sync.Once
	s    *Stack
	err  error
}

// Shared returns the test binary's stack, starting it on first use. Its
// start-up steps go to stderr (visible with -v): the stack is slow, and a
// slow step is the first thing to look at.
func Shared(t testing.TB) *Stack {
	t.Helper()
	return SharedWith(t, Options{})
}

// SharedWith is Shared with options (Neutron, ...). The first call of the
// test binary starts the stack; later calls get that stack whatever their
// options, so a package passes the same options everywhere.
func SharedWith(t testing.TB, opts Options) *Stack {
	t.Helper()
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
		defer cancel()
		if opts.Logger == nil {
			opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
		}
		shared.s, shared.err = New(ctx, opts)
	})
	if shared.err != nil {
		t.Fatalf("openstack stack: %v", shared.err)
	}
	return shared.s
}

// CloseShared stops the shared stack, if one was started. Call it from
// TestMain after m.Run.
func CloseShared() {
	if shared.s != nil {
		shared.s.Close()
	}
}
