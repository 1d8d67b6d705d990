package e2e

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// make test-unit promises no real servers; the whole package is
		// real processes, so it sits that loop out (make test runs it).
		fmt.Println("test/e2e: not run under -short (real processes and servers; make test runs them)")
		os.Exit(0)
	}
	code := m.Run()
	RemoveBinary()
	os.Exit(code)
}
