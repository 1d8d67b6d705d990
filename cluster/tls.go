package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"
)

// Credentials are a node's TLS identity and the cluster CA it trusts. The
// node's ID is read from its certificate (drwatch://node/<id> URI SAN).
// Credentials are immutable and safe for concurrent use.
type Credentials struct {
	roots  *x509.CertPool
	cert   tls.Certificate
	leaf   *x509.Certificate
	nodeID string
}

// LoadCredentials reads the CA certificate(s), the node certificate (chain)
// and its private key from PEM files.
func LoadCredentials(caFile, certFile, keyFile string) (*Credentials, error) {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("read ca file: %w", err)
	}
	cert, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("read cert file: %w", err)
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("read key file: %w", err)
	}
	return CredentialsFromPEM(ca, cert, key)
}

// CredentialsFromPEM builds Credentials from PEM bytes. The node
// certificate must chain to the CA and carry exactly one node identity.
func CredentialsFromPEM(caPEM, certPEM, keyPEM []byte) (*Credentials, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("ca pem: no certificates")
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// tls.X509KeyPair never echoes key material in its errors.
		return nil, fmt.Errorf("node key pair: %w", err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("node certificate: %w", err)
		}
	}
	c := &Credentials{roots: roots, cert: pair, leaf: leaf}
	id, err := c.verifyChain(pair.Certificate, x509.ExtKeyUsageClientAuth, time.Now())
	if err != nil {
		return nil, fmt.Errorf("node certificate: %w", err)
	}
	c.nodeID = id
	return c, nil
}

// NodeID is the identity in the node certificate.
func (c *Credentials) NodeID() string { return c.nodeID }

// NotAfter is when the node certificate expires.
func (c *Credentials) NotAfter() time.Time { return c.leaf.NotAfter }

// verifyChain checks raw (leaf first) against the CA for usage and returns
// the leaf's node identity.
func (c *Credentials) verifyChain(raw [][]byte, usage x509.ExtKeyUsage, now time.Time) (string, error) {
	if len(raw) == 0 {
		return "", errors.New("no certificate presented")
	}
	certs := make([]*x509.Certificate, 0, len(raw))
	for _, r := range raw {
		cert, err := x509.ParseCertificate(r)
		if err != nil {
			return "", fmt.Errorf("parse certificate: %w", err)
		}
		certs = append(certs, cert)
	}
	inter := x509.NewCertPool()
	for _, cert := range certs[1:] {
		inter.AddCert(cert)
	}
	if _, err := certs[0].Verify(x509.VerifyOptions{
		Roots:         c.roots,
		Intermediates: inter,
		CurrentTime:   now,
		KeyUsages:     []x509.ExtKeyUsage{usage},
	}); err != nil {
		return "", err
	}
	return NodeIDFromCert(certs[0])
}

// claimedID is the identity a certificate claims, before any verification;
// used only to name a refused peer in logs.
func claimedID(raw [][]byte) string {
	if len(raw) == 0 {
		return ""
	}
	cert, err := x509.ParseCertificate(raw[0])
	if err != nil {
		return ""
	}
	id, err := NodeIDFromCert(cert)
	if err != nil {
		return ""
	}
	return id
}

// refusal is why a peer was refused; VerifyConnection returns it so the
// handshake error carries the peer and the reason.
type refusal struct {
	peer   string // claimed identity, may be empty
	reason string
}

func (r *refusal) Error() string {
	if r.peer == "" {
		return "peer refused: " + r.reason
	}
	return fmt.Sprintf("peer %q refused: %s", r.peer, r.reason)
}

func baseTLS(c *Credentials) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		MaxVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{c.cert},
	}
}

// serverTLS accepts a client whose certificate chains to the CA and whose
// identity allowed() accepts. The standard library's client verification
// is replaced (RequireAnyClientCert) so a refusal can name the identity the
// peer claimed.
func (c *Credentials) serverTLS(allowed func(id string) bool) *tls.Config {
	cfg := baseTLS(c)
	cfg.ClientAuth = tls.RequireAnyClientCert
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		raw := rawCerts(cs.PeerCertificates)
		id, err := c.verifyChain(raw, x509.ExtKeyUsageClientAuth, time.Now())
		if err != nil {
			return &refusal{peer: claimedID(raw), reason: err.Error()}
		}
		if !allowed(id) {
			return &refusal{peer: id, reason: "not a member of this cluster"}
		}
		return nil
	}
	return cfg
}

// clientTLS accepts a server whose certificate chains to the CA and names
// exactly the node expected at the address dialled. Host name checks are
// replaced by this identity check (addresses are not identities).
func (c *Credentials) clientTLS(expectedID string) *tls.Config {
	cfg := baseTLS(c)
	cfg.InsecureSkipVerify = true // verified below, in VerifyConnection
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		raw := rawCerts(cs.PeerCertificates)
		id, err := c.verifyChain(raw, x509.ExtKeyUsageServerAuth, time.Now())
		if err != nil {
			return &refusal{peer: claimedID(raw), reason: err.Error()}
		}
		if expectedID == "" {
			return &refusal{peer: id, reason: "address is not a known member"}
		}
		if id != expectedID {
			return &refusal{peer: id, reason: fmt.Sprintf("presented identity %q, want %q", id, expectedID)}
		}
		return nil
	}
	return cfg
}

func rawCerts(certs []*x509.Certificate) [][]byte {
	out := make([][]byte, len(certs))
	for i, c := range certs {
		out[i] = c.Raw
	}
	return out
}
