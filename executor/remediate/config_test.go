package remediate

import (
	"slices"
	"testing"

	"github.com/drwatch/drwatch/internal/field"
)

// max_disrupted_nodes is per cluster, defaults to one node, and a negative
// value is named by its path.
func TestConfigMaxDisruptedNodes(t *testing.T) {
	var c Config
	c.Kubernetes.Backup.MaxDisruptedNodes = -1
	want := field.Errors{{Path: "kubernetes.backup.max_disrupted_nodes", Msg: "-1 must be >= 0 (0 or unset: the default)"}}
	if got := c.Validate(); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	c.Kubernetes.Backup.MaxDisruptedNodes = 2
	if got, want := c.Kubernetes.Site("primary").MaxDisrupted(), 1; got != want {
		t.Errorf("primary unset: got %d, want the default %d", got, want)
	}
	if got, want := c.Kubernetes.Site("backup").MaxDisrupted(), 2; got != want {
		t.Errorf("backup: got %d, want %d", got, want)
	}
}
