package quickstart

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// make test-unit promises no real servers; this package runs BIND9
		// and three watchers, so it sits that loop out (make test runs it),
		// as test/e2e does.
		fmt.Println("test/quickstart: not run under -short (real processes and servers; make test runs them)")
		os.Exit(0)
	}
	os.Exit(m.Run())
}
