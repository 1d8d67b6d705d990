package remediate

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
)

// Options builds gophercloud's Keystone credentials, catalog options and TLS
// settings: from a clouds.yaml entry, or from auth_url with application
// credential files. It reads the files on every call (so a rotated secret
// is picked up) and never puts a secret in an error.
func (a OpenStackAuth) Options() (gophercloud.AuthOptions, gophercloud.EndpointOpts, *tls.Config, error) {
	var none gophercloud.AuthOptions
	switch {
	case a.Cloud != "" && a.AuthURL != "":
		return none, gophercloud.EndpointOpts{}, nil, errors.New("cloud and auth_url are exclusive")
	case a.Cloud != "":
		opts := []clouds.ParseOption{clouds.WithCloudName(a.Cloud)}
		if a.CloudsFile != "" {
			if _, err := os.Stat(a.CloudsFile); err != nil {
				return none, gophercloud.EndpointOpts{}, nil, fmt.Errorf("clouds file: %w", err)
			}
			opts = append(opts, clouds.WithLocations(a.CloudsFile))
		}
		if a.Region != "" {
			opts = append(opts, clouds.WithRegion(a.Region))
		}
		ao, eo, tlsCfg, err := clouds.Parse(opts...)
		if err != nil {
			return none, gophercloud.EndpointOpts{}, nil, fmt.Errorf("clouds.yaml: %w", err)
		}
		if ao.IdentityEndpoint == "" {
			return none, gophercloud.EndpointOpts{}, nil, fmt.Errorf("clouds.yaml: cloud %q has no auth_url", a.Cloud)
		}
		return ao, eo, tlsCfg, nil
	case a.AuthURL != "":
		id, err := readSecretFile(a.ApplicationCredentialIDFile)
		if err != nil {
			return none, gophercloud.EndpointOpts{}, nil, fmt.Errorf("application credential id: %w", err)
		}
		secret, err := readSecretFile(a.ApplicationCredentialSecretFile)
		if err != nil {
			return none, gophercloud.EndpointOpts{}, nil, fmt.Errorf("application credential secret: %w", err)
		}
		var tlsCfg *tls.Config
		if a.CAFile != "" {
			pem, err := os.ReadFile(a.CAFile)
			if err != nil {
				return none, gophercloud.EndpointOpts{}, nil, fmt.Errorf("ca file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return none, gophercloud.EndpointOpts{}, nil, fmt.Errorf("ca file %s: no PEM certificates", a.CAFile)
			}
			tlsCfg = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		}
		return gophercloud.AuthOptions{IdentityEndpoint: a.AuthURL, ApplicationCredentialID: id, ApplicationCredentialSecret: secret},
			gophercloud.EndpointOpts{Region: a.Region, Availability: gophercloud.AvailabilityPublic}, tlsCfg, nil
	}
	return none, gophercloud.EndpointOpts{}, nil, errors.New("need cloud, or auth_url with application credential files")
}

// readSecretFile reads a one-line secret. Errors name the file, never the value.
func readSecretFile(path string) (string, error) {
	if path == "" {
		return "", errors.New("file not set")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	if strings.ContainsAny(v, "\r\n") {
		return "", fmt.Errorf("%s has more than one line", path)
	}
	return v, nil
}
