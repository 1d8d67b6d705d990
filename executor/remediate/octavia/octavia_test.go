package octavia

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	"github.com/drwatch/drwatch/test/openstacktest"
	"github.com/drwatch/drwatch/test/poll"
)

// TestFailoverError: a load balancer forced to ERROR in Octavia's database
// is planned for a failover; Apply with admin credentials calls the real
// failover API and follows the load balancer back to ACTIVE; then the plan
// is empty and applying again is a no-op. A later ERROR episode gets a new
// key.
func TestFailoverError(t *testing.T) {
	s := openstacktest.Shared(t)
	id := newLB(t, s, "ERROR", "")
	r := remediator(t, s, "admin", []string{id})
	ctx := context.Background()

	acts, err := r.Plan(ctx)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	if len(acts) != 1 {
		t.Fatalf("got %d actions, want 1: %+v", len(acts), acts)
	}
	a := acts[0]
	if a.Target != "loadbalancer/"+id || a.Verb != "failover" || !strings.Contains(a.Reason, "provisioning_status ERROR since ") {
		t.Fatalf("got action %q %q %q, want failover of loadbalancer/%s because of ERROR", a.Verb, a.Target, a.Reason, id)
	}
	if !strings.HasPrefix(a.Key, id+"@") {
		t.Fatalf("got key %q, want %s@<updated_at>", a.Key, id)
	}
	if err := r.Apply(ctx, a); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if got := provisioning(t, s, id); got != "ACTIVE" {
		t.Fatalf("got provisioning_status %s after apply, want ACTIVE", got)
	}

	acts, err = r.Plan(ctx)
	if err != nil || len(acts) != 0 {
		t.Fatalf("got plan %+v, %v after failover, want none", acts, err)
	}
	if err := r.Apply(ctx, a); err != nil {
		t.Fatalf("repeated apply: got %v, want nil (no-op)", err)
	}

	// A second episode: a new ERROR sets a new updated_at, so the key is
	// new. updated_at has one-second resolution (see the package doc), so
	// the second ERROR is written once the clock is past the first one's
	// second.
	first, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(a.Key, id+"@"))
	if err != nil {
		t.Fatalf("key %q: %v", a.Key, err)
	}
	poll.Until(t, 10*time.Second, func() bool { return time.Now().After(first.Add(time.Second)) },
		"the clock is past the first episode's updated_at %v", first)
	if err := s.SetLBStatus(ctx, id, "ERROR", ""); err != nil {
		t.Fatal(err)
	}
	acts, err = r.Plan(ctx)
	if err != nil || len(acts) != 1 {
		t.Fatalf("got plan %+v, %v for a second ERROR, want one action", acts, err)
	}
	if acts[0].Key == a.Key {
		t.Fatalf("got the same key %q for a second episode, want a new one", a.Key)
	}
}

// TestHealthyLookAlikes: ACTIVE in any operating status, a young PENDING_*
// and a DELETED load balancer get no action; an old PENDING_* does.
func TestHealthyLookAlikes(t *testing.T) {
	s := openstacktest.Shared(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name         string
		prov, oper   string
		after        time.Duration // clock offset
		wantFailover bool
	}{
		{"active online", "", "ONLINE", 0, false},
		{"active degraded", "", "DEGRADED", 0, false},
		{"active error operating", "", "ERROR", 0, false},
		{"young pending update", "PENDING_UPDATE", "", 0, false},
		{"pending delete", "PENDING_DELETE", "", time.Hour, false},
		{"deleted", "DELETED", "", time.Hour, false},
		{"old pending update", "PENDING_UPDATE", "", 11 * time.Minute, true},
		{"old pending create", "PENDING_CREATE", "", 11 * time.Minute, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := newLB(t, s, tc.prov, tc.oper)
			off := tc.after
			r := remediator(t, s, "admin", []string{id}, WithClock(func() time.Time { return time.Now().Add(off) }))
			acts, err := r.Plan(ctx)
			if err != nil {
				t.Fatalf("plan: %v", err)
			}
			if got := len(acts) == 1; got != tc.wantFailover || len(acts) > 1 {
				t.Fatalf("got %d actions %+v, want failover=%v", len(acts), acts, tc.wantFailover)
			}
			if tc.wantFailover && !strings.Contains(acts[0].Reason, tc.prov+" since ") {
				t.Fatalf("got reason %q, want it to name %s", acts[0].Reason, tc.prov)
			}
		})
	}
}

// TestYoungPendingApplyWaits: Apply on a load balancer PENDING_UPDATE (a
// failover in progress) does not call the API again but follows it: once
// Apply has logged that it follows, the in-progress work completes
// (ACTIVE) and Apply returns nil. Calling the failover API on a
// PENDING_UPDATE load balancer would have failed with 409.
func TestYoungPendingApplyWaits(t *testing.T) {
	s := openstacktest.Shared(t)
	id := newLB(t, s, "PENDING_UPDATE", "")
	logs := &syncBuffer{}
	r := remediator(t, s, "admin", []string{id})
	r.log = slog.New(slog.NewTextHandler(logs, nil))
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		done <- r.Apply(ctx, remediate.Action{Target: "loadbalancer/" + id, Verb: "failover", Data: id})
	}()
	poll.For(t, time.Minute, "apply following the busy load balancer", func() bool {
		return strings.Contains(logs.String(), "load balancer busy, following it")
	})
	select {
	case err := <-done:
		t.Fatalf("apply returned %v while the load balancer was PENDING_UPDATE, want it to wait", err)
	default:
	}
	if err := s.SetLBStatus(ctx, id, "ACTIVE", ""); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("apply: got %v, want nil", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("apply did not return within 1m of the load balancer turning ACTIVE")
	}
}

// TestFollowError: a load balancer that goes back to ERROR while Apply
// follows it is a failure wrapping ErrFailoverFailed.
func TestFollowError(t *testing.T) {
	s := openstacktest.Shared(t)
	id := newLB(t, s, "PENDING_UPDATE", "")
	logs := &syncBuffer{}
	r := remediator(t, s, "admin", []string{id})
	r.log = slog.New(slog.NewTextHandler(logs, nil))
	done := make(chan error, 1)
	go func() {
		done <- r.Apply(context.Background(), remediate.Action{Target: "loadbalancer/" + id, Verb: "failover", Data: id})
	}()
	poll.For(t, time.Minute, "apply following the busy load balancer", func() bool {
		return strings.Contains(logs.String(), "load balancer busy, following it")
	})
	if err := s.SetLBStatus(context.Background(), id, "ERROR", ""); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrFailoverFailed) {
			t.Fatalf("got %v, want ErrFailoverFailed", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("apply did not return within 1m of the load balancer turning ERROR")
	}
}

// TestStuckPendingRefused: a PENDING_* load balancer older than the
// timeout is immutable to Octavia: the failover call is refused (409) and
// Apply says what an admin must do, as a failure that needs an admin.
func TestStuckPendingRefused(t *testing.T) {
	s := openstacktest.Shared(t)
	id := newLB(t, s, "PENDING_UPDATE", "")
	r := remediator(t, s, "admin", []string{id}, WithClock(func() time.Time { return time.Now().Add(time.Hour) }))
	err := r.Apply(context.Background(), remediate.Action{Target: "loadbalancer/" + id, Verb: "failover", Data: id})
	if !errors.Is(err, ErrFailoverFailed) || !strings.Contains(err.Error(), "openstack loadbalancer failover "+id) {
		t.Fatalf("got %v, want ErrFailoverFailed naming the admin's command", err)
	}
	if !errors.Is(err, remediate.ErrNeedsAdmin) {
		t.Fatalf("got %v, want it to wrap remediate.ErrNeedsAdmin (retrying cannot help)", err)
	}
}

// TestMemberNeedsAdmin: with member credentials the failover call is
// refused (403) and Apply returns a *NeedsAdminError naming the command;
// the Runner records it as failed, needing an admin, with the command in
// the detail, and does not try it again on the next pass; the load balancer
// stays in ERROR. No secret appears.
func TestMemberNeedsAdmin(t *testing.T) {
	s := openstacktest.Shared(t)
	id := newLB(t, s, "ERROR", "")
	r := remediator(t, s, "member", []string{id})
	ctx := context.Background()
	acts, err := r.Plan(ctx)
	if err != nil || len(acts) != 1 {
		t.Fatalf("got plan %+v, %v, want one action", acts, err)
	}
	err = r.Apply(ctx, acts[0])
	var na *NeedsAdminError
	if !errors.As(err, &na) || !errors.Is(err, remediate.ErrNeedsAdmin) {
		t.Fatalf("got %v, want *NeedsAdminError wrapping remediate.ErrNeedsAdmin", err)
	}
	want := "openstack loadbalancer failover " + id
	if na.LB != id || na.Command != want || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %+v (%q), want LB %s and command %q", na, err, id, want)
	}
	if strings.Contains(err.Error(), s.Member.Password) {
		t.Fatalf("error %q carries the password", err)
	}

	c := remediatetest.NewLog()
	recs := remediatetest.Pass(t, c, r, remediate.Settings{Mode: remediate.ModeOn})
	got := remediatetest.Summary(recs)
	if w := []string{"planned failover loadbalancer/" + id, "failed failover loadbalancer/" + id}; !slices.Equal(got, w) {
		t.Fatalf("got records %q, want %q", got, w)
	}
	if d := recs[1].Detail; !strings.Contains(d, want) || !recs[1].NeedsAdmin {
		t.Fatalf("got detail %q, needs admin %v, want it to contain %q and need an admin", d, recs[1].NeedsAdmin, want)
	}
	if got := remediatetest.Summary(remediatetest.Pass(t, c, r, remediate.Settings{Mode: remediate.ModeOn})); len(got) != 0 {
		t.Fatalf("next pass: got records %q, want none (parked until an admin acts)", got)
	}
	if got := provisioning(t, s, id); got != "ERROR" {
		t.Fatalf("got provisioning_status %s, want ERROR (nothing written)", got)
	}
}

// TestRunnerDryRunCapRepeat: through a remediate.Runner with a real
// failover.Machine: dry-run records and writes nothing; in mode on the
// per-pass cap applies one failover and skips the other; the next pass
// applies the other; a pass after success records nothing.
func TestRunnerDryRunCapRepeat(t *testing.T) {
	s := openstacktest.Shared(t)
	a := newLB(t, s, "ERROR", "")
	b := newLB(t, s, "ERROR", "")
	r := remediator(t, s, "admin", []string{a, b})
	c := remediatetest.NewLog()
	first, second := a, b
	if second < first {
		first, second = second, first
	}

	got := remediatetest.Summary(remediatetest.Pass(t, c, r, remediate.Settings{Mode: remediate.ModeDryRun, MaxPerPass: 5}))
	if w := []string{"dry_run failover loadbalancer/" + first, "dry_run failover loadbalancer/" + second}; !slices.Equal(got, w) {
		t.Fatalf("dry-run: got %q, want %q", got, w)
	}
	for _, id := range []string{a, b} {
		if st := provisioning(t, s, id); st != "ERROR" {
			t.Fatalf("dry-run: got %s for %s, want ERROR (nothing written)", st, id)
		}
	}

	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 1}
	got = remediatetest.Summary(remediatetest.Pass(t, c, r, on))
	if w := []string{"planned failover loadbalancer/" + first, "applied failover loadbalancer/" + first,
		"skipped_cap failover loadbalancer/" + second}; !slices.Equal(got, w) {
		t.Fatalf("capped pass: got %q, want %q", got, w)
	}
	if st := provisioning(t, s, first); st != "ACTIVE" {
		t.Fatalf("got %s for the applied one, want ACTIVE", st)
	}
	if st := provisioning(t, s, second); st != "ERROR" {
		t.Fatalf("got %s for the capped one, want ERROR", st)
	}

	got = remediatetest.Summary(remediatetest.Pass(t, c, r, on))
	if w := []string{"planned failover loadbalancer/" + second, "applied failover loadbalancer/" + second}; !slices.Equal(got, w) {
		t.Fatalf("second pass: got %q, want %q", got, w)
	}
	if got = remediatetest.Summary(remediatetest.Pass(t, c, r, on)); len(got) != 0 {
		t.Fatalf("pass after success: got %q, want no records", got)
	}
	for _, rec := range c.M.Remediations() {
		if rec.Name != Name {
			t.Fatalf("got record name %q, want %q", rec.Name, Name)
		}
	}
}

// TestHourCap: the per-hour cap counted from the records stops a failover:
// with a cap of 1, the first pass fails one load balancer over and the
// next pass skips the other one.
func TestHourCap(t *testing.T) {
	s := openstacktest.Shared(t)
	a, b := newLB(t, s, "ERROR", ""), newLB(t, s, "ERROR", "")
	first, second := min(a, b), max(a, b)
	r := remediator(t, s, "admin", []string{a, b})
	c := remediatetest.NewLog()
	set := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 1, MaxPerHour: 1}
	remediatetest.Pass(t, c, r, set)
	if st := provisioning(t, s, first); st != "ACTIVE" {
		t.Fatalf("got %s for the first, want ACTIVE", st)
	}
	got := remediatetest.Summary(remediatetest.Pass(t, c, r, set))
	if w := []string{"skipped_cap failover loadbalancer/" + second}; !slices.Equal(got, w) {
		t.Fatalf("got %q, want %q", got, w)
	}
	if st := provisioning(t, s, second); st != "ERROR" {
		t.Fatalf("got %s for the second, want ERROR (held by the cap)", st)
	}
}

// TestAppCredential: the auth_url + application credential files shape
// reads the member project's load balancers.
func TestAppCredential(t *testing.T) {
	s := openstacktest.Shared(t)
	id := newLB(t, s, "ERROR", "")
	dir := t.TempDir()
	idFile, secretFile := filepath.Join(dir, "id"), filepath.Join(dir, "secret")
	if err := os.WriteFile(idFile, []byte(s.MemberAppCredID+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secretFile, []byte(s.MemberAppCredSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := New(OctaviaStuckLBConfig{OpenStackAuth: remediate.OpenStackAuth{
		AuthURL: s.AuthURL, ApplicationCredentialIDFile: idFile, ApplicationCredentialSecretFile: secretFile, Region: s.Region}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	acts, err := r.Plan(context.Background())
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	found := false
	for _, a := range acts {
		found = found || a.Target == "loadbalancer/"+id
	}
	if !found {
		t.Fatalf("got %+v, want a failover of %s among every load balancer of the project", acts, id)
	}

	// A wrong secret is an error that does not carry the secret.
	if err := os.WriteFile(secretFile, []byte("not-the-secret-xyz\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = r.Plan(context.Background())
	if err == nil || strings.Contains(err.Error(), "not-the-secret-xyz") {
		t.Fatalf("got %v, want an auth error without the secret", err)
	}
}

// TestErrorThatStillServesIsReported: a load balancer in provisioning_status
// ERROR whose operating_status does not say its data plane is down (ONLINE
// and DEGRADED still serve; NO_MONITOR and DRAINING say nothing of an
// outage) is planned report-only, naming its status and the admin's
// command, and Apply refuses it as a precondition without calling the
// failover API: it stays ERROR. A failover that failed would cut traffic
// that still flows.
func TestErrorThatStillServesIsReported(t *testing.T) {
	s := openstacktest.Shared(t)
	ctx := context.Background()
	for _, oper := range []string{"ONLINE", "DEGRADED", "NO_MONITOR", "DRAINING"} {
		t.Run(oper, func(t *testing.T) {
			id := newLB(t, s, "ERROR", oper)
			r := remediator(t, s, "admin", []string{id})
			a := planOne(t, r)
			if a.ReportOnly == "" || !strings.Contains(a.ReportOnly, "operating_status "+oper) ||
				!strings.Contains(a.ReportOnly, "openstack loadbalancer failover "+id) {
				t.Fatalf("got report-only %q, want it to name operating_status %s and the admin's command", a.ReportOnly, oper)
			}
			err := r.Apply(ctx, a)
			if !errors.Is(err, remediate.ErrPrecondition) {
				t.Fatalf("apply: got %v, want remediate.ErrPrecondition", err)
			}
			if got := provisioning(t, s, id); got != "ERROR" {
				t.Fatalf("got provisioning_status %s after apply, want ERROR (no failover called)", got)
			}
		})
	}
}

// TestErrorWithDataPlaneDownFailsOver: the look-alikes of
// TestErrorThatStillServesIsReported whose operating_status says traffic
// no longer flows (OFFLINE, ERROR) are still planned as a failover to
// apply, and Apply brings them back to ACTIVE.
func TestErrorWithDataPlaneDownFailsOver(t *testing.T) {
	s := openstacktest.Shared(t)
	ctx := context.Background()
	for _, oper := range []string{"OFFLINE", "ERROR"} {
		t.Run(oper, func(t *testing.T) {
			id := newLB(t, s, "ERROR", oper)
			r := remediator(t, s, "admin", []string{id})
			a := planOne(t, r)
			if a.ReportOnly != "" {
				t.Fatalf("got report-only %q, want a failover to apply", a.ReportOnly)
			}
			if err := r.Apply(ctx, a); err != nil {
				t.Fatalf("apply: %v", err)
			}
			if got := provisioning(t, s, id); got != "ACTIVE" {
				t.Fatalf("got provisioning_status %s after apply, want ACTIVE", got)
			}
		})
	}
}

// planOne plans r's watched load balancers and returns the one action.
func planOne(t *testing.T, r *StuckLB) remediate.Action {
	t.Helper()
	acts, err := r.Plan(context.Background())
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	if len(acts) != 1 {
		t.Fatalf("got %d actions %+v, want one", len(acts), acts)
	}
	return acts[0]
}
