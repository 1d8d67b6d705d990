package debris

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The names and metadata below are cloud-provider-openstack's
// (k8s.io/cloud-provider-openstack, pkg/openstack/loadbalancer.go and
// pkg/csi/cinder/controllerserver.go). A resource is the cluster's only when
// it carries every one of them exactly, for this cluster: a load balancer
// its name, its description and the tag with its name; a floating IP its
// description; a volume the CSI cluster and the PV and PVC it was made for.
const (
	// lbPrefix starts a Service load balancer's name:
	// kube_service_<cluster>_<namespace>_<name>, cut to 255 bytes.
	lbPrefix = "kube_service_"
	// maxNameLen is where cloud-provider-openstack cuts names: a name this
	// long may have lost its end, so it names no Service for sure.
	maxNameLen = 255
	// fipPrefix and fipInfix make the floating IP description
	// "Floating IP for Kubernetes external service <ns>/<name> from cluster <cluster>".
	fipPrefix = "Floating IP for Kubernetes external service "
	fipInfix  = " from cluster "
	// lbDescPrefix makes the load balancer description
	// "Kubernetes external service <ns>/<name> from cluster <cluster>".
	lbDescPrefix = "Kubernetes external service "
	// CSIClusterKey is the volume metadata key the Cinder CSI plugin sets to
	// its --cluster.
	CSIClusterKey = "cinder.csi.openstack.org/cluster"
	// CSIPVNameKey is set (with --extra-create-metadata, the default of
	// the external-provisioner) to the PersistentVolume's name.
	CSIPVNameKey = "csi.storage.k8s.io/pv/name"
	// CSIPVCNameKey and CSIPVCNamespaceKey are set with it to the claim's
	// name and namespace.
	CSIPVCNameKey      = "csi.storage.k8s.io/pvc/name"
	CSIPVCNamespaceKey = "csi.storage.k8s.io/pvc/namespace"
	// octaviaVIPPortPrefix names the VIP port Octavia creates for a load
	// balancer: octavia-lb-<load balancer ID>.
	octaviaVIPPortPrefix = "octavia-lb-"
)

// ServiceRef is a Service's namespace and name.
type ServiceRef struct{ Namespace, Name string }

func (s ServiceRef) String() string { return s.Namespace + "/" + s.Name }

// serviceFromLBName returns the Service that cluster's cloud provider made
// the load balancer name for. Namespaces and Service names are DNS labels
// (no underscore), so after the cluster's prefix exactly one underscore may
// remain: kube_service_k_ns_svc is cluster k's, never cluster k2's or
// cluster k_ns's. A name cut at 255 bytes names nothing for sure.
func serviceFromLBName(name, cluster string) (ServiceRef, bool) {
	prefix := lbPrefix + cluster + "_"
	if cluster == "" || len(name) >= maxNameLen || !strings.HasPrefix(name, prefix) {
		return ServiceRef{}, false
	}
	ns, svc, ok := strings.Cut(strings.TrimPrefix(name, prefix), "_")
	if !ok {
		return ServiceRef{}, false
	}
	return validRef(ns, svc)
}

// serviceFromFIPDescription returns the Service whose load balancer
// cluster's cloud provider made the floating IP for.
func serviceFromFIPDescription(desc, cluster string) (ServiceRef, bool) {
	suffix := fipInfix + cluster
	if cluster == "" || len(desc) >= maxNameLen || !strings.HasPrefix(desc, fipPrefix) || !strings.HasSuffix(desc, suffix) {
		return ServiceRef{}, false
	}
	mid := strings.TrimSuffix(strings.TrimPrefix(desc, fipPrefix), suffix)
	ns, svc, ok := strings.Cut(mid, "/")
	if !ok {
		return ServiceRef{}, false
	}
	return validRef(ns, svc)
}

// lbDescription is the description the cloud provider gives the load
// balancer it makes for svc.
func lbDescription(svc ServiceRef, cluster string) string {
	return lbDescPrefix + svc.String() + fipInfix + cluster
}

func validRef(ns, svc string) (ServiceRef, bool) {
	if len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1035Label(svc)) > 0 {
		return ServiceRef{}, false
	}
	return ServiceRef{Namespace: ns, Name: svc}, true
}
