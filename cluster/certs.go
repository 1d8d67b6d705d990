package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"strings"
	"time"
)

// IdentityScheme and IdentityHost form a node's identity, carried in its
// certificate as exactly one URI SAN: drwatch://node/<id>. A URI SAN (not a
// DNS SAN) keeps identity apart from where the node lives: addresses change
// with re-IPs and NAT, the ID does not, and a DNS name could collide with a
// real host name the certificate also covers.
//
// A client certificate (a person's or a tool's, for the HTTPS API) names
// its holder with drwatch://client/<name> instead and is valid for client
// authentication only, so it can never pass as a watcher.
const (
	IdentityScheme     = "drwatch"
	IdentityHost       = "node"
	ClientIdentityHost = "client"
)

// ErrBadNodeID reports a node ID that cannot be an identity.
var ErrBadNodeID = errors.New("bad node id")

// IdentityURI is the URI SAN naming node id.
func IdentityURI(id string) *url.URL {
	return &url.URL{Scheme: IdentityScheme, Host: IdentityHost, Path: "/" + id}
}

// ValidNodeID reports whether id can name a node: 1 to 64 characters from
// [A-Za-z0-9._-], so it is safe in a URI path, a file name and a log line.
func ValidNodeID(id string) error {
	if id == "" || len(id) > 64 {
		return fmt.Errorf("%w %q: want 1 to 64 characters", ErrBadNodeID, id)
	}
	for _, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
		if !ok {
			return fmt.Errorf("%w %q: want only [A-Za-z0-9._-]", ErrBadNodeID, id)
		}
	}
	return nil
}

// ClientIdentityURI is the URI SAN naming API client name.
func ClientIdentityURI(name string) *url.URL {
	return &url.URL{Scheme: IdentityScheme, Host: ClientIdentityHost, Path: "/" + name}
}

// NodeIDFromCert returns the node ID in cert's drwatch://node/<id> URI SAN.
// A certificate with none, or more than one, has no identity.
func NodeIDFromCert(cert *x509.Certificate) (string, error) {
	return identityFromCert(cert, IdentityHost)
}

// ClientNameFromCert returns the name in cert's drwatch://client/<name>
// URI SAN, for a certificate issued with IssueClientCert.
func ClientNameFromCert(cert *x509.Certificate) (string, error) {
	return identityFromCert(cert, ClientIdentityHost)
}

func identityFromCert(cert *x509.Certificate, host string) (string, error) {
	var ids []string
	for _, u := range cert.URIs {
		if u.Scheme == IdentityScheme && u.Host == host {
			ids = append(ids, strings.TrimPrefix(u.Path, "/"))
		}
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("certificate has no drwatch://%s/<id> URI SAN", host)
	case 1:
	default:
		return "", fmt.Errorf("certificate has %d drwatch %s identities, want 1", len(ids), host)
	}
	if err := ValidNodeID(ids[0]); err != nil {
		return "", err
	}
	return ids[0], nil
}

// NewCA makes a self-signed ECDSA P-256 certificate authority for a cluster,
// valid from one hour ago (clock skew) for ttl. It returns PEM blocks
// "CERTIFICATE" and "EC PRIVATE KEY".
func NewCA(name string, ttl time.Duration) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate ca key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"drwatch"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(ttl),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("create ca certificate: %w", err)
	}
	return encodePair(der, key)
}

// IssueNodeCert issues a certificate for node nodeID, signed by ca, usable
// for both TLS server and client authentication. Its identity is the URI SAN
// drwatch://node/<nodeID>; hosts (DNS names or IP addresses) are added as
// ordinary SANs so the same certificate can serve HTTPS to humans and tools.
// The key is ECDSA P-256, valid from one hour ago for ttl.
func IssueNodeCert(ca *x509.Certificate, caKey crypto.Signer, nodeID string, hosts []string, ttl time.Duration) (certPEM, keyPEM []byte, err error) {
	if err := ValidNodeID(nodeID); err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		URIs:        []*url.URL{IdentityURI(nodeID)},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return issue(ca, caKey, "node", nodeID, tmpl, ttl)
}

// IssueClientCert issues an API client certificate for name (a person or
// a tool), signed by ca: client authentication only, identity URI SAN
// drwatch://client/<name>, no host names. The watchers refuse it as a peer.
func IssueClientCert(ca *x509.Certificate, caKey crypto.Signer, name string, ttl time.Duration) (certPEM, keyPEM []byte, err error) {
	if err := ValidNodeID(name); err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		URIs:        []*url.URL{ClientIdentityURI(name)},
	}
	return issue(ca, caKey, "client", name, tmpl, ttl)
}

// issue completes tmpl (serial, subject, validity from one hour ago for
// ttl, key usage) and signs a fresh ECDSA P-256 key with ca.
func issue(ca *x509.Certificate, caKey crypto.Signer, kind, name string, tmpl *x509.Certificate, ttl time.Duration) (certPEM, keyPEM []byte, err error) {
	if ca == nil || caKey == nil {
		return nil, nil, fmt.Errorf("issue %s cert: nil ca or key", kind)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate %s key: %w", kind, err)
	}
	if tmpl.SerialNumber, err = newSerial(); err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl.Subject = pkix.Name{CommonName: name, Organization: []string{"drwatch"}}
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(ttl)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("create %s certificate %s: %w", kind, name, err)
	}
	return encodePair(der, key)
}

// ParseCA parses a CA certificate and its private key from PEM, as written
// by NewCA, for use with IssueNodeCert.
func ParseCA(certPEM, keyPEM []byte) (*x509.Certificate, crypto.Signer, error) {
	b, _ := pem.Decode(certPEM)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, nil, errors.New("parse ca: no CERTIFICATE pem block")
	}
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parse ca certificate: %w", err)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, nil, errors.New("parse ca: no private key pem block")
	}
	var key any
	switch kb.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(kb.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(kb.Bytes)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("parse ca key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, nil, errors.New("parse ca key: not a signing key")
	}
	return cert, signer, nil
}

func newSerial() (*big.Int, error) {
	s, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("certificate serial: %w", err)
	}
	return s, nil
}

func encodePair(der []byte, key *ecdsa.PrivateKey) (certPEM, keyPEM []byte, err error) {
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("marshal key: %w", err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	return certPEM, keyPEM, nil
}
