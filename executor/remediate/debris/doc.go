// Package debris holds the cloud-debris remediator (seed 001, the
// Kubernikus deorbiter, with the double check it lacked): after a regional
// meltdown, or when a cluster is torn down, the OpenStack resources its
// cloud provider made stay in the project after their Service or
// PersistentVolume is gone.
//
// Candidates, in one project (project_id, or the credentials' own; every
// resource is checked against it, since admin credentials list them all),
// carry every mark cloud-provider-openstack and Cinder CSI write, each
// naming this cluster (the default name kubernetes, which two clusters of
// a project may share, is refused unless decommissioned):
//   - Octavia load balancers named exactly as cloud-provider-openstack
//     names a Service's, kube_service_<cluster>_<namespace>_<service>,
//     tagged with that name and described "Kubernetes external service
//     <namespace>/<service> from cluster <cluster>".
//     Namespaces and Service names are DNS labels, so cluster k's prefix
//     followed by exactly one underscore is k's alone (never k2's or
//     k_x's). A name of 255 bytes may have been cut and is never matched. A
//     load balancer shared by Services carries one such tag per Service:
//     every one must be absent, and a tag of another cluster makes it none
//     of ours. Only ACTIVE or ERROR ones: PENDING_* is in flux;
//   - the cloud provider's floating IPs on such a load balancer's VIP port
//     (deleted with it unless kept, see below),
//     and those described "Floating IP for Kubernetes external service
//     <namespace>/<service> from cluster <cluster>" that are on no port;
//     after the load balancer is gone, its VIP port when Octavia left it
//     behind (named octavia-lb-<its ID>, owned by Octavia);
//   - Cinder volumes whose metadata cinder.csi.openstack.org/cluster is
//     exactly the CSI cluster, with the PV and PVC marks
//     (csi.storage.k8s.io/pv/name, pvc/name, pvc/namespace), not attached.
//
// Filter: a candidate counts only when its Service (all of them) or its
// PersistentVolume (any phase; by csi.storage.k8s.io/pv/name, else the
// volume's name, and by CSI or in-tree Cinder volume ID) is absent from the
// cluster, read from its kube-apiserver, and no Service refers to it by ID
// or address (any annotation value, spec.loadBalancerIP, ingress IP), or
// the cluster is configured decommissioned. A Kubernetes read error plans
// nothing: fail closed.
//
// What Kubernetes was told to keep stays: an absent PV proves nothing on
// a live cluster. Every Plan records, per volume, the reclaim policy of
// the PV holding it and, per LoadBalancer Service, whether it asks
// loadbalancer.openstack.org/keep-floatingip (both sticky once they say
// keep), in the node's data directory. A volume goes only when its PV was
// seen with Delete, a floating IP only when its Service was seen without
// the annotation; anything else is kept and reported. The record is the
// leader's own, bounded, and not replicated: after a change of leader,
// what the new leader never saw is kept and reported.
//
// Delete and check: Apply rereads the resource, checks the naming,
// project and absence again (the Service or PV by Get, right before the
// delete), deletes it (load balancers with cascade) and polls until the API
// answers 404, for at most delete_timeout. A volume still deleting or
// error_deleting then, or found so for longer than delete_timeout
// (error_deleting at once: Cinder refuses a tenant's second delete), is a
// *StuckError carrying the admin's command: it wraps remediate.ErrNeedsAdmin,
// so the Runner records it and parks the volume under its stable key in
// the replicated history, and no leader retries it.
//
// The Census (every resource of the cluster, and the candidates among
// them) feeds the disruption brake: a rebuilt cluster whose Services are
// not back yet makes every load balancer look orphaned at once, and the
// brake holds that.
//
// Every Plan and Apply authenticates afresh with Keystone. Without a
// network endpoint in the catalog, floating IPs and ports are left alone.
//
// Like every remediation package it never imports cluster.
package debris
