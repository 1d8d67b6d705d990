package hooks

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/internal/field"
)

var ev = Event{Phase: "pre-failover", Gen: 42, From: "primary", To: "backup", Kind: "auto_failover", Actor: "drwatch", Reason: "primary DOWN at quorum", Node: "a"}

func TestCommandHookGetsTheDecision(t *testing.T) {
	out := filepath.Join(t.TempDir(), "env")
	h := Hook{Name: "record", Command: []string{"/bin/sh", "-c", "env | grep ^DRWATCH_ | sort > " + out}}
	if err := h.Run(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"DRWATCH_GEN=42", "DRWATCH_FROM=primary", "DRWATCH_TO=backup", "DRWATCH_KIND=auto_failover",
		"DRWATCH_FORCED=false", "DRWATCH_ACTOR=drwatch", "DRWATCH_REASON=primary DOWN at quorum", "DRWATCH_PHASE=pre-failover", "DRWATCH_NODE=a"} {
		if !strings.Contains(string(b), want+"\n") {
			t.Errorf("env lacks %s:\n%s", want, b)
		}
	}
}

func TestCommandHookFailureAndTimeout(t *testing.T) {
	err := Hook{Name: "refuse", Command: []string{"/bin/sh", "-c", "echo backup not warmed; exit 3"}}.Run(context.Background(), ev)
	if err == nil || !strings.Contains(err.Error(), "hook refuse") || !strings.Contains(err.Error(), "backup not warmed") {
		t.Errorf("got %v, want the hook's name and output", err)
	}
	start := time.Now()
	err = Hook{Name: "slow", Command: []string{"/bin/sh", "-c", "sleep 30"}, Timeout: 200 * time.Millisecond}.Run(context.Background(), ev)
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("got %v, want a timeout", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("a timed-out hook was not killed")
	}
}

func TestWebhookIsSigned(t *testing.T) {
	key := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(key, []byte("webhook-hmac-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var got Event
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := Verify([]byte("webhook-hmac-key"), r, time.Minute); err != nil {
			http.Error(w, "bad signature", http.StatusForbidden)
			return
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &got)
	}))
	defer srv.Close()
	if err := (Hook{URL: srv.URL, SecretFile: key}).Run(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	if got != ev {
		t.Errorf("webhook got %+v, want %+v", got, ev)
	}
	if err := os.WriteFile(key, []byte("another-key"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := (Hook{Name: "notify", URL: srv.URL, SecretFile: key}).Run(context.Background(), ev)
	if err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("wrong key: got %v, want the 403", err)
	}
	if strings.Contains(err.Error(), "another-key") {
		t.Errorf("error leaks the key: %v", err)
	}
}

func TestValidate(t *testing.T) {
	c := Config{PreFailover: []Hook{{Name: "both", Command: []string{"x"}, URL: "https://x"}, {Name: "unsigned", URL: "https://x"}},
		PostFailover: []Hook{{Name: "ftp", URL: "ftp://x", SecretFile: "k"}}}
	errs := c.Validate()
	for _, want := range []string{"pre_failover[both]: set exactly one", "pre_failover[unsigned].secret_file", "post_failover[ftp].url"} {
		if !hasProblem(errs, want) {
			t.Errorf("missing %q in %v", want, errs)
		}
		if shown := errs.Under("hooks").Error(); !strings.Contains(shown, "hooks."+want) {
			t.Errorf("missing %q in %v under hooks", "hooks."+want, shown)
		}
	}
}

// Two hooks of one phase with the same name would share a path in every
// problem and a label in the history: the second is named as the config
// walker names a repeated item, and refused.
func TestValidateRefusesARepeatedHookName(t *testing.T) {
	c := Config{PreFailover: []Hook{{Name: "page", Command: []string{"x"}}, {Name: "page", URL: "ftp://x", SecretFile: "k"}},
		PostFailover: []Hook{{Name: "page", Command: []string{"y"}}}}
	errs := c.Validate()
	for _, want := range []string{`pre_failover[page#2].name: duplicate hook name "page"`, "pre_failover[page#2].url: must be http(s)"} {
		if !hasProblem(errs, want) {
			t.Errorf("missing %q in %v", want, errs)
		}
	}
	if len(errs) != 2 {
		t.Errorf("got %v, want only the two problems of the second pre_failover hook (a name may repeat across phases)", errs)
	}
}

// hasProblem reports whether errs has a problem whose "path: message" starts
// with want, its path relative to the hooks section.
func hasProblem(errs field.Errors, want string) bool {
	for _, e := range errs {
		if strings.HasPrefix(e.Error(), want) {
			return true
		}
	}
	return false
}

// A group's own hook is told its group: DRWATCH_GROUP for a command. A
// top-level hook (no group) has no DRWATCH_GROUP, not even one drwatch
// inherited, so its environment is as before groups.
func TestCommandHookOfAGroupGetsItsName(t *testing.T) {
	t.Setenv("DRWATCH_GROUP", "inherited")
	for _, tc := range []struct {
		group, want string
	}{{"wiki", "DRWATCH_GROUP=wiki\n"}, {"", ""}} {
		out := filepath.Join(t.TempDir(), "env")
		h := Hook{Name: "record", Command: []string{"/bin/sh", "-c", "env | grep ^DRWATCH_ | sort > " + out}}
		e := ev
		e.Group = tc.group
		if err := h.Run(context.Background(), e); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		for _, line := range strings.SplitAfter(string(b), "\n") {
			if strings.HasPrefix(line, "DRWATCH_GROUP=") {
				got += line
			}
		}
		if got != tc.want {
			t.Errorf("group %q: got %q in the environment, want %q", tc.group, got, tc.want)
		}
		if !strings.Contains(string(b), "DRWATCH_NODE=a\n") {
			t.Errorf("group %q: env lacks the rest of the decision:\n%s", tc.group, b)
		}
	}
}

// A webhook's body, which its signature covers, is byte for byte what it
// was before groups for the top-level hooks (no group field); a group's
// own hook adds the field group, and only it.
func TestWebhookBodyNamesTheGroupOfAGroupsHookOnly(t *testing.T) {
	key := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(key, []byte("webhook-hmac-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := Verify([]byte("webhook-hmac-key"), r, time.Minute); err != nil {
			http.Error(w, "bad signature", http.StatusForbidden)
			return
		}
		body, _ = io.ReadAll(r.Body)
	}))
	defer srv.Close()
	const before = `{"phase":"pre-failover","gen":42,"from":"primary","to":"backup","kind":"auto_failover","forced":false,` +
		`"actor":"drwatch","reason":"primary DOWN at quorum","node":"a"}`
	grouped := ev
	grouped.Group = "wiki"
	for _, tc := range []struct {
		ev   Event
		want string
	}{{ev, before}, {grouped, strings.TrimSuffix(before, "}") + `,"group":"wiki"}`}} {
		if err := (Hook{URL: srv.URL, SecretFile: key}).Run(context.Background(), tc.ev); err != nil {
			t.Fatal(err)
		}
		if string(body) != tc.want {
			t.Errorf("group %q: got body\n%s\nwant\n%s", tc.ev.Group, body, tc.want)
		}
	}
}
