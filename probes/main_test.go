package probes

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/kubetest"
	"github.com/drwatch/drwatch/test/openstacktest"
)

// The real servers are heavy (a kube-apiserver, a whole Keystone + Octavia
// stack), so each starts at most once per test binary, on first use, and
// TestMain stops them after every test ran.
var (
	kubeOnce    sync.Once
	kubeCluster *kubetest.Cluster
	kubeErr     error

	octaviaOnce  sync.Once
	octaviaStack *openstacktest.Stack
	octaviaErr   error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if kubeCluster != nil {
		kubeCluster.Close()
	}
	if octaviaStack != nil {
		octaviaStack.Close()
	}
	os.Exit(code)
}

// kubeShared returns the package's kube-apiserver, starting it on first use.
func kubeShared(t *testing.T) *kubetest.Cluster {
	t.Helper()
	kubeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		kubeCluster, kubeErr = kubetest.New(ctx, kubetest.Options{})
	})
	if kubeErr != nil {
		t.Fatalf("kube-apiserver: %v", kubeErr)
	}
	return kubeCluster
}

// octaviaShared returns the package's Keystone + Octavia stack, starting it
// on first use.
func octaviaShared(t *testing.T) *openstacktest.Stack {
	t.Helper()
	octaviaOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), openstacktest.StartTimeout)
		defer cancel()
		// Start-up steps go to stderr, visible with -v: the stack is slow
		// and a slow step is the first thing to look at.
		logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
		octaviaStack, octaviaErr = openstacktest.New(ctx, openstacktest.Options{Logger: logger})
	})
	if octaviaErr != nil {
		t.Fatalf("openstack stack: %v", octaviaErr)
	}
	return octaviaStack
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
