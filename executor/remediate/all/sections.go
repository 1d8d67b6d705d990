package all

import (
	"github.com/drwatch/drwatch/executor/remediate/repair"
	"github.com/drwatch/drwatch/internal/field"
)

// Defaulted returns c with every zero field set from its `default` tag
// (field.SetDefaults), and then each section's defaults derived from its
// other fields (repair.Deriver): cloud_debris.csi_cluster is
// cloud_debris.cluster_name, and openstack.never_ready_instances.max_age
// is 1h, or 3 times active_for when that is longer. In this section zero
// means unset, written in the file or not; a negative value is kept, for
// Validate to name: it is a mistake, not "unset".
func (c Config) Defaulted() Config {
	repair.Defaults(&c)
	return c
}

// Validate returns every problem at once, each naming its field by its path
// inside the section ("drain_trap.mode"), section by section in the order
// of Config's lines.
func (c Config) Validate() field.Errors {
	return repair.Validate(&c)
}
