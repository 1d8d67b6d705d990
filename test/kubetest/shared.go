package kubetest

import (
	"context"
	"sync"
	"testing"
	"time"
)

// A kube-apiserver takes seconds to start: a test package shares one,
// started on first use by Shared and stopped by CloseShared in TestMain.
var shared struct {
	once sync.Once
	c    *Cluster
	err  error
}

// Shared returns the test binary's cluster, starting it on first use. It
// fails t (naming make install-test-deps) when the cluster cannot start.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.c, shared.err = New(ctx, Options{})
	})
	if shared.err != nil {
		t.Fatalf("kube-apiserver: %v", shared.err)
	}
	return shared.c
}

// CloseShared stops the shared cluster, if one was started. Call it from
// TestMain after m.Run.
func CloseShared() {
	if shared.c != nil {
		shared.c.Close()
	}
}
