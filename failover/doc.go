// Package failover is drwatch's pure decision core: the deterministic state
// machine that the Raft log drives (the FSM's heart).
//
// Watchers report probe rounds as Observe commands; the leader stamps each
// command with its clock (Stamp) and proposes it; every replica applies it
// with Machine.Apply. From the log alone the machine derives per-probe
// rise/fall hysteresis, each node's vote per site, the quorum verdict per
// site and, under the replicated Policy and its safety rules, the Desired DNS
// state with a generation (the log index of the deciding entry) that the
// leader's reconciler writes and reports back with ActionResult.
//
// The package imports only the standard library and pure stdlib-only leaf
// packages: internal/field (the field errors every configuration section
// returns) and internal/dnsname (the DNS name and value rules it shares with
// the providers). It does no I/O, never logs and never reads the clock. Map
// iteration is sorted wherever it reaches output,
// so replicas that applied the same log produce byte-identical snapshots.
// See DESIGN.md for why.
//
// The runtime around the core, which maps a probe round to Observe and runs
// the leader's loops (policy and tick, the reconciler, the remediation
// runner), lives in package watcher, not in cluster: it proposes failover
// commands and reads the machine, and cluster must never import failover
// (test/importrules), so that the Raft plumbing stays ignorant of what it
// replicates. Nor does it live in cmd, so the loops are tested as a library.
// DryRun and WhatIf answer questions ("what would this command do", "what
// if every critical probe of a site failed now") by stepping the same code
// on a copy of the state, so no second set of rules can drift.
//
// It is the core layer (failover/ holds it alone): below it only the leaf
// packages of internal/; beside it the parts (probes, dnsprovider,
// cluster); above it the leader's executors (executor/: the reconciler,
// drills, repairs), the read-only monitors (monitor/) and the runtime
// (watcher/).
//
// The package also owns the `policy:` section of a node's config file
// (PolicySpec): its defaults and rules, and how it becomes the replicated
// Policy.
package failover
