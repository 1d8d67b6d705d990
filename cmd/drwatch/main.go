package main

import (
	"errors"
	"fmt"
	"github.com/drwatch/drwatch/cmd/drwatch/node"
	"os"
)

// Stamped by `make build` through -ldflags.
var (
	version = "dev"
	commit  = "unknown"
	date    = "unknown"
)

func main() {
	node.BuildInfo.Version, node.BuildInfo.Commit, node.BuildInfo.Date = version, commit, date
	if err := newRootCmd().Execute(); err != nil {
		var s silentError
		if !errors.As(err, &s) {
			fmt.Fprintln(os.Stderr, "drwatch:", err)
		}
		os.Exit(exitCode(err))
	}
}
