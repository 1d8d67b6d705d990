// Package all holds every repair section ([Config], the remediations:
// section of a node's config) and lists every repair ([Repairs]), both in
// registry.go, and builds the enabled ones once per node ([Build]). The
// node's runner, its drill readiness, `drwatch remediate plan`, the config
// loader and the configuration reference all take the repairs and their
// sections from here, so a new repair touches its own package (its
// section type and its declaration), registry.go (the section's line in
// Config, the repair's line in Repairs) and the regenerated
// docs/configuration.md. The section types and declarations themselves are
// the repair packages' (package repair says what one holds).
//
// It sits above every repair package and below the shell (cmd/...).
package all
