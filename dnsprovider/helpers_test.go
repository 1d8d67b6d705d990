package dnsprovider_test

import (
	"fmt"
	"net"
	"strconv"
	"testing"
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

func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }
