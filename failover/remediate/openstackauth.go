package remediate

import (
	"crypto/tls"

	"github.com/drwatch/drwatch/internal/openstackauth"
	"github.com/gophercloud/gophercloud/v2"
)

// Options builds gophercloud's Keystone credentials, catalog options and TLS
// settings: from a clouds.yaml entry, or from auth_url with application
// credential files. It reads the files on every call (so a rotated secret
// is picked up) and never puts a secret in an error. The octavia probe
// builds its credentials the same way (openstackauth.Credentials).
func (a OpenStackAuth) Options() (gophercloud.AuthOptions, gophercloud.EndpointOpts, *tls.Config, error) {
	return openstackauth.Credentials{Cloud: a.Cloud, CloudsFile: a.CloudsFile, AuthURL: a.AuthURL,
		ApplicationCredentialIDFile: a.ApplicationCredentialIDFile, ApplicationCredentialSecretFile: a.ApplicationCredentialSecretFile,
		CAFile: a.CAFile, Region: a.Region}.AuthOptions()
}
