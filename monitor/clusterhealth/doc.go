// Package clusterhealth reads, from outside, the Kubernetes conditions that
// precede the failures of seed 004: node pressure conditions, PLEG, Unknown
// nodes, the kubelet's garbage-collection and eviction events, failed volume
// attaches (Multi-Attach), LoadBalancer Services left without an address,
// the Neutron router's route quota, and each cluster's version.
//
// It only reads. Its client refuses every request but GET in the transport,
// so no code path of this package can write to a cluster; its answers feed
// the status page's "Cluster health" section, metrics and alert rules, and
// never a failover decision or a repair.
//
// Every watcher reads both sites itself, on its own schedule, through the
// clusters named in remediations.kubernetes (no second way to reach a
// cluster). Nothing is replicated through Raft: the figures are evidence for
// a human, not state the cluster decides on, and each page says which node
// read them and when. Every read is bounded: a timeout per site, paged lists
// with a cap on items, a cap on each response's bytes, and caps on what is
// kept and shown, so a huge or hostile API answer costs at most those.
//
// It is a monitor (monitor/): it sits below the leader's executors
// (executor/), which may read its findings (the OpenStack repairs build
// its Neutron route-quota reader), and never imports one. It reaches the
// clusters as the repairs do, through the leaves below both: the
// remediations.kubernetes cluster list and its connection
// (internal/kubeconfig) and the Kubernetes client (internal/kubeapi); like
// the repairs it never imports cluster.
package clusterhealth
