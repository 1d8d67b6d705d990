package dnsprovider_test

import (
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"
)

func port(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("split %q: %v", addr, err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

// eventually polls cond until it holds or d passes.
func eventually(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }
