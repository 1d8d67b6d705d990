// Package importrules holds drwatch's package map as one table and checks
// every package of the module against it with `go list`. Each top-level
// folder is a layer and every import points down: the leaves (internal/)
// import nothing of the module above them; the decision core (failover/)
// imports the standard library and two leaves only, and no network client;
// the parts (probes/, dnsprovider/, cluster/) never import the core or each
// other; the read-only monitors (monitor/) never import the leader's
// executors (executor/), which may read their findings; neither imports
// the node runtime (watcher/), which never imports the shell (cmd/); no library package imports cmd/...; no package outside
// test/ imports a test helper from its code; and no package's code outside
// test/ links client-go's typed clientset or discovery, whose scheme
// registers every API group (the node calls the cluster through
// internal/kubeapi). The comment on the table says which layer each folder
// is. Each package's doc.go says the same rule in words.
//
// It sits in test/ rather than beside any one package because its rows
// speak of all of them, and its test lists the whole module, which no
// package's own edit-compile loop should wait for. A new package gets one
// row (TestRulesNameEveryPackage asks for it); a row that names a package
// that does not exist fails.
//
// It has no code besides its test, and imports no drwatch package.
package importrules
