package kubeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Interface is what drwatch calls of a cluster's API. *Client implements
// it against a real API server; a test may embed one and replace a method
// (an older server's version, say). All methods are safe for concurrent
// use; the accessors do no I/O.
type Interface interface {
	CoreV1() CoreV1
	AppsV1() AppsV1
	PolicyV1() PolicyV1
	DiscoveryV1() DiscoveryV1
	CoordinationV1() CoordinationV1
	// ServerVersion reads the server's /version, as discovery's
	// ServerVersionWithContext does.
	ServerVersion(ctx context.Context) (*version.Info, error)
}

var _ Interface = (*Client)(nil)

// scheme holds the groups drwatch calls, and meta/v1's options and Status
// (unversioned), so that query parameters encode and an API error decodes
// into a *errors.StatusError. Registering a group is what costs: this is
// the whole point of the package.
var scheme = newScheme()

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	// As k8s.io/client-go/kubernetes/scheme does, for its ParameterCodec.
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme,
		appsv1.AddToScheme,
		autoscalingv1.AddToScheme, // the scale subresource's Scale
		policyv1.AddToScheme,
		discoveryv1.AddToScheme,
		coordinationv1.AddToScheme, // leader leases, read by cluster health
	} {
		utilruntime.Must(add(s))
	}
	return s
}

var (
	codecs         = serializer.NewCodecFactory(scheme)
	parameterCodec = runtime.NewParameterCodec(scheme)
)

// Client reaches one cluster's API through client-go's REST clients, one
// per API group, sharing one HTTP client as the clientset does.
type Client struct {
	core, apps, policy, discovery, coordination *rest.RESTClient
}

// NewForConfig builds a Client as kubernetes.NewForConfig builds a
// clientset from c: the default user agent when c sets none, one HTTP
// client (transport, TLS, authentication, c.Timeout) for every group, and
// when c.QPS is set one token bucket shared by every group (c.Burst must
// then be positive); with c.QPS 0 each group has rest's default limiter.
// It does no I/O.
func NewForConfig(c *rest.Config) (*Client, error) {
	cfg := *c
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	hc, err := rest.HTTPClientFor(&cfg)
	if err != nil {
		return nil, err
	}
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		if cfg.Burst <= 0 {
			return nil, fmt.Errorf("burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0")
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	var out Client
	for _, g := range []struct {
		dst     **rest.RESTClient
		gv      schema.GroupVersion
		apiPath string
	}{
		{&out.core, corev1.SchemeGroupVersion, "/api"},
		{&out.apps, appsv1.SchemeGroupVersion, "/apis"},
		{&out.policy, policyv1.SchemeGroupVersion, "/apis"},
		{&out.discovery, discoveryv1.SchemeGroupVersion, "/apis"},
		{&out.coordination, coordinationv1.SchemeGroupVersion, "/apis"},
	} {
		if *g.dst, err = groupClient(cfg, hc, g.gv, g.apiPath); err != nil {
			return nil, err
		}
	}
	return &out, nil
}

// groupClient is a generated typed client's setConfigDefaults and
// NewForConfigAndClient, for one group of the lean scheme.
func groupClient(cfg rest.Config, hc *http.Client, gv schema.GroupVersion, apiPath string) (*rest.RESTClient, error) {
	cfg.GroupVersion = &gv
	cfg.APIPath = apiPath
	cfg.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(scheme, codecs).WithoutConversion()
	return rest.RESTClientForConfigAndClient(&cfg, hc)
}

// ServerVersion implements Interface.
func (c *Client) ServerVersion(ctx context.Context) (*version.Info, error) {
	body, err := c.core.Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	var info version.Info
	if err := json.Unmarshal(body, &info); err != nil {
		return nil, fmt.Errorf("unable to parse the server version: %w", err)
	}
	return &info, nil
}

// CoreV1 implements Interface.
func (c *Client) CoreV1() CoreV1 { return CoreV1{c.core} }

// AppsV1 implements Interface.
func (c *Client) AppsV1() AppsV1 { return AppsV1{c.apps} }

// PolicyV1 implements Interface.
func (c *Client) PolicyV1() PolicyV1 { return PolicyV1{c.policy} }

// DiscoveryV1 implements Interface.
func (c *Client) DiscoveryV1() DiscoveryV1 { return DiscoveryV1{c.discovery} }

// CoordinationV1 implements Interface.
func (c *Client) CoordinationV1() CoordinationV1 { return CoordinationV1{c.coordination} }

// CoreV1 is the core group's resources that drwatch calls.
type CoreV1 struct{ rc *rest.RESTClient }

// Nodes are the cluster's nodes.
func (g CoreV1) Nodes() Resource[*corev1.Node, *corev1.NodeList] {
	return newResource(g.rc, "nodes", "", func() *corev1.Node { return &corev1.Node{} }, func() *corev1.NodeList { return &corev1.NodeList{} })
}

// Pods are namespace's pods; metav1.NamespaceAll lists every namespace's.
func (g CoreV1) Pods(namespace string) Resource[*corev1.Pod, *corev1.PodList] {
	return newResource(g.rc, "pods", namespace, func() *corev1.Pod { return &corev1.Pod{} }, func() *corev1.PodList { return &corev1.PodList{} })
}

// Services are namespace's Services.
func (g CoreV1) Services(namespace string) Resource[*corev1.Service, *corev1.ServiceList] {
	return newResource(g.rc, "services", namespace, func() *corev1.Service { return &corev1.Service{} }, func() *corev1.ServiceList { return &corev1.ServiceList{} })
}

// Events are namespace's core/v1 Events.
func (g CoreV1) Events(namespace string) Resource[*corev1.Event, *corev1.EventList] {
	return newResource(g.rc, "events", namespace, func() *corev1.Event { return &corev1.Event{} }, func() *corev1.EventList { return &corev1.EventList{} })
}

// PersistentVolumes are the cluster's volumes.
func (g CoreV1) PersistentVolumes() Resource[*corev1.PersistentVolume, *corev1.PersistentVolumeList] {
	return newResource(g.rc, "persistentvolumes", "", func() *corev1.PersistentVolume { return &corev1.PersistentVolume{} }, func() *corev1.PersistentVolumeList { return &corev1.PersistentVolumeList{} })
}

// PersistentVolumeClaims are namespace's claims.
func (g CoreV1) PersistentVolumeClaims(namespace string) Resource[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList] {
	return newResource(g.rc, "persistentvolumeclaims", namespace, func() *corev1.PersistentVolumeClaim { return &corev1.PersistentVolumeClaim{} }, func() *corev1.PersistentVolumeClaimList { return &corev1.PersistentVolumeClaimList{} })
}

// AppsV1 is the apps group's resources that drwatch calls.
type AppsV1 struct{ rc *rest.RESTClient }

// Deployments are namespace's Deployments, with their scale subresource.
func (g AppsV1) Deployments(namespace string) Scalable[*appsv1.Deployment, *appsv1.DeploymentList] {
	return Scalable[*appsv1.Deployment, *appsv1.DeploymentList]{newResource(g.rc, "deployments", namespace, func() *appsv1.Deployment { return &appsv1.Deployment{} }, func() *appsv1.DeploymentList { return &appsv1.DeploymentList{} })}
}

// StatefulSets are namespace's StatefulSets, with their scale subresource.
func (g AppsV1) StatefulSets(namespace string) Scalable[*appsv1.StatefulSet, *appsv1.StatefulSetList] {
	return Scalable[*appsv1.StatefulSet, *appsv1.StatefulSetList]{newResource(g.rc, "statefulsets", namespace, func() *appsv1.StatefulSet { return &appsv1.StatefulSet{} }, func() *appsv1.StatefulSetList { return &appsv1.StatefulSetList{} })}
}

// PolicyV1 is the policy group's resources that drwatch calls.
type PolicyV1 struct{ rc *rest.RESTClient }

// PodDisruptionBudgets are namespace's budgets.
func (g PolicyV1) PodDisruptionBudgets(namespace string) Resource[*policyv1.PodDisruptionBudget, *policyv1.PodDisruptionBudgetList] {
	return newResource(g.rc, "poddisruptionbudgets", namespace, func() *policyv1.PodDisruptionBudget { return &policyv1.PodDisruptionBudget{} }, func() *policyv1.PodDisruptionBudgetList { return &policyv1.PodDisruptionBudgetList{} })
}

// Evictions evict namespace's pods.
func (g PolicyV1) Evictions(namespace string) Evictions { return Evictions{g.rc, namespace} }

// DiscoveryV1 is the discovery group's resources that drwatch calls.
type DiscoveryV1 struct{ rc *rest.RESTClient }

// EndpointSlices are namespace's EndpointSlices.
func (g DiscoveryV1) EndpointSlices(namespace string) Resource[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList] {
	return newResource(g.rc, "endpointslices", namespace, func() *discoveryv1.EndpointSlice { return &discoveryv1.EndpointSlice{} }, func() *discoveryv1.EndpointSliceList { return &discoveryv1.EndpointSliceList{} })
}

// CoordinationV1 is the coordination group's resources that drwatch calls.
type CoordinationV1 struct{ rc *rest.RESTClient }

// Leases are namespace's leases (leader election).
func (g CoordinationV1) Leases(namespace string) Resource[*coordinationv1.Lease, *coordinationv1.LeaseList] {
	return newResource(g.rc, "leases", namespace, func() *coordinationv1.Lease { return &coordinationv1.Lease{} }, func() *coordinationv1.LeaseList { return &coordinationv1.LeaseList{} })
}
