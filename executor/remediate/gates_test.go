package remediate

import (
	"context"
	"log/slog"
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
	gates, after := Gates("a", entries, "backup-warmup", 0, hooks.Config{}, slog.New(slog.DiscardHandler))
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
