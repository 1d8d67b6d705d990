package clusterhealth

import "time"

// Site is one site's cluster health, as one watcher last read it. A part
// that could not be read is nil with its error set; the rest still shows.
type Site struct {
	Site string `json:"site"`
	// Configured is false when remediations.kubernetes.<site> names no
	// kubeconfig: nothing is read and the page says so.
	Configured bool `json:"configured"`
	// ReadBy is the watcher that read it; At is when the read began (zero:
	// not read yet).
	ReadBy string    `json:"read_by"`
	At     time.Time `json:"at"`

	Version      string `json:"version,omitempty"`
	VersionError string `json:"version_error,omitempty"`

	Nodes      *Nodes `json:"nodes,omitempty"`
	NodesError string `json:"nodes_error,omitempty"`

	// Pods is read after Nodes (it needs the Unknown nodes); with the
	// nodes unreadable it is nil too.
	Pods      *Pods  `json:"pods,omitempty"`
	PodsError string `json:"pods_error,omitempty"`

	Events      *Events `json:"events,omitempty"`
	EventsError string  `json:"events_error,omitempty"`

	Services      *Services `json:"services,omitempty"`
	ServicesError string    `json:"services_error,omitempty"`

	// Routes is the Neutron router's route quota; nil with RoutesUnknown
	// saying why when it is not known.
	Routes        *Routes `json:"routes,omitempty"`
	RoutesUnknown string  `json:"routes_unknown,omitempty"`
}

// Nodes sums the node conditions of seed 004.
type Nodes struct {
	Total int `json:"total"`
	// Truncated: the cluster has more than MaxNodes nodes; only the first
	// MaxNodes are counted.
	Truncated bool `json:"truncated,omitempty"`
	// Unknown nodes have a Ready condition Unknown, or none: the kubelet
	// stopped reporting (node lifecycle controller).
	Unknown int `json:"unknown"`
	// NotReady nodes have Ready False, for any reason (container runtime,
	// CNI, PLEG): PLEG nodes are counted here too.
	NotReady int `json:"not_ready"`
	// PLEG nodes say "PLEG is not healthy" in their Ready reason or message.
	PLEG               int `json:"pleg_unhealthy"`
	DiskPressure       int `json:"disk_pressure"`
	MemoryPressure     int `json:"memory_pressure"`
	PIDPressure        int `json:"pid_pressure"`
	NetworkUnavailable int `json:"network_unavailable"`
	// Problems lists up to MaxShownNodes nodes with any of these, by name.
	Problems []NodeProblem `json:"problems"`
}

// NodeProblem is one node and what is wrong with it.
type NodeProblem struct {
	Name string `json:"name"`
	// Problems are condition types ("DiskPressure"), "Unknown", the Ready
	// message that names PLEG, or "NotReady: " and the Ready message, each
	// cut to MaxText.
	Problems []string `json:"problems"`
}

// Pods counts the pods of seed 004 that nothing will clean up by itself.
type Pods struct {
	Total int `json:"total"`
	// Truncated: more than MaxPods pods; only those were looked at.
	Truncated bool `json:"truncated,omitempty"`
	// Terminating pods are past their deletion time by more than
	// TerminatingAfter.
	Terminating             int     `json:"terminating"`
	TerminatingAfterSeconds float64 `json:"terminating_after_seconds"`
	// StatefulOnUnknown are StatefulSet pods bound to an Unknown node: the
	// StatefulSet will not replace them until someone removes them.
	StatefulOnUnknown int `json:"statefulset_on_unknown_node"`
	// Evicted pods (phase Failed, reason Evicted) not yet removed.
	Evicted int `json:"evicted"`
	// Problems lists up to MaxShownPods of them, oldest first.
	Problems []PodProblem `json:"problems"`
}

// PodProblem is one pod and what is wrong with it.
type PodProblem struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Node      string `json:"node,omitempty"`
	// Problem is PodTerminating, PodStatefulUnknown or PodEvicted.
	Problem string `json:"problem"`
	// Since is the deletion time of a Terminating pod, else the pod's
	// creation.
	Since time.Time `json:"since"`
}

// Events counts the recent warning events of seed 004.
type Events struct {
	WindowSeconds float64 `json:"window_seconds"`
	// Counts has every reason of Reasons: the number of event objects last
	// seen within the window. Multi-Attach (a FailedAttachVolume whose
	// message says Multi-Attach) counts there and not under
	// FailedAttachVolume.
	Counts map[string]int `json:"counts"`
	// Truncated: some reason had more than MaxEventsPerReason events; its
	// count is a lower bound.
	Truncated bool `json:"truncated,omitempty"`
	// Recent are up to MaxShownEvents of them, newest first.
	Recent []Event `json:"recent"`
}

// Event is one recent event.
type Event struct {
	Reason   string    `json:"reason"`
	Object   string    `json:"object"` // "Node/n1", "Pod/ns/name"
	Message  string    `json:"message"`
	Count    int32     `json:"count"`
	LastSeen time.Time `json:"last_seen"`
}

// Services counts LoadBalancer Services waiting for an address.
type Services struct {
	LoadBalancers int `json:"load_balancers"`
	// Truncated: more than MaxServices Services; only those were looked at.
	Truncated bool `json:"truncated,omitempty"`
	// Pending have no ingress address and are older than PendingAfter.
	Pending             int              `json:"pending"`
	PendingAfterSeconds float64          `json:"pending_after_seconds"`
	Oldest              []PendingService `json:"oldest"` // up to MaxShownServices, oldest first
	// CCMLease is the cloud-controller-manager's leader Lease, read only
	// when some Service is pending; nil with CCMLeaseError set when it
	// could not be read (or does not exist).
	CCMLease      *Lease `json:"ccm_lease,omitempty"`
	CCMLeaseError string `json:"ccm_lease_error,omitempty"`
}

// Lease is a leader-election Lease: who holds it and when it last renewed.
type Lease struct {
	Name string `json:"name"` // "kube-system/cloud-controller-manager"
	// Holder is empty when nobody holds it.
	Holder    string    `json:"holder"`
	RenewTime time.Time `json:"renew_time"` // zero: never renewed
	// DurationSeconds is how long a holder may go without renewing.
	DurationSeconds float64 `json:"duration_seconds,omitempty"`
	// RenewAgeSeconds is the time from RenewTime to the read.
	RenewAgeSeconds float64 `json:"renew_age_seconds"`
}

// PendingService is one LoadBalancer Service with no address yet.
type PendingService struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Created   time.Time `json:"created"`
}

// Routes is the cluster's Neutron router against its route limit.
type Routes struct {
	RouterID string `json:"router_id"`
	Used     int    `json:"used"`
	Limit    int    `json:"limit"`
}

// Reasons are the event reasons counted, in display order.
var Reasons = []string{ReasonImageGCFailed, ReasonFreeDiskSpaceFailed, ReasonContainerGCFailed,
	ReasonEvictionThresholdMet, ReasonSystemOOM, ReasonEvicted, ReasonFailedCreatePodSandBox, ReasonFailedMount,
	ReasonFailedAttachVolume, ReasonMultiAttach}

// The event reasons (kubelet and attach-detach controller).
const (
	ReasonImageGCFailed        = "ImageGCFailed"
	ReasonFreeDiskSpaceFailed  = "FreeDiskSpaceFailed"
	ReasonContainerGCFailed    = "ContainerGCFailed"
	ReasonEvictionThresholdMet = "EvictionThresholdMet"
	// ReasonSystemOOM is the kubelet's node event for a kernel OOM kill
	// outside any pod's limit.
	ReasonSystemOOM = "SystemOOM"
	// ReasonEvicted is the kubelet's pod event when it evicts the pod.
	ReasonEvicted = "Evicted"
	// ReasonFailedCreatePodSandBox: the runtime or the CNI could not
	// start the pod's sandbox.
	ReasonFailedCreatePodSandBox = "FailedCreatePodSandBox"
	ReasonFailedMount            = "FailedMount"
	ReasonFailedAttachVolume     = "FailedAttachVolume"
	// ReasonMultiAttach is no event reason of its own: it is a
	// FailedAttachVolume whose message starts "Multi-Attach error".
	ReasonMultiAttach = "Multi-Attach"
)

// Bounds on what one read fetches, keeps and shows.
const (
	PageSize           = 250      // items per list call
	MaxNodes           = 5000     // nodes counted per site
	MaxServices        = 5000     // Services looked at per site
	MaxPods            = 5000     // pods looked at per site
	MaxEventsPerReason = 200      // events read per reason
	MaxResponseBytes   = 16 << 20 // one API answer, before decoding
	MaxShownNodes      = 20
	MaxShownEvents     = 20
	MaxShownServices   = 10
	MaxShownPods       = 20
	MaxText            = 300 // runes of any name, message or version kept
)
