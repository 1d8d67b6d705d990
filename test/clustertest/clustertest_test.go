package clustertest

import (
	"context"
	"slices"
	"testing"
	"time"
)

func TestClusterReplicatesAndRestarts(t *testing.T) {
	c := New(t, 3, Options{})
	l := c.Leader(30 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := c.Follower(l)
	if _, _, err := f.Node.Propose(ctx, []byte("x")); err != nil {
		t.Fatalf("propose: %v", err)
	}
	c.Stop(f)
	c.Start(f)
	if err := f.Node.Barrier(ctx); err != nil {
		t.Fatalf("barrier: %v", err)
	}
	if got := f.SM.(*List).Items(); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("restarted follower: got %v, want [x]", got)
	}
}
