package hooks

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/poll"
)

// alive reports whether pid is a live process: not gone, and not a zombie
// waiting for a parent that will never reap it.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// Field 3, after the parenthesised command name, is the state.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	poll.Until(t, 10*time.Second, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	}, "the hook wrote %s", path)
	return pid
}

// A command hook that hangs is killed at its timeout with everything it
// started (its process group), and the error says it timed out.
func TestHungCommandHookIsKilledWithItsChildren(t *testing.T) {
	dir := t.TempDir()
	child := filepath.Join(dir, "child.pid")
	// Long enough for a loaded machine to start the shell and its child.
	h := Hook{Name: "hang", Timeout: 3 * time.Second,
		Command: []string{"/bin/sh", "-c", "sleep 300 & echo $! > " + child + "; wait"}}
	done := make(chan error, 1)
	go func() { done <- h.Run(context.Background(), ev) }()
	pid := readPID(t, child)
	var err error
	poll.For(t, 10*time.Second, "the hung hook to return", func() bool {
		select {
		case err = <-done:
			return true
		default:
			return false
		}
	})
	if !errors.Is(err, ErrTimedOut) || !strings.Contains(err.Error(), "hook hang") {
		t.Errorf("got %v, want ErrTimedOut naming the hook", err)
	}
	poll.For(t, 10*time.Second, "the hook's child process to be killed", func() bool { return !alive(pid) })
}

// hangingServer answers nothing until the client gives up.
func hangingServer(t *testing.T) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv
}

func keyFile(t *testing.T, key string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(p, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestHungWebhookTimesOut(t *testing.T) {
	srv := hangingServer(t)
	err := Hook{Name: "pager", URL: srv.URL, SecretFile: keyFile(t, "k"), Timeout: 200 * time.Millisecond}.Run(context.Background(), ev)
	if !errors.Is(err, ErrTimedOut) || !strings.Contains(err.Error(), "hook pager") {
		t.Errorf("got %v, want ErrTimedOut naming the hook", err)
	}
}

// A hung pre-failover hook never holds the flip for ever: by default it
// proceeds, and says so; on_timeout: block holds an automatic flip back.
func TestPreFailoverHookTimeout(t *testing.T) {
	srv := hangingServer(t)
	hung := map[string]Hook{
		"command": {Name: "hang", Command: []string{"/bin/sh", "-c", "exec sleep 300"}},
		"webhook": {Name: "hang", URL: srv.URL, SecretFile: keyFile(t, "k")},
	}
	for kind, h := range hung {
		h.Timeout = 150 * time.Millisecond
		for _, tc := range []struct {
			onTimeout string
			wantErr   bool
			want      string
		}{
			{"", false, "hook hang: timed out after 150ms; on_timeout: proceed, so the flip goes ahead"},
			{OnTimeoutProceed, false, "hook hang: timed out after 150ms; on_timeout: proceed, so the flip goes ahead"},
			{OnTimeoutBlock, true, "hook hang: timed out after 150ms (on_timeout: block)"},
		} {
			t.Run(kind+"/"+tc.onTimeout, func(t *testing.T) {
				h := h
				h.OnTimeout = tc.onTimeout
				ok := Hook{Name: "ok", Command: []string{"/bin/true"}}
				note, err := RunPreFailover(context.Background(), []Hook{h, ok}, ev)
				switch {
				case tc.wantErr && (!errors.Is(err, ErrTimedOut) || !strings.Contains(err.Error(), tc.want)):
					t.Errorf("got note %q err %v, want an error with %q", note, err, tc.want)
				case !tc.wantErr && (err != nil || !strings.Contains(note, tc.want) || !strings.Contains(note, "1 pre-failover hook(s) ok")):
					t.Errorf("got note %q err %v, want no error and a note with %q and the other hook ok", note, err, tc.want)
				}
			})
		}
	}
}

// on_timeout covers a timeout only: a hook that fails, or a flip whose
// context ends (leadership lost), is an error whatever on_timeout says.
func TestPreFailoverHookFailureIsNotATimeout(t *testing.T) {
	refuse := Hook{Name: "refuse", OnTimeout: OnTimeoutProceed, Command: []string{"/bin/sh", "-c", "echo replica lag; exit 1"}}
	if _, err := RunPreFailover(context.Background(), []Hook{refuse}, ev); err == nil || errors.Is(err, ErrTimedOut) || !strings.Contains(err.Error(), "replica lag") {
		t.Errorf("failing hook: got %v, want its failure", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	hang := Hook{Name: "hang", OnTimeout: OnTimeoutProceed, Command: []string{"/bin/sh", "-c", "exec sleep 300"}}
	if note, err := RunPreFailover(ctx, []Hook{hang}, ev); err == nil || errors.Is(err, ErrTimedOut) {
		t.Errorf("ended context: got note %q err %v, want an error that is not a timeout", note, err)
	}
}

func TestDefaultTimeoutIsOneMinute(t *testing.T) {
	if DefaultTimeout != time.Minute {
		t.Errorf("got %s, want 1m0s", DefaultTimeout)
	}
}

func TestValidateTimeoutAndOnTimeout(t *testing.T) {
	c := Config{
		PreFailover: []Hook{
			{Name: "long", Command: []string{"x"}, Timeout: time.Hour},
			{Name: "neg", Command: []string{"x"}, Timeout: -time.Second},
			{Name: "maybe", Command: []string{"x"}, OnTimeout: "maybe"},
			{Name: "fine", Command: []string{"x"}, Timeout: MaxTimeout, OnTimeout: OnTimeoutBlock},
		},
		PostFailover: []Hook{{Name: "post", Command: []string{"x"}, OnTimeout: OnTimeoutBlock}},
	}
	errs := c.Validate()
	for _, want := range []string{
		"pre_failover[long].timeout: 1h0m0s must be at most 10m0s",
		"pre_failover[neg].timeout: -1s must be >= 0",
		`pre_failover[maybe].on_timeout: "maybe" must be proceed or block`,
		"post_failover[post].on_timeout: only pre_failover hooks hold a flip",
	} {
		if !hasProblem(errs, want) {
			t.Errorf("missing %q in %v", want, errs)
		}
		if shown := errs.Under("hooks").Error(); !strings.Contains(shown, "hooks."+want) {
			t.Errorf("missing %q in %v under hooks", "hooks."+want, shown)
		}
	}
	if strings.Contains(errs.Error(), "[fine]") {
		t.Errorf("a valid hook was refused: %v", errs)
	}
}
