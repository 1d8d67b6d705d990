package remediate

import (
	"strings"
	"testing"
	"time"
)

// reboot_wait defaults to a safe wait, and a wait too short for a node to
// reboot is refused, naming the field.
func TestOrphanedPodsRebootWait(t *testing.T) {
	if got := (Config{}).WithDefaults().OrphanedPods.RebootWait; got != DefaultOrphanRebootWait {
		t.Fatalf("default reboot_wait: got %s, want %s", got, DefaultOrphanRebootWait)
	}
	for _, tc := range []struct {
		wait    time.Duration
		wantErr bool
	}{{0, false}, {time.Minute, false}, {time.Hour, false}, {30 * time.Second, true}, {-time.Minute, true}} {
		var c Config
		c.OrphanedPods.RebootNode = true
		c.OrphanedPods.RebootWait = tc.wait
		err := c.WithDefaults().Validate()
		if tc.wantErr != (err != nil) || (err != nil && !strings.Contains(err.Error(), "remediations.orphaned_pods.reboot_wait:")) {
			t.Errorf("reboot_wait %s: got %v, want error %v naming remediations.orphaned_pods.reboot_wait", tc.wait, err, tc.wantErr)
		}
	}
}
