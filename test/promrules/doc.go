// Package promrules tests what drwatch ships for Prometheus and Grafana
// (deploy/prometheus, deploy/grafana) against promtool and against the
// metric names the code really exports. It has no non-test code.
//
// promtool comes from Debian's prometheus package (test/deps/parts/prometheus.sh);
// when it is missing the tests fail, naming the package.
//
// It reads the metric names from the source, not from a registry it would
// have to build, so it imports no drwatch package.
package promrules
