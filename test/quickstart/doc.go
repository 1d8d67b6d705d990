// Package quickstart runs docs/operations.md's quick start literally, the way
// a new operator would type it: it extracts the fenced code blocks marked
// "sh quickstart…" from the document and runs them in order with bash, with
// the drwatch binary built from this tree first in PATH, against a real BIND9
// (test/dnsservers) and two local HTTPS sites. The document's variable block
// ("sh quickstart-env") is the one thing the test replaces, with its own
// loopback addresses and free ports; the test checks that both name the same
// variables.
//
// Block kinds:
//
//	sh quickstart                    run once with bash -euo pipefail; must exit 0
//	sh quickstart-daemons            each line is a long-running process (a terminal)
//	sh quickstart-stop               Ctrl-C (SIGINT) in the terminals running these lines
//	sh quickstart-poll [CONDITION]   run until it exits 0 and its output shows CONDITION:
//	                                 none (a leader, both sites UP), no-leader, backup-active
//	sh quickstart-env                the operator's variables; replaced by the test's
//
// Each block runs in a fresh bash with the same environment, so a block may
// not rely on a variable or function another block defined.
//
// It checks the product from outside, so it never imports cmd/drwatch/node
// or cmd/drwatch/demo: it runs the binary and reads what it prints and
// serves.
package quickstart
