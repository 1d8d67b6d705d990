package node

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/test/clustertest"
	"github.com/drwatch/drwatch/watcher"
)

// A loop that never ends after its context is cancelled no longer holds
// Shutdown for ever: past stopWait it is logged and left behind, and the
// cluster node still stops (its port is free again). A loop that ends is
// waited for, and nothing is logged: the look-alike.
func TestShutdownAbandonsALoopThatNeverEnds(t *testing.T) {
	for _, stuck := range []bool{true, false} {
		name := "loop ends"
		if stuck {
			name = "loop never ends"
		}
		t.Run(name, func(t *testing.T) {
			c := clustertest.New(t, 1, clustertest.Options{})
			c.Leader(30 * time.Second)
			m := c.Members[0]
			var logs bytes.Buffer
			probeCtx, cancel := context.WithCancel(context.Background())
			// Shutdown calls only Stopping on the watcher: a zero one will do.
			n := &Node{WatcherBackend: api.WatcherBackend{Watcher: &watcher.Watcher{}}, cluster: m.Node, probeCancel: cancel,
				log: slog.New(slog.NewTextHandler(&logs, nil)), stopWait: time.Second}
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			n.goFunc(func() {
				<-probeCtx.Done()
				if stuck {
					<-release
				}
			})

			done := make(chan error, 1)
			go func() { done <- n.Shutdown(context.Background()) }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Shutdown: %v", err)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("Shutdown did not return within 60s")
			}
			if got := strings.Contains(logs.String(), "shutdown abandoned a wait"); got != stuck {
				t.Errorf("abandonment logged: %v, want %v; logs:\n%s", got, stuck, logs.String())
			}
			ln, err := net.Listen("tcp", m.Addr)
			if err != nil {
				t.Fatalf("the cluster node's port is still held after Shutdown: %v", err)
			}
			_ = ln.Close()
		})
	}
}
