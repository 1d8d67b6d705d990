package probes

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"net/http/httptrace"
	"time"

	"github.com/drwatch/drwatch/internal/field"
)

// TCPSpec configures a tcp probe: a TCP connect, and optionally a TLS
// handshake with the served certificate checked.
type TCPSpec struct {
	// Address is the host:port to connect to.
	Address string `yaml:"address" types:"tcp" doc:"tcp: host:port to connect to."`
	// TLS completes a TLS handshake after the connect.
	TLS bool `yaml:"tls" types:"tcp" doc:"tcp: complete a TLS handshake too."`
	// ServerName is the SNI and the name verified in the certificate.
	// Empty means the host of Address. Only with TLS.
	ServerName string `yaml:"server_name" types:"tcp" doc:"tcp: SNI and the name to verify."`
	// CAFile is a PEM bundle to trust instead of the system roots. Only with TLS.
	CAFile string `yaml:"ca_file" types:"http,tcp,kubernetes,octavia" doc:"PEM bundle to trust instead of the system roots."`
	// CertMinValidity fails the probe with ClassCertExpiry when the served
	// leaf certificate expires sooner than this. Only with TLS.
	CertMinValidity time.Duration `yaml:"cert_min_validity" types:"http,tcp" doc:"Fail when the served certificate expires sooner than this."`
}

// configured is the configuration file's rules: the prober's.
func (s *TCPSpec) configured() field.Errors { return s.Validate() }

// files is the CA bundle, when set.
func (s *TCPSpec) files() []field.File { return optionalFile("ca_file", s.CAFile) }

// Validate reports every problem with the spec at once, with paths relative
// to the probe. It is pure: it does not read CAFile or resolve names.
func (s *TCPSpec) Validate() field.Errors {
	var es field.Errors
	checkHostPort(&es, "address", s.Address, false)
	if !s.TLS {
		if s.ServerName != "" {
			es.Add("server_name", "set only with tls: true")
		}
		if s.CAFile != "" {
			es.Add("ca_file", "needs tls")
		}
		if s.CertMinValidity != 0 {
			es.Add("cert_min_validity", "needs tls")
		}
	}
	checkCertMinValidity(&es, s.CertMinValidity)
	return es
}

// ProbeTCP is the tcp prober. It opens one connection (timing dns and
// connect), optionally completes a TLS handshake (timing tls) and closes it.
// It honours ctx's deadline, or else spec.Timeout.
func ProbeTCP(ctx context.Context, spec Spec, logger *slog.Logger) Result {
	start := time.Now()
	res := tcpProbe(ctx, spec)
	res.Duration = time.Since(start)
	if res.OK {
		res.Class, res.Phase, res.Reason = ClassNone, "", ""
	}
	return res
}

func tcpProbe(ctx context.Context, spec Spec) Result {
	ts := spec.TCP
	if ts == nil {
		return connFail(ClassConfig, "config", "tcp probe without a tcp spec")
	}
	if es := ts.Validate(); es != nil {
		return connFail(ClassConfig, "config", es.Error())
	}
	var roots *x509.CertPool
	if ts.CAFile != "" {
		var err error
		if roots, err = connLoadCA(ts.CAFile); err != nil {
			return connFail(ClassConfig, "config", err.Error())
		}
	}
	ctx, cancel := connWithTimeout(ctx, spec.Timeout)
	defer cancel()

	timer := &connPhaseTimer{}
	timer.setTarget(ts.Address)
	var d net.Dialer
	conn, err := d.DialContext(httptrace.WithClientTrace(ctx, timer.trace()), "tcp", ts.Address)
	if err != nil {
		res := connClassify(ctx, err, timer)
		res.Phases = timer.phases()
		return res
	}
	defer conn.Close()
	if !ts.TLS {
		return Result{OK: true, Phases: timer.phases()}
	}

	name := ts.ServerName
	if name == "" {
		name, _, _ = net.SplitHostPort(ts.Address)
	}
	tc := tls.Client(conn, &tls.Config{ServerName: name, RootCAs: roots, MinVersion: tls.VersionTLS12})
	timer.beginPhase("tls")
	err = tc.HandshakeContext(ctx)
	timer.endPhase("tls", err)
	if err != nil {
		res := connClassify(ctx, err, timer)
		res.Phases = timer.phases()
		return res
	}
	res := Result{OK: true, Phases: timer.phases()}
	if certs := tc.ConnectionState().PeerCertificates; len(certs) > 0 {
		res.CertExpiry = certs[0].NotAfter
		if bad := connCheckValidity(certs[0], ts.CertMinValidity, time.Now()); bad != nil {
			bad.Phases, bad.CertExpiry = res.Phases, res.CertExpiry
			return *bad
		}
	}
	return res
}
