// Package kubeapi is the Kubernetes client of drwatch's repairs
// (executor/remediate/...) and of the cluster-health monitor
// (monitor/clusterhealth): client-go's REST client (its transport, TLS,
// authentication, QPS limits, timeouts and error types) under a scheme that
// holds only the API groups drwatch calls (core/v1, apps/v1 with
// autoscaling/v1 for the scale subresource, policy/v1, discovery/v1) and
// only the verbs it uses.
//
// It exists for the node's memory. client-go's typed clientset
// (k8s.io/client-go/kubernetes) imports a client for every API group, and
// each of those imports k8s.io/client-go/kubernetes/scheme, whose package
// initialisation registers all of k8s.io/api's groups: several MiB of the
// binary's pages touched at start and kept resident by every watcher,
// which calls a handful of resources. The accessors keep the clientset's
// shapes (c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})), so code
// reads as it would with client-go, and errors are client-go's: an API
// error is a *errors.StatusError that apierrors.IsNotFound, IsConflict and
// the rest recognise.
//
// Tests may still build fixtures with the full clientset; a test in
// test/importrules keeps k8s.io/client-go/kubernetes and its scheme out
// of every package's code.
//
// It is a leaf (internal/): it imports no package of the module, so the
// repairs and the monitor share it without either importing the other.
// Its tests run against a real kube-apiserver (test/kubetest).
package kubeapi
