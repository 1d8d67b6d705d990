package node

import (
	"github.com/drwatch/drwatch/cmd/drwatch/config"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/probes"
)

// ProbeSpecs turns the configured probes into the scheduler's site specs.
func ProbeSpecs(c *config.Config) []probes.SiteSpec {
	out := []probes.SiteSpec{
		{Site: string(failover.Primary), Probes: probeSpecs(c.Sites.Primary.Probes)},
		{Site: string(failover.Backup), Probes: probeSpecs(c.Sites.Backup.Probes)},
	}
	return out
}

func probeSpecs(in []config.Probe) []probes.Spec {
	out := make([]probes.Spec, 0, len(in))
	for _, p := range in {
		s := probes.Spec{Name: p.Name, Type: p.Type, Timeout: p.Timeout, Critical: p.Critical == nil || *p.Critical}
		switch p.Type {
		case "http":
			s.HTTP = &probes.HTTPSpec{URL: p.URL, ConnectTo: p.ConnectTo, CAFile: p.CAFile, ExpectStatus: p.ExpectStatus,
				BodyMatch: p.BodyMatch, CertMinValidity: p.CertMinValidity, Headers: p.Headers, FollowRedirects: p.FollowRedirects}
		case "tcp":
			s.TCP = &probes.TCPSpec{Address: p.Address, TLS: p.TLS, ServerName: p.ServerName, CAFile: p.CAFile, CertMinValidity: p.CertMinValidity}
		case "kubernetes":
			s.Kubernetes = &probes.KubernetesSpec{Server: p.Server, CAFile: p.CAFile, TokenFile: p.TokenFile,
				ClientCertFile: p.ClientCertFile, ClientKeyFile: p.ClientKeyFile, Kubeconfig: p.Kubeconfig, Context: p.Context, Endpoint: p.Endpoint}
		case "octavia":
			s.Octavia = &probes.OctaviaSpec{Cloud: p.Cloud, CloudsFile: p.CloudsFile, AuthURL: p.AuthURL, Region: p.Region,
				ApplicationCredentialIDFile: p.ApplicationCredentialIDFile, ApplicationCredentialSecretFile: p.ApplicationCredentialSecretFile,
				CAFile: p.CAFile, LoadBalancer: p.LoadBalancer, HealthyOperatingStatuses: p.HealthyOperatingStatuses,
				RequireActive: p.RequireActive, CheckVIP: p.CheckVIP}
			if p.CheckVIP {
				// vip_port has a default; the prober rejects a port without the check.
				s.Octavia.VIPPort = p.VIPPort
			}
		}
		out = append(out, s)
	}
	return out
}
