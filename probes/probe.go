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
//
// Spec is also one item of a site's probes in the configuration file: the
// yaml, doc, default and types tags are what the file decodes and the
// reference documents. The type-specific fields sit inline, so the file is
// flat (url, address, server... beside name and type); a key shared by several
// types (ca_file, cert_min_validity) is declared in each with the same tags,
// and decoding keeps only the struct that Type names (see UnmarshalYAML).
// The octavia type's credentials are the section it shares with the
// OpenStack repairs (openstackauth.Credentials, inline): their ca_file says
// more in its doc tag, and the reference and the config walker read the
// first declaration, the http type's.
type Spec struct {
	Name string `yaml:"name" doc:"Unique within its site; a metric label."`
	Type string `yaml:"type" doc:"http, tcp, kubernetes or octavia."`
	// Critical probes decide the site's verdict; others are shown only.
	// Nil means critical, the file's default.
	Critical *bool `yaml:"critical" default:"true" doc:"Critical probes decide the site's verdict; others are only shown."`
	// Timeout bounds one run. The scheduler applies it as the ctx deadline;
	// probers also use it for their own dialers when ctx has none.
	Timeout time.Duration `yaml:"timeout" default:"policy.timeout" doc:"Per-probe timeout; must be below policy.interval."`

	HTTP       *HTTPSpec       `yaml:",inline"`
	TCP        *TCPSpec        `yaml:",inline"`
	Kubernetes *KubernetesSpec `yaml:",inline"`
	Octavia    *OctaviaSpec    `yaml:",inline"`
}

// ProbeFunc is the one signature every probe type has. It runs one probe,
// honouring ctx's deadline, and never retries.
type ProbeFunc func(ctx context.Context, spec Spec, logger *slog.Logger) Result
