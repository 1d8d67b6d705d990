package openstackauth

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

// Credentials say where Keystone credentials come from: a
// clouds.yaml entry (Cloud, CloudsFile), or AuthURL with an application
// credential kept in two files. The octavia probe and the OpenStack
// remediators share them.
type Credentials struct {
	Cloud, CloudsFile                                            string
	AuthURL                                                      string
	ApplicationCredentialIDFile, ApplicationCredentialSecretFile string
	CAFile                                                       string // with AuthURL; clouds.yaml has its own cacert
	Region                                                       string
}

// AuthOptions builds gophercloud's Keystone credentials, catalog options
// and TLS settings. It reads the files on every call, so a rotated secret
// is picked up, and never puts a secret in an error.
func (c Credentials) AuthOptions() (gophercloud.AuthOptions, gophercloud.EndpointOpts, *tls.Config, error) {
	var none gophercloud.AuthOptions
	switch {
	case c.Cloud != "" && c.AuthURL != "":
		return none, gophercloud.EndpointOpts{}, nil, errors.New("cloud and auth_url are exclusive")
	case c.Cloud != "":
		opts := []clouds.ParseOption{clouds.WithCloudName(c.Cloud)}
		if c.CloudsFile != "" {
			if _, err := os.Stat(c.CloudsFile); err != nil {
				return none, gophercloud.EndpointOpts{}, nil, fmt.Errorf("clouds file: %w", err)
			}
			opts = append(opts, clouds.WithLocations(c.CloudsFile))
		}
		if c.Region != "" {
			opts = append(opts, clouds.WithRegion(c.Region))
		}
		ao, eo, tlsCfg, err := clouds.Parse(opts...)
		if err != nil {
			// clouds.Parse errors name files and clouds, not secrets.
			return none, gophercloud.EndpointOpts{}, nil, fmt.Errorf("clouds.yaml: %w", err)
		}
		if ao.IdentityEndpoint == "" {
			return none, gophercloud.EndpointOpts{}, nil, fmt.Errorf("clouds.yaml: cloud %q has no auth_url", c.Cloud)
		}
		return ao, eo, tlsCfg, nil
	case c.AuthURL != "":
		if c.ApplicationCredentialIDFile == "" || c.ApplicationCredentialSecretFile == "" {
			return none, gophercloud.EndpointOpts{}, nil, errors.New("auth_url needs application_credential_id_file and application_credential_secret_file")
		}
		id, err := readCredentialFile(c.ApplicationCredentialIDFile)
		if err != nil {
			return none, gophercloud.EndpointOpts{}, nil, fmt.Errorf("application credential id: %w", err)
		}
		secret, err := readCredentialFile(c.ApplicationCredentialSecretFile)
		if err != nil {
			return none, gophercloud.EndpointOpts{}, nil, fmt.Errorf("application credential secret: %w", err)
		}
		var tlsCfg *tls.Config
		if c.CAFile != "" {
			pem, err := os.ReadFile(c.CAFile)
			if err != nil {
				return none, gophercloud.EndpointOpts{}, nil, fmt.Errorf("ca file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return none, gophercloud.EndpointOpts{}, nil, fmt.Errorf("ca file %s: no PEM certificates", c.CAFile)
			}
			tlsCfg = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		}
		ao := gophercloud.AuthOptions{IdentityEndpoint: c.AuthURL, ApplicationCredentialID: id, ApplicationCredentialSecret: secret}
		return ao, gophercloud.EndpointOpts{Region: c.Region, Availability: gophercloud.AvailabilityPublic}, tlsCfg, nil
	}
	return none, gophercloud.EndpointOpts{}, nil, errors.New("need cloud, or auth_url with application credential files")
}

// readCredentialFile reads a one-line credential file. Errors name the
// file, never its content.
func readCredentialFile(path string) (string, error) {
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

// LooksLikeID reports whether s has the shape of an OpenStack
// resource ID (a UUID in its 36-character form), so a reference can be
// looked up by ID rather than by name.
func LooksLikeID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		switch i {
		case 8, 13, 18, 23:
			if r != '-' {
				return false
			}
		default:
			if (r < '0' || r > '9') && (r < 'a' || r > 'f') && (r < 'A' || r > 'F') {
				return false
			}
		}
	}
	return true
}
