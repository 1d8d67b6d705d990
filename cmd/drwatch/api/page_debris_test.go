package api

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
)

// A cloud-debris volume stuck deleting is on the Repairs section as a
// failure that needs an admin and is not retried, with the admin's
// command from the record's detail.
func TestPageRepairsShowsStuckDebris(t *testing.T) {
	st := fxFailedOver()
	st.State.Remediations = append(st.State.Remediations, failover.RemediationRecord{Index: 4302, At: fxAt(6 * time.Minute),
		Remediation: failover.Remediation{Name: "cloud-debris", Gen: 4200, Target: "volume/9a1e", Verb: "delete",
			Result: failover.RemediationFailed, NeedsAdmin: true, Key: "cloud-debris/volume/9a1e",
			Reason: "volume pvc-9a1e (PersistentVolume pvc-9a1e, available) its PersistentVolume is absent from the cluster",
			Detail: "volume/9a1e stuck deleting since 2026-11-21T11:40:00Z: an admin must run: openstack volume set --state error 9a1e && openstack volume delete --force 9a1e"}})
	_, body := pageGet(t, pageServer(t, st, nil), "/")
	rows := regexp.MustCompile(`(?s)<tr class="repair">(.*?)</tr>`).FindAllSubmatch(body, -1)
	if len(rows) != 3 {
		t.Fatalf("got %d repair rows, want 3", len(rows))
	}
	newest := text(rows[0][1])
	for _, want := range []string{"cloud-debris", "delete volume/9a1e", "failed: needs an admin, not retried", "openstack volume set --state error 9a1e"} {
		if !strings.Contains(newest, want) {
			t.Errorf("repair row %q lacks %q", newest, want)
		}
	}
}
