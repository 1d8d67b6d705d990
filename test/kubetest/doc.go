// Package kubetest runs a real kube-apiserver, backed by a real etcd, for
// integration tests.
//
// The API server binary is built once per machine from the Go module proxy by
// test/deps/build-kube-apiserver.sh (make install-test-deps) and cached under
// ${XDG_CACHE_HOME:-$HOME/.cache}/drwatch/kube-apiserver-<version>. etcd comes
// from the Debian package etcd-server. Both bind to 127.0.0.1 on free ports and
// keep all state in a temporary directory; Close kills only the processes it
// started (their process groups) and removes that directory.
//
// There is no kubelet, scheduler or controller manager: tests create pods with
// spec.nodeName set and write node and pod status through the status
// subresource themselves.
//
// A cluster takes about 3 s to become ready and 250 MB of memory, so start one
// per test package: [New] from TestMain or behind a sync.Once, or [Start] from a
// single test.
package kubetest
