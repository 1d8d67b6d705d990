package main

import (
	"errors"
	"fmt"
	"github.com/drwatch/drwatch/watcher"
	"os"
)

// Stamped by `make build` through -ldflags.
var (
	version = "dev"
	commit  = "unknown"
	date    = "unknown"
)

func main() {
	watcher.BuildInfo.Version, watcher.BuildInfo.Commit, watcher.BuildInfo.Date = version, commit, date
	if err := newRootCmd().Execute(); err != nil {
		var s silentError
		if !errors.As(err, &s) {
			fmt.Fprintln(os.Stderr, "drwatch:", err)
		}
		os.Exit(exitCode(err))
	}
}
