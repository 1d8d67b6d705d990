package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/cmd/drwatch/demo"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/poll"
)

// run executes the drwatch CLI in-process and returns stdout, stderr and the exit code.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetIn(strings.NewReader(""))
	root.SetArgs(args)
	// No CLI call in these tests may take longer than this; a hang fails fast.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	err := root.ExecuteContext(ctx)
	if err != nil {
		if _, silent := err.(silentError); !silent {
			errb.WriteString(err.Error())
		}
	}
	return out.String(), errb.String(), exitCode(err)
}

func TestConfigValidateExitCodes(t *testing.T) {
	if _, _, code := run(t, "config", "validate", "-c", "config/testdata/valid.yaml", "--no-file-checks"); code != 0 {
		t.Errorf("valid config: got exit %d, want 0", code)
	}
	_, stderr, code := run(t, "config", "validate", "-c", "config/testdata/broken.yaml", "--no-file-checks")
	if code != 1 || !strings.Contains(stderr, "broken.yaml:13:3: policy.quorum:") {
		t.Errorf("broken config: got exit %d, stderr:\n%s", code, stderr)
	}
	if _, _, code := run(t, "config", "validate"); code != 2 {
		t.Errorf("missing --config: got exit %d, want 2", code)
	}
	if _, _, code := run(t, "no-such-command"); code != 2 {
		t.Errorf("unknown command: got exit %d, want 2", code)
	}
}

// startDemo starts the demo cluster (three watchers on loopback, two
// simulated sites, the embedded DNS server) and stops it at cleanup, first
// printing the watchers' log tail if the test failed. The context it
// returns ends after three minutes, the bound of a whole test.
func startDemo(t *testing.T) (context.Context, *demo.Demo) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	d, err := demo.Start(ctx, demo.Options{Dir: t.TempDir(), Interval: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("watchers' log (tail):\n%s", d.LogTail(80))
		}
		d.Close()
	})
	return ctx, d
}

// The CLI against three real watchers (the demo cluster): reads from any
// node, writes forwarded by a follower, tokens, refusals and --wait.
func TestCLIAgainstCluster(t *testing.T) {
	_, d := startDemo(t)
	poll.Until(t, 60*time.Second, func() bool {
		v := d.View()
		return d.Leader() != nil && v.Sites[failover.Primary].Verdict == failover.Up && v.Sites[failover.Backup].Verdict == failover.Up
	}, "both sites are UP at quorum")

	follower := ""
	for i, n := range d.Nodes {
		if n != d.Leader() {
			follower = d.APIURLs[i]
			break
		}
	}
	conn := []string{"--endpoint", follower, "--ca-file", d.CAFile}
	auth := append(append([]string(nil), conn...), "--token-file", d.TokenFile)

	t.Run("status json from a follower", func(t *testing.T) {
		out, stderr, code := run(t, append([]string{"status", "-o", "json"}, conn...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var st api.Status
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("status json: %v", err)
		}
		if st.State.Active != failover.Primary || st.Leader == "" || st.ServedBy == st.Leader {
			t.Errorf("got active %s leader %q served by %q; want primary, a leader, a follower", st.State.Active, st.Leader, st.ServedBy)
		}
		// A follower's replica may trail the leader's by a heartbeat: poll its view.
		// The demo guards two platforms (failover groups): --group shows one
		// in full, as status shows a cluster without groups.
		var table string
		poll.Until(t, 30*time.Second, func() bool {
			table, _, _ = run(t, append([]string{"status", "--group", "default"}, conn...)...)
			return strings.Contains(table, "primary  UP")
		}, "the follower's table shows primary UP")
		for _, want := range []string{"active site: primary", "primary  UP", "WATCHER"} {
			if !strings.Contains(table, want) {
				t.Errorf("table lacks %q:\n%s", want, table)
			}
		}
		// Without --group: one line per group.
		table, stderr, code = run(t, append([]string{"status"}, conn...)...)
		if code != 0 {
			t.Fatalf("status: exit %d: %s", code, stderr)
		}
		for _, want := range []string{"GROUP", "\ndefault ", "\nwiki "} {
			if !strings.Contains(table, want) {
				t.Errorf("the groups' table lacks %q:\n%s", want, table)
			}
		}
	})

	t.Run("livez and readyz on every node", func(t *testing.T) {
		cl, err := (&clientFlags{endpoints: d.APIURLs, caFile: d.CAFile, timeout: 10 * time.Second}).client(false)
		if err != nil {
			t.Fatal(err)
		}
		get := func(url string) int {
			resp, err := cl.http.Get(url)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		for _, u := range d.APIURLs {
			// Liveness never depends on the cluster: 200 at once.
			if got := get(u + "/livez"); got != http.StatusOK {
				t.Errorf("%s/livez: got %d, want 200", u, got)
			}
			// Readiness follows the leader, which a loaded machine can lose
			// for a heartbeat after the earlier subtests: each node must
			// report ready within the deadline.
			var got int
			if !poll.Within(30*time.Second, func() bool { got = get(u + "/readyz"); return got == http.StatusOK }) {
				t.Errorf("%s/readyz: got %d for 30s, want 200", u, got)
			}
		}
	})

	t.Run("writes need a valid token", func(t *testing.T) {
		body := strings.NewReader(`{"to":"backup","reason":"x"}`)
		cl, err := (&clientFlags{endpoints: []string{follower}, caFile: d.CAFile, timeout: 10 * time.Second}).client(false)
		if err != nil {
			t.Fatal(err)
		}
		for _, tok := range []string{"", "wrong-token-wrong-token"} {
			req, _ := http.NewRequest(http.MethodPost, follower+"/api/v1/failover", body)
			if tok != "" {
				req.Header.Set("Authorization", "Bearer "+tok)
			}
			resp, err := cl.http.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("token %q: got %d, want 401", tok, resp.StatusCode)
			}
		}
		if _, _, code := run(t, append([]string{"failover", "--reason", "x", "--yes"}, conn...)...); code != 2 {
			t.Errorf("failover without any token configured: got exit %d, want 2", code)
		}
	})

	t.Run("no tty and no --yes refuses without hanging", func(t *testing.T) {
		_, stderr, code := run(t, append([]string{"failover", "--to", "backup", "--reason", "drill"}, auth...)...)
		if code != 2 || !strings.Contains(stderr, "--yes") {
			t.Errorf("got exit %d, stderr %q; want 2 naming --yes", code, stderr)
		}
	})

	t.Run("dry run shows the record changes and changes nothing", func(t *testing.T) {
		out, stderr, code := run(t, append([]string{"failover", "--to", "backup", "--reason", "drill", "--dry-run"}, auth...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if !strings.Contains(out, demo.PrimaryIP+" -> "+demo.BackupIP) || !strings.Contains(out, "[PASS] target_unhealthy") {
			t.Errorf("dry run output:\n%s", out)
		}
		if d.View().Active != failover.Primary {
			t.Error("dry run changed the active site")
		}
	})

	t.Run("a drill passes on the canary, reports its RTO and leaves lms alone", func(t *testing.T) {
		out, stderr, code := run(t, append([]string{"drill", "--reason", "what would it face", "--dry-run"}, auth...)...)
		if code != 0 || !strings.Contains(out, "dry run of drill") || !strings.Contains(out, "[PASS] target_unhealthy") {
			t.Errorf("drill --dry-run: exit %d %s\n%s", code, stderr, out)
		}
		if d.View().Drill != nil {
			t.Error("drill --dry-run started a drill")
		}
		// It says what would happen, never that something started.
		if strings.Contains(out, "started on") && !strings.Contains(out, "would answer") {
			t.Errorf("drill --dry-run words its result as done:\n%s", out)
		}
		out, stderr, code = run(t, append([]string{"drill", "--reason", "first rehearsal", "--timeout", "60s"}, auth...)...)
		if code != 0 {
			t.Fatalf("drill exit %d: %s\n%s", code, stderr, out)
		}
		for _, want := range []string{"PASSED", "backup_verified", "primary_verified", "[PASS] dns_credentials", "[PASS] ttl vs rto budget",
			"a real failover now would reach most clients in ≈"} {
			if !strings.Contains(out, want) {
				t.Errorf("drill output lacks %q:\n%s", want, out)
			}
		}
		if got, _ := d.Resolve("lms.demo.test"); len(got) != 1 || got[0] != demo.PrimaryIP {
			t.Errorf("after the drill: lms -> %v, want %s", got, demo.PrimaryIP)
		}
		if got, _ := d.Resolve("drwatch-drill.lms.demo.test"); len(got) != 1 || got[0] != demo.PrimaryIP {
			t.Errorf("after the drill: the canary -> %v, want its primary value %s", got, demo.PrimaryIP)
		}
		if v := d.View(); v.Desired.Gen != 0 || v.Active != failover.Primary {
			t.Errorf("the drill made a decision: gen %d active %s", v.Desired.Gen, v.Active)
		}
		hist, stderr, code := run(t, append([]string{"drill", "history"}, conn...)...)
		if code != 0 || !strings.Contains(hist, "passed") || !strings.Contains(hist, "first rehearsal") {
			t.Errorf("drill history: exit %d %s\n%s", code, stderr, hist)
		}
		// Paused: refused with exit 3, naming the rule.
		if _, stderr, code := run(t, append([]string{"pause", "--reason", "maintenance", "--yes"}, auth...)...); code != 0 {
			t.Fatalf("pause: exit %d %s", code, stderr)
		}
		_, stderr, code = run(t, append([]string{"drill", "--reason", "while paused"}, auth...)...)
		if code != 3 || !strings.Contains(stderr, "paused") {
			t.Errorf("drill while paused: got exit %d, stderr %q; want 3 naming the rule paused", code, stderr)
		}
		if _, stderr, code := run(t, append([]string{"resume", "--reason", "done", "--yes"}, auth...)...); code != 0 {
			t.Fatalf("resume: exit %d %s", code, stderr)
		}
	})

	t.Run("manual failover and failback with --wait through a follower", func(t *testing.T) {
		out, stderr, code := run(t, append([]string{"failover", "--to", "backup", "--reason", "drill", "--yes", "--wait", "--wait-timeout", "60s"}, auth...)...)
		if code != 0 {
			t.Fatalf("failover exit %d: %s\n%s", code, stderr, out)
		}
		if !strings.Contains(out, "verified at every authoritative server") {
			t.Errorf("failover --wait output:\n%s", out)
		}
		if got, _ := d.Resolve("lms.demo.test"); len(got) != 1 || got[0] != demo.BackupIP {
			t.Errorf("after failover: lms -> %v, want %s", got, demo.BackupIP)
		}
		hist, _, _ := run(t, append([]string{"history", "-o", "json"}, conn...)...)
		if !strings.Contains(hist, `"actor": "demo"`) || !strings.Contains(hist, `"kind": "manual_failover"`) {
			t.Errorf("history does not record the actor of the manual failover:\n%s", hist)
		}
		out, stderr, code = run(t, append([]string{"failback", "--reason", "drill over", "--yes", "--wait", "--wait-timeout", "60s"}, auth...)...)
		if code != 0 {
			t.Fatalf("failback exit %d: %s\n%s", code, stderr, out)
		}
		if got, _ := d.Resolve("lms.demo.test"); len(got) != 1 || got[0] != demo.PrimaryIP {
			t.Errorf("after failback: lms -> %v, want %s", got, demo.PrimaryIP)
		}
	})

	t.Run("an unhealthy target is refused with exit 3 and the rule", func(t *testing.T) {
		if err := d.Sites["backup"].SetUp(false); err != nil {
			t.Fatal(err)
		}
		defer d.Sites["backup"].SetUp(true)
		poll.Until(t, 60*time.Second, func() bool { return d.View().Sites[failover.Backup].Verdict != failover.Up }, "backup is no longer UP at quorum")
		_, stderr, code := run(t, append([]string{"failover", "--to", "backup", "--reason", "drill", "--yes"}, auth...)...)
		if code != 3 || !strings.Contains(stderr, "target_unhealthy") || !strings.Contains(stderr, "--force") {
			t.Errorf("got exit %d, stderr %q; want 3 naming target_unhealthy and --force", code, stderr)
		}
	})

	t.Run("paused: an outage causes no flip; resume flips", func(t *testing.T) {
		poll.Until(t, 60*time.Second, func() bool { return d.View().Sites[failover.Backup].Verdict == failover.Up }, "backup UP again")
		if _, stderr, code := run(t, append([]string{"pause", "--reason", "maintenance", "--yes"}, auth...)...); code != 0 {
			t.Fatalf("pause: exit %d %s", code, stderr)
		}
		gen := d.View().Desired.Gen
		if err := d.Sites["primary"].SetUp(false); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, 60*time.Second, func() bool { return d.View().Sites[failover.Primary].Verdict == failover.Down }, "primary DOWN at quorum")
		if v := d.View(); v.Desired.Gen != gen || v.Active != failover.Primary {
			t.Fatalf("paused cluster flipped: gen %d active %s", v.Desired.Gen, v.Active)
		}
		if _, stderr, code := run(t, append([]string{"resume", "--reason", "done", "--yes"}, auth...)...); code != 0 {
			t.Fatalf("resume: exit %d %s", code, stderr)
		}
		poll.Until(t, 60*time.Second, func() bool { v := d.View(); return v.Active == failover.Backup && v.Desired.Done }, "the flip after resume is verified")
	})

	t.Run("explain names the evidence", func(t *testing.T) {
		gen := d.View().Desired.Gen
		out, stderr, code := run(t, append([]string{"explain", itoa(gen)}, conn...)...)
		if code != 0 || !strings.Contains(out, "primary") {
			t.Errorf("explain %d: exit %d %s\n%s", gen, code, stderr, out)
		}
		// The story may have moved on (verified since), not the decision.
		latest, stderr, code := run(t, append([]string{"explain"}, conn...)...)
		first := func(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }
		if code != 0 || first(latest) != first(out) {
			t.Errorf("explain with no generation: exit %d %s\n%s\nwant the latest decision's (gen %d):\n%s", code, stderr, latest, gen, out)
		}
	})

	t.Run("a dry run lists the rules the real command checks and exits like it", func(t *testing.T) {
		// The automatic flip after resume blocks further automatic flips.
		if err := d.Sites["primary"].SetUp(true); err != nil {
			t.Fatal(err)
		}
		// The dry run reads the follower's replica, so wait until it, too, sees that.
		poll.Until(t, 60*time.Second, func() bool {
			out, _, code := run(t, append([]string{"status", "-o", "json"}, conn...)...)
			var st api.Status
			if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
				return false
			}
			v := st.State
			return v.Blocked && v.Active == failover.Backup && v.Sites[failover.Primary].Verdict == failover.Up
		}, "blocked on the backup, with the primary UP at quorum again, as the follower sees it")
		out, stderr, dryCode := run(t, append([]string{"failback", "--reason", "primary fixed", "--dry-run"}, auth...)...)
		for _, notARule := range []string{"not_blocked", "not_paused", "FAIL"} {
			if strings.Contains(out, notARule) {
				t.Errorf("dry run of a failback the block does not stop lists %q:\n%s", notARule, out)
			}
		}
		for _, rule := range []string{"[PASS] leader", "[PASS] no_quorum", "[PASS] target_unhealthy", "acknowledged"} {
			if !strings.Contains(out, rule) {
				t.Errorf("dry run lacks %q:\n%s", rule, out)
			}
		}
		_, stderr2, code := run(t, append([]string{"failback", "--reason", "primary fixed", "--yes"}, auth...)...)
		if code != 0 || dryCode != code {
			t.Fatalf("got exit %d from the dry run (%s) and %d from the failback (%s), want both 0", dryCode, stderr, code, stderr2)
		}
		// The failback acknowledged the block: automatic failover is armed again.
		poll.Until(t, 30*time.Second, func() bool { v := d.View(); return v.Active == failover.Primary && !v.Blocked }, "primary active, not blocked")
		hist, _, _ := run(t, append([]string{"history", "-o", "json"}, conn...)...)
		if !strings.Contains(hist, "block acknowledged by manual_failback") {
			t.Errorf("history does not record the acknowledgement:\n%s", hist)
		}

		// Refused: the dry run names the rule and exits 3, as the real command does.
		if err := d.Sites["backup"].SetUp(false); err != nil {
			t.Fatal(err)
		}
		defer d.Sites["backup"].SetUp(true)
		poll.Until(t, 60*time.Second, func() bool {
			out, _, code := run(t, append([]string{"status", "-o", "json"}, conn...)...)
			var st api.Status
			return code == 0 && json.Unmarshal([]byte(out), &st) == nil && st.State.Sites[failover.Backup].Verdict == failover.Down
		}, "backup DOWN at quorum, as the follower sees it")
		out, _, dryCode = run(t, append([]string{"failover", "--to", "backup", "--reason", "drill", "--dry-run"}, auth...)...)
		_, stderr, code = run(t, append([]string{"failover", "--to", "backup", "--reason", "drill", "--yes"}, auth...)...)
		if dryCode != 3 || code != 3 || !strings.Contains(out, "[FAIL] target_unhealthy") || !strings.Contains(out, "(rule target_unhealthy)") || !strings.Contains(stderr, "target_unhealthy") {
			t.Errorf("refused failover: got dry-run exit %d and exit %d; want 3 and 3 naming target_unhealthy; dry run:\n%s\nstderr: %s", dryCode, code, out, stderr)
		}
	})

	t.Run("members list, idempotent add, and a guarded remove", func(t *testing.T) {
		out, stderr, code := run(t, append([]string{"members", "list", "-o", "json"}, conn...)...)
		if code != 0 {
			t.Fatalf("members list: exit %d %s", code, stderr)
		}
		var ml struct {
			Members []struct{ ID, Addr string } `json:"members"`
		}
		if err := json.Unmarshal([]byte(out), &ml); err != nil || len(ml.Members) != 3 {
			t.Fatalf("members list: %v %s", err, out)
		}
		m := ml.Members[2]
		if _, stderr, code := run(t, append([]string{"members", "add", m.ID, "--raft-addr", m.Addr}, auth...)...); code != 2 || !strings.Contains(stderr, "--reason is required") {
			t.Errorf("members add without --reason: exit %d %q, want 2 naming --reason", code, stderr)
		}
		if _, stderr, code := run(t, append([]string{"members", "add", m.ID, "--raft-addr", m.Addr, "--reason", "re-address drill"}, auth...)...); code != 0 {
			t.Errorf("re-adding %s at its address: exit %d %s", m.ID, code, stderr)
		}
		out, _, _ = run(t, append([]string{"history", "-o", "json"}, conn...)...)
		var hist struct{ History []failover.Entry }
		recorded := false
		if err := json.Unmarshal([]byte(out), &hist); err == nil {
			for _, e := range hist.History {
				recorded = recorded || e.Kind == failover.KindMemberAdd && e.Reason == "re-address drill" && e.Actor != "" && strings.HasPrefix(e.Detail, m.ID+" at ")
			}
		}
		if !recorded {
			t.Errorf("history after members add: want a %s entry with actor and reason, got:\n%s", failover.KindMemberAdd, out)
		}
		_, stderr, code = run(t, append([]string{"members", "remove", m.ID, "--yes", "--reason", "retire"}, auth...)...)
		if code != 3 || !strings.Contains(stderr, "needs_confirmation") {
			t.Errorf("remove below three voters without --confirm: exit %d %q, want 3 needs_confirmation", code, stderr)
		}
		if out, _, _ := run(t, append([]string{"members", "list"}, conn...)...); strings.Count(out, "voter") != 3 {
			t.Errorf("members after the refused remove:\n%s", out)
		}
	})

	t.Run("the token never appears in replies", func(t *testing.T) {
		tok, err := os.ReadFile(filepath.Join(d.Dir, "token"))
		if err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"status", "-o", "json"}, {"history", "-o", "json"}} {
			out, _, _ := run(t, append(args, conn...)...)
			if strings.Contains(out, strings.TrimSpace(string(tok))) {
				t.Errorf("%v leaks the operator token", args)
			}
		}
	})
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// A mistyped subcommand under a group is a usage error (exit 2), as at the
// top level: a script must not take "drwatch dns chek" for success.
func TestUnknownSubcommandIsUsageError(t *testing.T) {
	for _, args := range [][]string{{"no-such-command"}, {"config", "valdiate"}, {"dns", "chek"}, {"members", "lsit"}, {"remediate", "plna"}, {"certs", "isue"}} {
		_, stderr, code := run(t, args...)
		if code != 2 || !strings.Contains(stderr, args[len(args)-1]) {
			t.Errorf("drwatch %s: got exit %d, stderr %q; want exit 2 naming %q", strings.Join(args, " "), code, stderr, args[len(args)-1])
		}
	}
	for _, args := range [][]string{{"dns"}, {"members"}} {
		if out, _, code := run(t, args...); code != 0 || !strings.Contains(out, "Available Commands") {
			t.Errorf("drwatch %s: got exit %d, output %q; want its help and exit 0", strings.Join(args, " "), code, out)
		}
	}
}
