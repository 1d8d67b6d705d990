package debris

import (
	"strings"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/internal/field"
)

// CloudDebrisConfig configures cloud-debris. A resource is the cluster's
// only by its exact cloud-provider-openstack naming or Cinder CSI metadata.
type CloudDebrisConfig struct {
	remediate.Settings      `yaml:",inline"`
	remediate.OpenStackAuth `yaml:",inline"`
	Site                    string `yaml:"site" default:"primary" doc:"Which site's Kubernetes cluster owns the resources (its Services and PersistentVolumes are checked): primary or backup."`
	ProjectID               string `yaml:"project_id" doc:"ID of the project whose resources are considered; empty means the credentials' own project. Another project's resources are never listed, counted or deleted, even with admin credentials."`
	ClusterName             string `yaml:"cluster_name" doc:"The cloud provider's --cluster-name (required when enabled): load balancers named kube_service_<cluster_name>_<namespace>_<service> and floating IPs described \"Floating IP for Kubernetes external service <namespace>/<service> from cluster <cluster_name>\" are the cluster's. The default kubernetes is refused unless decommissioned: another cluster of the project may keep it too."`
	CSICluster              string `yaml:"csi_cluster" default:"(cluster_name)" doc:"The Cinder CSI plugin's --cluster: volumes whose metadata cinder.csi.openstack.org/cluster equals it are the cluster's (kubernetes is refused unless decommissioned)."`
	// Decommissioned skips the Kubernetes check: the cluster is gone for
	// good, so everything with its naming or metadata is debris.
	Decommissioned bool          `yaml:"decommissioned" default:"false" doc:"The cluster is gone for good: every resource with its naming or metadata is debris, without asking its Kubernetes API (false: only those whose Service or PersistentVolume is absent there, that no Service refers to, and that Kubernetes did not ask to keep). What drwatch saw kept is kept even then. Mind the caps and brake_share: with it, everything qualifies at once."`
	DeleteTimeout  time.Duration `yaml:"delete_timeout" default:"5m" doc:"How long one delete is followed until OpenStack answers 404; a volume still deleting or error_deleting after it (or found so for longer) is reported for an admin and never retried."`
}

// DefaultCloudProviderCluster is cloud-provider-openstack's and Cinder
// CSI's default --cluster-name and --cluster. Two clusters of a project
// that both keep it carry the same marks, so a live cluster's cloud-debris
// refuses it: the neighbour's resources would look like its own debris.
const DefaultCloudProviderCluster = "kubernetes"

// Validate implements repair.Section.
func (d CloudDebrisConfig) Validate() field.Errors {
	var errs field.Errors
	errs = append(errs, d.Settings.Validate()...)
	errs = append(errs, remediate.ValidateAuth(d.OpenStackAuth, d.Mode.Enabled())...)
	remediate.ValidateSite(&errs, "", d.Site)
	if d.Mode.Enabled() && d.ClusterName == "" {
		errs.Add("cluster_name", "required when enabled: it is how the cluster's resources are told from any other's")
	}
	for _, f := range []struct{ path, v string }{{"cluster_name", d.ClusterName}, {"csi_cluster", d.CSICluster}} {
		if len(f.v) > 200 || strings.ContainsAny(f.v, " \t\n/") {
			errs.Add(f.path, "%q must be at most 200 bytes, without spaces or slashes", f.v)
		}
		if f.v == DefaultCloudProviderCluster && !d.Decommissioned {
			errs.Add(f.path, "%q is cloud-provider-openstack's default, which any other cluster in the project may keep too: its resources would be taken for this one's; set the cluster's own --cluster-name, or decommissioned: true", f.v)
		}
	}
	remediate.NonNegative(&errs, "delete_timeout", d.DeleteTimeout)
	return errs
}

// DefaultDeleteTimeout is cloud_debris.delete_timeout's default.
const DefaultDeleteTimeout = 5 * time.Minute

// DeriveDefaults implements repair.Deriver: csi_cluster is cluster_name
// unless set.
func (d *CloudDebrisConfig) DeriveDefaults() {
	if d.CSICluster == "" {
		d.CSICluster = d.ClusterName
	}
}
