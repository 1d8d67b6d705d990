package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/drwatch/drwatch/internal/regularfile"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Credentials are a node's TLS identity and the cluster CA it trusts. The
// node's ID is read from its certificate (drwatch://node/<id> URI SAN) and
// never changes. Credentials loaded from files can be reloaded (Reload):
// every new connection then uses the current certificate and CA bundle.
// Safe for concurrent use.
type Credentials struct {
	nodeID string
	files  [3]string // ca, cert, key; empty when built from PEM bytes

	mu    sync.Mutex   // serialises Reload
	stamp [3]fileStamp // what Reload last read; guarded by mu

	cur atomic.Pointer[credState]
}

// credState is one immutable set of credentials.
type credState struct {
	roots *x509.CertPool
	cert  tls.Certificate
	leaf  *x509.Certificate
}

// fileStamp tells whether a file changed since it was read.
type fileStamp struct {
	size    int64
	modNano int64
}

// LoadCredentials reads the CA certificate(s), the node certificate (chain)
// and its private key from PEM files.
func LoadCredentials(caFile, certFile, keyFile string) (*Credentials, error) {
	files := [3]string{caFile, certFile, keyFile}
	stamp, err := stampFiles(files)
	if err != nil {
		return nil, err
	}
	st, id, err := readCredFiles(files)
	if err != nil {
		return nil, err
	}
	c := &Credentials{nodeID: id, files: files, stamp: stamp}
	c.cur.Store(st)
	return c, nil
}

// CredentialsFromPEM builds Credentials from PEM bytes. The node
// certificate must chain to the CA and carry exactly one node identity.
func CredentialsFromPEM(caPEM, certPEM, keyPEM []byte) (*Credentials, error) {
	st, id, err := parseCredentials(caPEM, certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	c := &Credentials{nodeID: id}
	c.cur.Store(st)
	return c, nil
}

func readCredFiles(files [3]string) (*credState, string, error) {
	var pems [3][]byte
	for i, field := range []string{"tls.ca_file", "tls.cert_file", "tls.key_file"} {
		b, err := regularfile.Read(field, files[i])
		if err != nil {
			return nil, "", err
		}
		pems[i] = b
	}
	return parseCredentials(pems[0], pems[1], pems[2])
}

func parseCredentials(caPEM, certPEM, keyPEM []byte) (*credState, string, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, "", errors.New("ca pem: no certificates")
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// tls.X509KeyPair never echoes key material in its errors.
		return nil, "", fmt.Errorf("node key pair: %w", err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, "", fmt.Errorf("node certificate: %w", err)
		}
	}
	st := &credState{roots: roots, cert: pair, leaf: leaf}
	id, err := st.verifyChain(pair.Certificate, x509.ExtKeyUsageClientAuth, time.Now())
	if err != nil {
		return nil, "", fmt.Errorf("node certificate: %w", err)
	}
	return st, id, nil
}

func stampFiles(files [3]string) ([3]fileStamp, error) {
	var out [3]fileStamp
	for i, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			return out, fmt.Errorf("tls file: %w", err)
		}
		out[i] = fileStamp{size: fi.Size(), modNano: fi.ModTime().UnixNano()}
	}
	return out, nil
}

// Reload reads the files again if any of them changed since the last
// read, and reports whether the credentials changed. The new certificate
// must chain to the new CA bundle and carry this node's identity;
// otherwise the current credentials stay and the error says why (once per
// change of the files, so a half-written pair is retried when the other
// file lands). Connections already open keep the credentials they were
// made with. Credentials built from PEM bytes never change.
func (c *Credentials) Reload() (bool, error) {
	if c.files[0] == "" {
		return false, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	stamp, err := stampFiles(c.files)
	if err != nil {
		return false, err
	}
	if stamp == c.stamp {
		return false, nil
	}
	c.stamp = stamp
	st, id, err := readCredFiles(c.files)
	if err != nil {
		return false, fmt.Errorf("kept the current credentials: %w", err)
	}
	if id != c.nodeID {
		return false, fmt.Errorf("kept the current credentials: the new certificate is for node %q, this node is %q", id, c.nodeID)
	}
	c.cur.Store(st)
	return true, nil
}

func (c *Credentials) state() *credState { return c.cur.Load() }

// NodeID is the identity in the node certificate.
func (c *Credentials) NodeID() string { return c.nodeID }

// NotAfter is when the current node certificate expires.
func (c *Credentials) NotAfter() time.Time { return c.state().leaf.NotAfter }

// Certificate is the current node certificate and key.
func (c *Credentials) Certificate() *tls.Certificate {
	cert := c.state().cert
	return &cert
}

// Roots is the current CA bundle.
func (c *Credentials) Roots() *x509.CertPool { return c.state().roots }

// verifyChain checks raw (leaf first) against the CA for usage and returns
// the leaf's node identity.
func (c *credState) verifyChain(raw [][]byte, usage x509.ExtKeyUsage, now time.Time) (string, error) {
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

func baseTLS(c *credState) *tls.Config {
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
	st := c.state() // one connection, one set of credentials
	cfg := baseTLS(st)
	cfg.ClientAuth = tls.RequireAnyClientCert
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		raw := rawCerts(cs.PeerCertificates)
		id, err := st.verifyChain(raw, x509.ExtKeyUsageClientAuth, time.Now())
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
	st := c.state() // one connection, one set of credentials
	cfg := baseTLS(st)
	cfg.InsecureSkipVerify = true // verified below, in VerifyConnection
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		raw := rawCerts(cs.PeerCertificates)
		id, err := st.verifyChain(raw, x509.ExtKeyUsageServerAuth, time.Now())
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
