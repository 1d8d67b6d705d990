package kubeapi

import (
	"context"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// Object is a single API object: what Get returns and Update sends.
type Object interface {
	runtime.Object
	GetName() string
}

// Resource is one resource of one namespace (or of the cluster), with the
// verbs of client-go's generated clients (k8s.io/client-go/gentype) that
// drwatch calls, built the same way: protobuf preferred, as client-go
// prefers it for every built-in type, and JSON otherwise. Like client-go's,
// Get and Update return a non-nil empty object along with an error; an API
// error is a *errors.StatusError.
type Resource[T Object, L runtime.Object] struct {
	rc        *rest.RESTClient
	resource  string
	namespace string
	newObject func() T
	newList   func() L
}

func newResource[T Object, L runtime.Object](rc *rest.RESTClient, resource, namespace string, newObject func() T, newList func() L) Resource[T, L] {
	return Resource[T, L]{rc: rc, resource: resource, namespace: namespace, newObject: newObject, newList: newList}
}

// request starts a request for the resource in its namespace, if any.
func (r Resource[T, L]) request(req *rest.Request) *rest.Request {
	return req.UseProtobufAsDefault().
		NamespaceIfScoped(r.namespace, r.namespace != "").
		Resource(r.resource)
}

// Get reads the object name.
func (r Resource[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	out := r.newObject()
	err := r.request(r.rc.Get()).
		Name(name).
		VersionedParams(&opts, parameterCodec).
		Do(ctx).
		Into(out)
	return out, err
}

// List reads the objects opts selects (one page when opts.Limit is set).
func (r Resource[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	out := r.newList()
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	err := r.request(r.rc.Get()).
		VersionedParams(&opts, parameterCodec).
		Timeout(timeout).
		Do(ctx).
		Into(out)
	return out, err
}

// Update replaces obj; its resourceVersion, when set, makes a concurrent
// change fail with a conflict.
func (r Resource[T, L]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	out := r.newObject()
	err := r.request(r.rc.Put()).
		Name(obj.GetName()).
		VersionedParams(&opts, parameterCodec).
		Body(obj).
		Do(ctx).
		Into(out)
	return out, err
}

// Delete deletes the object name, under opts' preconditions and grace
// period.
func (r Resource[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return r.request(r.rc.Delete()).
		Name(name).
		Body(&opts).
		Do(ctx).
		Error()
}

// Scalable is a Resource with the scale subresource (autoscaling/v1 Scale).
type Scalable[T Object, L runtime.Object] struct {
	Resource[T, L]
}

// GetScale reads name's scale subresource.
func (r Scalable[T, L]) GetScale(ctx context.Context, name string, opts metav1.GetOptions) (*autoscalingv1.Scale, error) {
	out := &autoscalingv1.Scale{}
	err := r.request(r.rc.Get()).
		Name(name).
		SubResource("scale").
		VersionedParams(&opts, parameterCodec).
		Do(ctx).
		Into(out)
	return out, err
}

// UpdateScale writes name's scale subresource; scale's resourceVersion,
// when set, makes a concurrent change fail with a conflict.
func (r Scalable[T, L]) UpdateScale(ctx context.Context, name string, scale *autoscalingv1.Scale, opts metav1.UpdateOptions) (*autoscalingv1.Scale, error) {
	out := &autoscalingv1.Scale{}
	err := r.request(r.rc.Put()).
		Name(name).
		SubResource("scale").
		VersionedParams(&opts, parameterCodec).
		Body(scale).
		Do(ctx).
		Into(out)
	return out, err
}

// Evictions evict pods of one namespace through the Eviction API, so the
// server holds PodDisruptionBudgets.
type Evictions struct {
	rc        *rest.RESTClient
	namespace string
}

// Evict posts eviction to its pod's eviction subresource, as client-go's
// policy/v1 Evict does; a budget's refusal is a 429 (apierrors.IsTooManyRequests).
func (e Evictions) Evict(ctx context.Context, eviction *policyv1.Eviction) error {
	return e.rc.Post().
		AbsPath("/api/v1").
		Namespace(eviction.Namespace).
		Resource("pods").
		Name(eviction.Name).
		SubResource("eviction").
		Body(eviction).
		Do(ctx).
		Error()
}
