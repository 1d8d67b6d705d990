package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/demo"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/poll"
)

// The break-glass path: refused while there is a leader; with two of three
// watchers gone it writes DNS directly; when quorum returns, the leader
// records the write as break_glass and does not revert it.
func TestDNSCheckAndBreakGlass(t *testing.T) {
	ctx, d := startDemo(t)
	poll.Until(t, 60*time.Second, func() bool {
		v := d.View()
		return d.Leader() != nil && v.Policy != nil && v.Sites[failover.Backup].Verdict == failover.Up
	}, "the policy is replicated and the backup is UP")
	cfg := []string{"--config", d.Configs[0]}

	out, stderr, code := run(t, append([]string{"dns", "check"}, cfg...)...)
	if code != 0 || !strings.Contains(out, "MATCH") {
		t.Fatalf("dns check: exit %d %s\n%s", code, stderr, out)
	}
	_, stderr, code = run(t, append([]string{"dns", "set", "--site", "backup", "--no-quorum", "--reason", "drill", "--yes"}, cfg...)...)
	if code != 3 || !strings.Contains(stderr, "quorum_present") {
		t.Fatalf("break glass with a leader: got exit %d %q, want 3 quorum_present", code, stderr)
	}
	// An --endpoint that does not answer proves nothing: every node the
	// config names is asked, and they report the leader.
	_, stderr, code = run(t, append([]string{"dns", "set", "--site", "backup", "--no-quorum", "--reason", "drill", "--yes",
		"--endpoint", "https://127.0.0.1:1"}, cfg...)...)
	if code != 3 || !strings.Contains(stderr, "quorum_present") {
		t.Fatalf("break glass with a leader and an unreachable --endpoint: got exit %d %q, want 3 quorum_present", code, stderr)
	}
	if got, _ := d.Resolve("lms.demo.test"); len(got) != 1 || got[0] != demo.PrimaryIP {
		t.Fatalf("after the refused break glass: lms -> %v, want %s", got, demo.PrimaryIP)
	}
	// Without a break-glass key no leader would trust the marker: refused
	// before anything is asked or written, naming the field.
	noKey := withoutBreakGlassKey(t, d.Configs[0])
	_, stderr, code = run(t, "dns", "set", "--site", "backup", "--no-quorum", "--reason", "drill", "--yes", "--config", noKey)
	if code != 2 || !strings.Contains(stderr, "dns.break_glass.key_file is not set") {
		t.Fatalf("break glass without a key: got exit %d %q, want 2 naming dns.break_glass.key_file", code, stderr)
	}

	// Lose two watchers: no quorum, no leader, nothing can be decided.
	for _, i := range []int{1, 2} {
		if err := d.StopNode(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, 30*time.Second, func() bool {
		_, _, code := run(t, append([]string{"dns", "set", "--site", "backup", "--no-quorum", "--reason", "region down, no quorum", "--yes", "--actor", "alice"}, cfg...)...)
		return code == 0
	}, "the break-glass write succeeds once no leader is left")
	if got, _ := d.Resolve("lms.demo.test"); len(got) != 1 || got[0] != demo.BackupIP {
		t.Fatalf("after break glass: lms -> %v, want %s", got, demo.BackupIP)
	}

	// Quorum returns: the write is recorded, once, and kept.
	for _, i := range []int{1, 2} {
		if err := d.StartNode(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, 60*time.Second, func() bool {
		v := d.View()
		return d.Leader() != nil && v.Active == failover.Backup && v.Desired.Done
	}, "the leader records the break-glass write and settles on backup")
	n := 0
	for _, e := range d.Leader().Machine().History() {
		if e.Kind == failover.KindBreakGlass {
			n++
			if e.Actor != "alice" || !strings.Contains(e.Reason, "region down") {
				t.Errorf("break_glass entry: actor %q reason %q", e.Actor, e.Reason)
			}
		}
	}
	if n != 1 {
		t.Errorf("got %d break_glass entries, want 1", n)
	}
	if got, _ := d.Resolve("lms.demo.test"); len(got) != 1 || got[0] != demo.BackupIP {
		t.Errorf("break-glass write reverted: lms -> %v", got)
	}
}

// A break-glass marker the first leader could not read back is refused
// before anything is read or written: a reason that percent-encoding
// pushes past the marker's limit exits 2 and names --reason.
func TestDNSSetRefusesAMarkerThatCannotReadBack(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such.yaml")
	_, stderr, code := run(t, "dns", "set", "--site", "backup", "--no-quorum", "--yes", "--config", missing,
		"--reason", strings.Repeat("!", 400))
	if code != 2 || !strings.Contains(stderr, "--reason") || !strings.Contains(stderr, "once encoded") {
		t.Fatalf("got exit %d %q, want 2 naming --reason and the encoded length", code, stderr)
	}
	if strings.Contains(stderr, missing) {
		t.Fatalf("got %q: the config was read before the marker was checked", stderr)
	}
}

// withoutBreakGlassKey writes a copy of the config at path without its
// dns.break_glass line and returns the copy's path.
func withoutBreakGlassKey(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.Contains(l, "break_glass:") {
			kept = append(kept, l)
		}
	}
	if len(kept) == strings.Count(string(b), "\n")+1 {
		t.Fatalf("%s has no break_glass line", path)
	}
	out := filepath.Join(t.TempDir(), "no-break-glass.yaml")
	if err := os.WriteFile(out, []byte(strings.Join(kept, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}
