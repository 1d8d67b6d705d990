package openstackauth

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/drwatch/drwatch/internal/field"
	"github.com/drwatch/drwatch/internal/regularfile"
	"gopkg.in/yaml.v2"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
)

// Credentials say where Keystone credentials come from: a clouds.yaml
// entry (Cloud, CloudsFile), or AuthURL with an application credential
// kept in two files. They are one section of the configuration file,
// inline wherever they appear (an octavia probe, the OpenStack repairs):
// the yaml and doc tags are the file's keys and the reference's text. No
// field has a default: an empty CloudsFile searches the usual places and
// an empty Region keeps the cloud's (or the catalog's only) region.
type Credentials struct {
	Cloud      string `yaml:"cloud" doc:"The clouds.yaml entry to use, instead of auth_url."`
	CloudsFile string `yaml:"clouds_file" doc:"With cloud: the clouds.yaml path; empty searches ./clouds.yaml, ~/.config/openstack/clouds.yaml and /etc/openstack/clouds.yaml, as the openstack CLI does."`
	AuthURL    string `yaml:"auth_url" doc:"Keystone v3 URL (https://keystone.example:5000/v3), for application-credential auth without clouds.yaml."`
	// Region selects the catalog region; with Cloud it overrides the cloud's.
	Region string `yaml:"region" doc:"Catalog region; with cloud it overrides the cloud's."`
	// The application credential's ID and secret are read from files on
	// every use, so a rotated secret is picked up; the secret is never
	// logged.
	ApplicationCredentialIDFile     string `yaml:"application_credential_id_file" doc:"With auth_url: file holding the application credential's ID."`
	ApplicationCredentialSecretFile string `yaml:"application_credential_secret_file" doc:"With auth_url: file holding the application credential's secret."`
	// CAFile verifies Keystone and the services over TLS, with AuthURL;
	// clouds.yaml has its own cacert.
	CAFile string `yaml:"ca_file" doc:"With auth_url: PEM bundle to trust for Keystone and the OpenStack APIs instead of the system roots (clouds.yaml has cacert)."`
}

// IsZero reports whether no field is set: credentials nobody asked for.
func (c Credentials) IsZero() bool { return c == Credentials{} }

// Validate reports every problem of the credentials at once, each named by
// its field's path relative to the section that holds them ("auth_url").
// Credentials are complete: a cloud, or auth_url with both application
// credential files; a field of the other shape is a mistake, named at its
// own path. It is pure: whether the files exist is the caller's check
// (Files).
func (c Credentials) Validate() field.Errors {
	var es field.Errors
	if c.Cloud != "" {
		for _, f := range []struct{ path, val string }{{"auth_url", c.AuthURL},
			{"application_credential_id_file", c.ApplicationCredentialIDFile}, {"application_credential_secret_file", c.ApplicationCredentialSecretFile}} {
			if f.val != "" {
				es.Add(f.path, "set either cloud or application credentials, not both")
			}
		}
		if c.CAFile != "" {
			es.Add("ca_file", "only with auth_url (clouds.yaml has cacert)")
		}
		return es
	}
	if required(&es, "auth_url", c.AuthURL) {
		if u, err := url.Parse(c.AuthURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			es.Add("auth_url", "%q must be an http(s) URL", c.AuthURL)
		}
	}
	required(&es, "application_credential_id_file", c.ApplicationCredentialIDFile)
	required(&es, "application_credential_secret_file", c.ApplicationCredentialSecretFile)
	if c.CloudsFile != "" {
		es.Add("clouds_file", "needs cloud")
	}
	return es
}

// required reports whether val is set, adding "required" at path when not.
func required(es *field.Errors, path, val string) bool {
	if strings.TrimSpace(val) == "" {
		es.Add(path, "required")
		return false
	}
	return true
}

// Files lists the files AuthOptions reads for these credentials, for a
// caller that checks they exist first: the clouds.yaml with cloud, the
// application credential files and the CA bundle without. A field of the
// other shape is left out: Validate refuses it.
func (c Credentials) Files() []field.File {
	var out []field.File
	add := func(name, path string) {
		if path != "" {
			out = append(out, field.File{Field: name, Path: path})
		}
	}
	if c.Cloud != "" {
		add("clouds_file", c.CloudsFile)
		return out
	}
	add("application_credential_id_file", c.ApplicationCredentialIDFile)
	add("application_credential_secret_file", c.ApplicationCredentialSecretFile)
	add("ca_file", c.CAFile)
	return out
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
			files, err := readCloudsFile(c.CloudsFile)
			if err != nil {
				return none, gophercloud.EndpointOpts{}, nil, err
			}
			opts = append(opts, files...)
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
		id, err := readCredentialFile("application_credential_id_file", c.ApplicationCredentialIDFile)
		if err != nil {
			return none, gophercloud.EndpointOpts{}, nil, err
		}
		secret, err := readCredentialFile("application_credential_secret_file", c.ApplicationCredentialSecretFile)
		if err != nil {
			return none, gophercloud.EndpointOpts{}, nil, err
		}
		var tlsCfg *tls.Config
		if c.CAFile != "" {
			pem, err := regularfile.Read("ca_file", c.CAFile)
			if err != nil {
				return none, gophercloud.EndpointOpts{}, nil, err
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return none, gophercloud.EndpointOpts{}, nil, errors.New("ca_file: no PEM certificates")
			}
			tlsCfg = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		}
		ao := gophercloud.AuthOptions{IdentityEndpoint: c.AuthURL, ApplicationCredentialID: id, ApplicationCredentialSecret: secret}
		return ao, gophercloud.EndpointOpts{Region: c.Region, Availability: gophercloud.AvailabilityPublic}, tlsCfg, nil
	}
	return none, gophercloud.EndpointOpts{}, nil, errors.New("need cloud, or auth_url with application credential files")
}

// readCredentialFile reads a one-line credential file. Errors name the
// field, never the path or the content.
func readCredentialFile(field, path string) (string, error) {
	b, err := regularfile.Read(field, path)
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", fmt.Errorf("%s: empty", field)
	}
	if strings.ContainsAny(v, "\r\n") {
		return "", fmt.Errorf("%s: more than one line", field)
	}
	return v, nil
}

// readCloudsFile reads the clouds.yaml at path, and the secure.yaml beside
// it if there is one, through regularfile, for clouds.Parse: left to find
// the files itself, it would read a special file without bound and print
// the path when it is missing. A decoding error is not passed on, since
// the decoder may quote the content.
func readCloudsFile(path string) ([]clouds.ParseOption, error) {
	b, err := regularfile.Read("clouds_file", path)
	if err != nil {
		return nil, err
	}
	var probe clouds.Clouds
	if yaml.Unmarshal(b, &probe) != nil {
		return nil, errors.New("clouds_file: not a clouds.yaml (content not shown)")
	}
	opts := []clouds.ParseOption{clouds.WithCloudsYAML(bytes.NewReader(b))}
	secure := filepath.Join(filepath.Dir(path), "secure.yaml")
	if _, err := os.Lstat(secure); err == nil {
		sb, err := regularfile.Read("clouds_file: secure.yaml beside it", secure)
		if err != nil {
			return nil, err
		}
		if yaml.Unmarshal(sb, &probe) != nil {
			return nil, errors.New("clouds_file: secure.yaml beside it: not a clouds.yaml (content not shown)")
		}
		opts = append(opts, clouds.WithSecureYAML(bytes.NewReader(sb)))
	}
	return opts, nil
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
