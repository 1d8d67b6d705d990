package api

import (
	"github.com/drwatch/drwatch/test/fakeclock"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const (
	bobToken  = "s3cr3t-token-for-bob"
	rootToken = "s3cr3t-token-for-root"
)

func limitedServer(t *testing.T, b Backend, clock *fakeclock.Clock) *httptest.Server {
	t.Helper()
	tokens, err := ParseTokens([]byte("alice:" + aliceToken + ":operate\nbob:" + bobToken + ":operate\nroot:" + rootToken + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewServer(b, Options{Tokens: tokens, Now: clock.Now}))
	t.Cleanup(srv.Close)
	return srv
}

// An operate token that pauses and resumes in a loop is held to the
// routine limit per actor: the write past the burst answers 429
// rate_limited with Retry-After and reaches nothing, while the same actor's
// failover (its own bucket), another actor's pause and dry runs go
// through, and the bucket refills with time.
func TestRoutineWritesAreRateLimitedPerActor(t *testing.T) {
	clock := fakeclock.At(time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC))
	b := &acceptingBackend{}
	srv := limitedServer(t, b, clock)
	alice, bob := "Bearer "+aliceToken, "Bearer "+bobToken
	post := func(auth, path, body string) (*http.Response, ErrorBody) {
		return do(t, srv, http.MethodPost, "/api/v1/"+path, auth, body)
	}
	for i := range DefaultWriteLimits.Routine.Burst {
		path := []string{"pause", "resume"}[i%2]
		if resp, eb := post(alice, path, `{"reason":"flood"}`); resp.StatusCode != http.StatusOK {
			t.Fatalf("write %d of the burst: got %d %+v, want 200", i+1, resp.StatusCode, eb)
		}
	}
	before := b.writes
	resp, eb := post(alice, "pause", `{"reason":"one more"}`)
	if resp.StatusCode != http.StatusTooManyRequests || eb.Error.Code != CodeRateLimited {
		t.Fatalf("write past the burst: got %d %+v, want 429 rate_limited", resp.StatusCode, eb)
	}
	if got := resp.Header.Get("Retry-After"); got != "10" {
		t.Errorf("Retry-After: got %q, want 10", got)
	}
	if !strings.Contains(eb.Error.Message, "alice") || !strings.Contains(eb.Error.Message, "retry in 10s") {
		t.Errorf("message %q: want it to name the actor and when to retry", eb.Error.Message)
	}
	if b.writes != before {
		t.Errorf("a rate-limited write reached the cluster")
	}
	for _, tc := range []struct{ who, auth, path, body string }{
		{"alice's failover", alice, "failover", `{"to":"backup","reason":"primary down"}`},
		{"alice's dry run", alice, "pause", `{"reason":"what if","dry_run":true}`},
		{"bob's pause", bob, "pause", `{"reason":"maintenance"}`},
	} {
		if resp, eb := post(tc.auth, tc.path, tc.body); resp.StatusCode != http.StatusOK {
			t.Errorf("%s after alice's burst: got %d %+v, want 200", tc.who, resp.StatusCode, eb)
		}
	}
	clock.Add(10 * time.Second)
	if resp, eb := post(alice, "ack", `{"reason":"seen"}`); resp.StatusCode != http.StatusOK {
		t.Errorf("alice's write 10s later: got %d %+v, want 200", resp.StatusCode, eb)
	}
	if resp, _ := post(alice, "ack", `{"reason":"seen"}`); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("alice's second write 10s later: got %d, want 429 (one refilled)", resp.StatusCode)
	}
}

// Moves and membership changes have their own, smaller bucket: a token
// cannot flip traffic back and forth, or churn the voters, without end.
func TestMovesAndMembershipAreRateLimited(t *testing.T) {
	clock := fakeclock.At(time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC))
	b := &acceptingBackend{}
	srv := limitedServer(t, b, clock)
	root := "Bearer " + rootToken
	for i := range DefaultWriteLimits.Moves.Burst {
		path, body := "failover", `{"to":"backup","reason":"drill by hand"}`
		if i%2 == 1 {
			path, body = "members/add", `{"id":"d","raft_addr":"10.4.0.5:7400","reason":"new site"}`
		}
		if resp, eb := do(t, srv, http.MethodPost, "/api/v1/"+path, root, body); resp.StatusCode != http.StatusOK {
			t.Fatalf("move %d of the burst: got %d %+v, want 200", i+1, resp.StatusCode, eb)
		}
	}
	for _, tc := range []struct{ path, body string }{
		{"switchover", `{"to":"backup","reason":"again"}`},
		{"members/remove", `{"id":"d","reason":"again"}`},
	} {
		resp, eb := do(t, srv, http.MethodPost, "/api/v1/"+tc.path, root, tc.body)
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "60" {
			t.Errorf("%s past the burst: got %d Retry-After %q %+v, want 429 after 60", tc.path, resp.StatusCode, resp.Header.Get("Retry-After"), eb)
		}
	}
	// A body the API refuses is not charged: it proposes nothing.
	clock.Add(time.Minute)
	if resp, _ := do(t, srv, http.MethodPost, "/api/v1/members/add", root, `{"id":"d","reason":"no address"}`); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("members add without raft_addr: got %d, want 400", resp.StatusCode)
	}
	if resp, eb := do(t, srv, http.MethodPost, "/api/v1/failback", root, `{"reason":"primary back"}`); resp.StatusCode != http.StatusOK {
		t.Errorf("failback a minute later, after a refused body: got %d %+v, want 200", resp.StatusCode, eb)
	}
}

// The bucket refills to its burst and no further, and a clock that steps
// back neither refills nor drains it.
func TestWriteLimiterRefillsToBurst(t *testing.T) {
	l := newWriteLimiter(WriteLimit{Burst: 2, Every: time.Second})
	t0 := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	take := func(at time.Time) bool { _, ok := l.take("a", at); return ok }
	if !take(t0) || !take(t0) || take(t0) {
		t.Fatal("want two writes at once, not three")
	}
	if take(t0.Add(-time.Hour)) {
		t.Error("a clock stepped back refilled the bucket")
	}
	later := t0.Add(time.Hour)
	if !take(later) || !take(later) || take(later) {
		t.Error("after an hour: want the burst of two, not more")
	}
	if retry, ok := l.take("a", later.Add(250*time.Millisecond)); ok || retry != 750*time.Millisecond {
		t.Errorf("a quarter second later: got retry %s ok %v, want 750ms and refused", retry, ok)
	}
}
