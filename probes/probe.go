package probes

import (
	"context"
	"log/slog"
	"time"
)

// Class names why a probe failed. It is a small closed set so that it can be
// a metric label and so that the status page can group failures.
type Class string

// The failure classes. ClassNone is the class of a successful probe.
const (
	ClassNone           Class = ""
	ClassConfig         Class = "config"          // the spec itself is unusable (file missing, bad URL)
	ClassDNS            Class = "dns"             // the host name did not resolve
	ClassRefused        Class = "refused"         // connection refused or reset before any answer
	ClassTimeout        Class = "timeout"         // the deadline passed (blackhole, slow server)
	ClassTLS            Class = "tls"             // handshake failed, untrusted or wrong-name certificate
	ClassCertExpiry     Class = "cert_expiry"     // certificate valid now but expires sooner than allowed, or expired
	ClassStatus         Class = "status"          // HTTP status not in the expected set
	ClassBody           Class = "body"            // body did not match
	ClassAuth           Class = "auth"            // 401/403: our credentials, not the site, are the problem
	ClassCheckFailed    Class = "check_failed"    // the endpoint answered that it is unhealthy (readyz checks)
	ClassAPIUnreachable Class = "api_unreachable" // a control API (Keystone, Octavia) could not be reached
	ClassLBError        Class = "lb_error"        // load balancer provisioning_status ERROR (or stuck PENDING_*)
	ClassLBDegraded     Class = "lb_degraded"     // load balancer operating_status not in the healthy set
	ClassError          Class = "error"           // anything else, with the reason
)

// Result is the outcome of one probe run. It is plain data: the caller turns it
// into metrics and into the decision core's observation.
type Result struct {
	OK bool
	// Class is ClassNone when OK.
	Class Class
	// Phase is the phase that failed ("connect", "tls", "first_byte", "status", "body", "auth", "api", ...).
	Phase string
	// Reason is a short human-readable cause, e.g. "tls handshake: x509: certificate has expired".
	// It must never contain a secret.
	Reason string
	// Duration is the whole probe's wall time.
	Duration time.Duration
	// Phases holds per-phase durations, keyed by a small fixed set of phase names
	// ("dns", "connect", "tls", "first_byte", "api", ...).
	Phases map[string]time.Duration
	// CertExpiry is the NotAfter of the leaf certificate served, when there was one.
	CertExpiry time.Time
	// Detail carries type-specific facts for the status page, e.g. the failing readyz
	// checks or Octavia's provisioning and operating statuses. Small and bounded.
	Detail map[string]string
}

// Spec describes one probe. Exactly one of the type-specific fields is set,
// matching Type.
type Spec struct {
	Name string
	Type string // "http", "tcp", "kubernetes", "octavia"
	// Timeout bounds one run. The scheduler applies it as the ctx deadline;
	// probers also use it for their own dialers when ctx has none.
	Timeout time.Duration
	// Critical probes decide the site's verdict; others are shown only.
	Critical bool

	HTTP       *HTTPSpec
	TCP        *TCPSpec
	Kubernetes *KubernetesSpec
	Octavia    *OctaviaSpec
}

// ProbeFunc is the one signature every probe type has. It runs one probe,
// honouring ctx's deadline, and never retries.
type ProbeFunc func(ctx context.Context, spec Spec, logger *slog.Logger) Result

// Probers maps a probe type name to its function.
var Probers = map[string]ProbeFunc{
	"http":       ProbeHTTP,
	"tcp":        ProbeTCP,
	"kubernetes": ProbeKubernetes,
	"octavia":    ProbeOctavia,
}
