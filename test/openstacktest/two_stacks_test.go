package openstacktest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
)

// Two test runs on one machine (helpers in separate worktrees, or two
// packages of one `go test ./...`) start their stacks at the same moment.
// Every server a stack starts is private to it (ports reserved
// machine-wide, its own epmd, Erlang cookie, sockets and state), so both
// come up and each serves its own load balancers, which need RabbitMQ.
func TestTwoStacksStartTogetherAndServe(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two real OpenStack control planes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	stacks := make([]*Stack, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range stacks {
		wg.Go(func() {
			logger := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("stack", i)
			stacks[i], errs[i] = New(ctx, Options{Logger: logger})
		})
	}
	wg.Wait()
	for i, s := range stacks {
		if s != nil {
			t.Cleanup(s.Close)
		}
		if errs[i] != nil {
			t.Fatalf("stack %d of two started together: %v", i, errs[i])
		}
	}
	if stacks[0].AuthURL == stacks[1].AuthURL || stacks[0].Dir == stacks[1].Dir {
		t.Fatalf("the stacks share an address or a directory: %s %s, %s %s",
			stacks[0].AuthURL, stacks[0].Dir, stacks[1].AuthURL, stacks[1].Dir)
	}
	ids := make([]string, 2)
	for i, s := range stacks {
		wg.Go(func() {
			ids[i], errs[i] = s.CreateLB(ctx, fmt.Sprintf("lb-of-stack-%d", i))
		})
	}
	wg.Wait()
	for i, s := range stacks {
		if errs[i] != nil {
			t.Fatalf("stack %d: %v", i, errs[i])
		}
		// Each stack knows its own load balancer and not the other's.
		if _, err := s.LBStatus(ctx, ids[i]); err != nil {
			t.Errorf("stack %d lost its own load balancer: %v", i, err)
		}
		if _, err := s.LBStatus(ctx, ids[1-i]); err == nil {
			t.Errorf("stack %d serves the other stack's load balancer %s", i, ids[1-i])
		}
	}
}
