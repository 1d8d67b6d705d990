// Package kubetest runs a real kube-apiserver, backed by a real etcd, and on
// request a real kube-controller-manager and kube-scheduler of the same
// release and KWOK's kwok, which plays the nodes' kubelets, for integration
// tests.
//
// The Kubernetes binaries are built once per machine from the Go module
// proxy by test/deps/build-kube.sh, and kwok by test/deps/build-kwok.sh
// (both run by make install-test-deps), and cached under
// ${XDG_CACHE_HOME:-$HOME/.cache}/drwatch/<command>-<version>. etcd comes
// from the Debian package etcd-server. All bind to 127.0.0.1 on free ports
// and keep all state in a temporary directory; Close kills only the
// processes it started (their process groups) and removes that directory.
// A missing binary fails the test, naming how to build it; nothing skips.
//
// [Cluster.Clientset] gives tests client-go's full typed clientset, to build
// and inspect fixtures with; the code under test brings its own client.
//
// Without kwok there is no kubelet: tests create pods with spec.nodeName set
// and write node and pod status through the status subresource themselves.
// A controller manager runs only where a test starts one
// ([Cluster.StartControllerManager]), with only the controllers it names,
// and so does a scheduler ([Cluster.StartScheduler]). With
// [Cluster.StartKwok], the nodes labelled [KwokLabel] have simulated
// kubelets: leases, node status, pod status; [Kwok.StopKubelet] silences
// one, as a partition or a power-off would.
//
// A cluster takes about 3 s to become ready and 250 MB of memory, so start one
// per test package: [New] from TestMain or behind a sync.Once, or [Start] from a
// single test.
//
// It imports no drwatch package outside test/ (its tests may): what the
// tests run against owes nothing to the code under test. Only tests import
// it, never the code of a package outside test/.
package kubetest
