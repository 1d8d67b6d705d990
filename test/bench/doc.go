// Package bench keeps the README's table of end-to-end benchmark results
// in step with the JSON the benchmarks write to results/ (test/e2e's
// BenchmarkPeerPowerDNS, BenchmarkFailoverDeploySettings,
// BenchmarkFailoverOverFloor, BenchmarkCostPerNode and BenchmarkFailoverGroups). Its test renders
// the table from the files and fails when README.md holds another one;
// `go test ./test/bench -update` (make bench runs it) rewrites the README
// between its markers.
//
// It has no code besides its test, and imports no drwatch package.
package bench
