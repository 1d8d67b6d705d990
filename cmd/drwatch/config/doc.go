// Package config loads and validates drwatch's YAML configuration.
//
// Loading is strict and reports every problem at once: unknown keys, wrong
// types, inline secrets and broken rules each become one [Problem] carrying
// the file, line and column and a field path that names list items by their
// name rather than only their index (sites.primary.probes[lms].timeout).
//
// Any file is survivable: nesting depth ([MaxDepth]) and the size of the
// document once aliases and merge keys are expanded ([MaxValues]) are bounded
// before decoding, a value of the wrong type is reported and replaced by null
// so that it hides no other problem, and a panic in the YAML library becomes
// a problem instead of a crash.
//
// Defaults live in one place: the `default:"..."` struct tags of the types in
// types.go and of the section types their packages own and types.go embeds
// (a probe: probes.Spec; policy: failover.PolicySpec; raft:
// cluster.RaftTiming; dns: dnsprovider.Config and failover.Record).
// docs/configuration.md is generated from the same tags (a test keeps the
// two in step). A section's own rules are its package's, with paths
// relative to the section; this package prefixes them and keeps the rules
// that cross sections (a probe's timeout against policy.interval,
// failback_gate against the probe names) and the checks that named files
// exist.
//
// Secrets are never accepted inline. Fields ending in _file name a file that
// holds the secret; fields ending in _env name an environment variable. No
// secret value ever appears in a Problem, nor does the value of a file
// field ([IsFileKey]): it must be an absolute path, and anything else is
// refused as a likely pasted secret, by its field path only. The files are
// checked (and later read) through internal/regularfile: regular files of
// at most 1 MiB, never a device, FIFO, socket or /proc file.
//
// [Load] is the one loader of every command that takes --config; one that
// needs a single section (remediate plan) sets [Options.Sections] to skip
// the other sections' rules, never the document's shape.
//
// It never imports cmd/drwatch/api, cmd/drwatch/node or cmd/drwatch/demo:
// they build from a Config, not the other way round.
package config
