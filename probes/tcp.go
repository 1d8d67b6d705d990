package probes

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptrace"
	"time"
)

// TCPSpec configures a tcp probe: a TCP connect, and optionally a TLS
// handshake with the served certificate checked.
type TCPSpec struct {
	// Address is the host:port to connect to.
	Address string
	// TLS completes a TLS handshake after the connect.
	TLS bool
	// ServerName is the SNI and the name verified in the certificate.
	// Empty means the host of Address. Only with TLS.
	ServerName string
	// CAFile is a PEM bundle to trust instead of the system roots. Only with TLS.
	CAFile string
	// CertMinValidity fails the probe with ClassCertExpiry when the served
	// leaf certificate expires sooner than this. Only with TLS.
	CertMinValidity time.Duration
}

// Validate reports every problem with the spec at once (errors.Join). It is
// pure: it does not read CAFile or resolve names.
func (s *TCPSpec) Validate() error {
	var errs []error
	if s.Address == "" {
		errs = append(errs, errors.New("address: must be set"))
	} else if err := connCheckHostPort(s.Address, false); err != nil {
		errs = append(errs, fmt.Errorf("address: %w", err))
	}
	if !s.TLS {
		if s.ServerName != "" {
			errs = append(errs, errors.New("server_name: needs tls"))
		}
		if s.CAFile != "" {
			errs = append(errs, errors.New("ca_file: needs tls"))
		}
		if s.CertMinValidity != 0 {
			errs = append(errs, errors.New("cert_min_validity: needs tls"))
		}
	}
	if s.CertMinValidity < 0 {
		errs = append(errs, fmt.Errorf("cert_min_validity: %s must not be negative", s.CertMinValidity))
	}
	return errors.Join(errs...)
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
	if err := ts.Validate(); err != nil {
		return connFail(ClassConfig, "config", err.Error())
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

	timer := &connPhaseTimer{begun: time.Now()}
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
