package remediate

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/drwatch/drwatch/executor/reconcile"
	"github.com/drwatch/drwatch/executor/remediate/hooks"
	"github.com/drwatch/drwatch/failover"
)

// warmup is a remediation that plans one scale-up and is always ready.
type warmup struct{ name string }

func (w warmup) Name() string { return w.name }
func (w warmup) Plan(context.Context) ([]Action, error) {
	return []Action{{Verb: "scale", Target: "web"}}, nil
}
func (w warmup) Apply(context.Context, Action) error         { return nil }
func (w warmup) Ready(context.Context) (bool, string, error) { return true, "", nil }

func TestGatesWarmUpOnlyTheNamedReadyRemediation(t *testing.T) {
	entries := []Entry{
		{Remediator: warmup{name: "other"}, Settings: Settings{Mode: ModeDryRun}},
		{Remediator: warmup{name: "backup-warmup"}, Settings: Settings{Mode: ModeDryRun}},
	}
	gates, after := Gates("a", "", entries, "backup-warmup", 0, hooks.Config{}, slog.New(slog.DiscardHandler))
	if len(gates) != 1 || gates[0].Name() != "backup warm-up" {
		t.Fatalf("got gates %v, want the backup warm-up only", gates)
	}
	if after != nil {
		t.Errorf("got a post-failover step without post-failover hooks, want nil")
	}
	for _, tt := range []struct {
		to   failover.Site
		want string
	}{
		{failover.Backup, "backup warm-up in dry-run: would scale 1 workload(s)"},
		{failover.Primary, ""},
	} {
		note, err := gates[0].Before(context.Background(), reconcile.Decision{From: failover.Primary, To: tt.to})
		if err != nil || note != tt.want {
			t.Errorf("flip to %s: got %q, %v, want %q, nil", tt.to, note, err, tt.want)
		}
	}
}

// A failover group's gates are its backup warm-up, then its own
// pre-failover hooks, in that order (the warm-up's wait is over before a
// hook is asked); its hooks, before and after the flip, are told the
// group. The top-level hooks (group "") are told none.
func TestGatesOfAGroupComposeItsWarmUpAndHooksAndNameIt(t *testing.T) {
	for _, group := range []string{"wiki", ""} {
		out := filepath.Join(t.TempDir(), "ran")
		record := func(phase string) []hooks.Hook {
			return []hooks.Hook{{Name: phase, Command: []string{"/bin/sh", "-c", `echo "$DRWATCH_PHASE group=${DRWATCH_GROUP-none}" >> ` + out}}}
		}
		entries := []Entry{{Remediator: warmup{name: "backup-warmup"}, Settings: Settings{Mode: ModeDryRun}}}
		gates, after := Gates("a", group, entries, "backup-warmup", 0, hooks.Config{PreFailover: record("pre"), PostFailover: record("post")},
			slog.New(slog.DiscardHandler))
		if len(gates) != 2 || gates[0].Name() != "backup warm-up" || gates[1].Name() != "pre-failover hooks" || after == nil {
			t.Fatalf("group %q: got gates %v (after %v), want the backup warm-up, then the pre-failover hooks, and a post step", group, gates, after != nil)
		}
		d := reconcile.Decision{Gen: 7, From: failover.Primary, To: failover.Backup}
		for _, g := range gates {
			if _, err := g.Before(context.Background(), d); err != nil {
				t.Fatalf("group %q: gate %s: %v", group, g.Name(), err)
			}
		}
		after(context.Background(), d)
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		want := "group=none"
		if group != "" {
			want = "group=" + group
		}
		if got := string(b); got != "pre-failover "+want+"\npost-failover "+want+"\n" {
			t.Errorf("group %q: the hooks got %q, want both phases with %s", group, got, want)
		}
	}
}
