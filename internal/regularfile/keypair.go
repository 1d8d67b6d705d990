package regularfile

import (
	"crypto/tls"
	"fmt"
)

// KeyPair is tls.LoadX509KeyPair reading both files through Read, so that
// errors name the fields and never the paths. tls.X509KeyPair never quotes
// key material in its errors.
func KeyPair(certField, certPath, keyField, keyPath string) (tls.Certificate, error) {
	certPEM, err := Read(certField, certPath)
	if err != nil {
		return tls.Certificate{}, err
	}
	keyPEM, err := Read(keyField, keyPath)
	if err != nil {
		return tls.Certificate{}, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s and %s: %w", certField, keyField, err)
	}
	return cert, nil
}
