// Command drwatch is the out-of-cluster disaster-recovery failover service.
package main

import (
	"errors"
	"fmt"
	"os"
)

// Stamped by `make build` through -ldflags.
var (
	version = "dev"
	commit  = "unknown"
	date    = "unknown"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		var s silentError
		if !errors.As(err, &s) {
			fmt.Fprintln(os.Stderr, "drwatch:", err)
		}
		os.Exit(exitCode(err))
	}
}
