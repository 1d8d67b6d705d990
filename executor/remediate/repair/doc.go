// Package repair is the extension point for repairs: what a repair
// declares about itself ([Repair]), what it is built from ([Env]) and the
// one loop that builds the enabled ones ([Assemble]).
//
// Each repair package owns its config section type (a [Section]: yaml,
// doc and default tags, Validate, and a [Deriver] for defaults that
// depend on other fields) and declares one [Repair] value per repair it
// holds, bound to that type with [For]: its name, the path of its settings
// under remediations:, the clients it needs and a Build function that
// takes the section. A repair whose actions disrupt nodes also says which
// site's cluster its section makes it disrupt ([Disrupting]), so that the
// config can refuse two runners disrupting one cluster without building
// anything. The sections and the list of every repair sit in one
// file of package executor/remediate/all, above the repairs; that package
// also builds the clients once per node and calls [Assemble], which finds
// each repair's section by its key ([SectionOf]). The runner, drill
// readiness, `drwatch remediate plan` and the configuration reference all
// go through it, so a new repair touches its own package, that file (its
// section's line and its repair's line) and the regenerated
// docs/configuration.md.
//
// Package repair sits between the runner (executor/remediate) and the
// repair packages: it imports no repair, and no repair imports the list.
package repair
