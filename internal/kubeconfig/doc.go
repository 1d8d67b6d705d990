// Package kubeconfig builds a Kubernetes client configuration from the
// kubeconfig file a config field names, for the probes and the repairs
// alike. The file is read through internal/regularfile (a regular file of
// at most 1 MiB), and errors name the field, never the path or the file's
// content: a kubeconfig holds credentials, and its parser quotes what it
// cannot decode.
//
// It also declares the remediations.kubernetes cluster list (Sites, one
// Cluster per site: kubeconfig file, context and node disruption budget,
// with their defaults and rules) and its connection (Cluster.RESTConfig).
// The repairs (executor/remediate/...) act on those clusters and the
// cluster health monitor (monitor/clusterhealth) reads them; a monitor
// never imports an executor, so what both reach the clusters through is a
// leaf below both.
package kubeconfig
