package remediate

import (
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/internal/field"
)

// reboot_wait defaults to a safe wait, and a wait too short for a node to
// reboot is refused, naming the field.
func TestOrphanedPodsRebootWait(t *testing.T) {
	if got := (Config{}).Defaulted().OrphanedPods.RebootWait; got != DefaultOrphanRebootWait {
		t.Fatalf("default reboot_wait: got %s, want %s", got, DefaultOrphanRebootWait)
	}
	for _, tc := range []struct {
		wait    time.Duration
		wantErr bool
	}{{0, false}, {time.Minute, false}, {time.Hour, false}, {30 * time.Second, true}, {-time.Minute, true}} {
		var c Config
		c.OrphanedPods.RebootNode = true
		c.OrphanedPods.RebootWait = tc.wait
		errs := c.Defaulted().Validate()
		if tc.wantErr != (len(errs) != 0) || (len(errs) != 0 && (!hasPath(errs, "orphaned_pods.reboot_wait") ||
			!strings.Contains(errs.Under("remediations").Error(), "remediations.orphaned_pods.reboot_wait: "))) {
			t.Errorf("reboot_wait %s: got %v, want error %v at orphaned_pods.reboot_wait, shown as remediations.orphaned_pods.reboot_wait", tc.wait, errs, tc.wantErr)
		}
	}
}

// hasPath reports whether errs has a problem at path, relative to the
// remediations section.
func hasPath(errs field.Errors, path string) bool {
	for _, e := range errs {
		if e.Path == path {
			return true
		}
	}
	return false
}
