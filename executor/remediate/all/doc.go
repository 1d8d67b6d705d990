// Package all lists every repair (registry.go) and builds the enabled ones
// once per node ([Build]). The node's runner, its drill readiness,
// `drwatch remediate plan` and the configuration reference all take the
// repairs from here, so a new repair touches its own package, one line of
// [Repairs], its section of the remediations config (for now still in
// executor/remediate/config.go: the section types there are below the
// repair packages, which import them) and the regenerated
// docs/configuration.md. The declarations themselves are the repair
// packages' (package repair says what one holds).
//
// It sits above every repair package and below the shell (cmd/...).
package all
