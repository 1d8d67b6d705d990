// Package repair is the extension point for repairs: what a repair
// declares about itself ([Repair]), what it is built from ([Env]) and the
// one loop that builds the enabled ones ([Assemble]).
//
// Each repair package declares one [Repair] value per repair it holds:
// its name, the key of its section under remediations:, the clients it
// needs and a Build function. The list of every repair sits in one file
// of package executor/remediate/all, above the repairs; that package also
// builds the clients once per node and calls [Assemble]. The runner, drill
// readiness, `drwatch remediate plan` and the configuration reference all
// go through it, so a new repair touches its own package, one line of that
// list, its section of remediate.Config and the regenerated
// docs/configuration.md.
//
// Package repair sits between the runner (executor/remediate) and the
// repair packages: it imports no repair, and no repair imports the list.
package repair
