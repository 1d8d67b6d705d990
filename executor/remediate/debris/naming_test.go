package debris

import "testing"

// A name or description is cluster k's only when it is exactly what
// cloud-provider-openstack writes for k: never cluster k2's, k_x's, or a
// name cut at 255 bytes.
func TestOwnershipIsExactNaming(t *testing.T) {
	long := "kube_service_k_ns_"
	for len(long) < 255 {
		long += "a"
	}
	lbs := []struct {
		name string
		want ServiceRef
		ok   bool
	}{
		{"kube_service_k_ns_web", ServiceRef{"ns", "web"}, true},
		{"kube_service_k_kube-system_ingress-nginx", ServiceRef{"kube-system", "ingress-nginx"}, true},
		{"kube_service_k2_ns_web", ServiceRef{}, false},
		{"kube_service_k_x_ns_web", ServiceRef{}, false}, // cluster k_x
		{"kube_service_k_ns", ServiceRef{}, false},
		{"kube_service_k_ns_web_", ServiceRef{}, false},
		{"kube_service_k_NS_web", ServiceRef{}, false},
		{"kube_service_k__web", ServiceRef{}, false},
		{"kube_service_kns_web", ServiceRef{}, false},
		{"xkube_service_k_ns_web", ServiceRef{}, false},
		{"k8s-lb-ns-web", ServiceRef{}, false},
		{long, ServiceRef{}, false},
	}
	for _, c := range lbs {
		got, ok := serviceFromLBName(c.name, "k")
		if ok != c.ok || got != c.want {
			t.Errorf("serviceFromLBName(%q, k): got %v %v, want %v %v", c.name, got, ok, c.want, c.ok)
		}
	}
	if _, ok := serviceFromLBName("kube_service__ns_web", ""); ok {
		t.Error("an empty cluster name matched")
	}
	fips := []struct {
		desc string
		want ServiceRef
		ok   bool
	}{
		{"Floating IP for Kubernetes external service ns/web from cluster k", ServiceRef{"ns", "web"}, true},
		{"Floating IP for Kubernetes external service ns/web from cluster k2", ServiceRef{}, false},
		{"Floating IP for Kubernetes external service ns/web from cluster xk", ServiceRef{}, false},
		{"Floating IP for Kubernetes external service ns/web from cluster x k", ServiceRef{}, false},
		{"Floating IP for Kubernetes external service ns from cluster k", ServiceRef{}, false},
		{"Floating IP for Kubernetes external service a/b/c from cluster k", ServiceRef{}, false},
		{"floating ip for kubernetes external service ns/web from cluster k", ServiceRef{}, false},
		{"", ServiceRef{}, false},
	}
	for _, c := range fips {
		got, ok := serviceFromFIPDescription(c.desc, "k")
		if ok != c.ok || got != c.want {
			t.Errorf("serviceFromFIPDescription(%q, k): got %v %v, want %v %v", c.desc, got, ok, c.want, c.ok)
		}
	}
}
