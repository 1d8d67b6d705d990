package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/cluster"
)

const aliceToken = "s3cr3t-token-for-alice"

// membersBackend answers membership changes with fixed errors and keeps
// the actor and reason of the last one.
type membersBackend struct {
	acceptingBackend
	addErr, removeErr error
	actor, reason     string
}

func (b *membersBackend) AddMember(_ context.Context, _, _, actor, reason string) error {
	b.actor, b.reason = actor, reason
	return b.addErr
}

func (b *membersBackend) RemoveMember(_ context.Context, _ string, _ bool, actor, reason string) error {
	b.actor, b.reason = actor, reason
	return b.removeErr
}

func apiServer(t *testing.T, b Backend, tokensFile string) *httptest.Server {
	t.Helper()
	tokens, err := ParseTokens([]byte(tokensFile))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewServer(b, Options{Tokens: tokens}))
	t.Cleanup(srv.Close)
	return srv
}

// do sends one request and decodes an error body, if any.
func do(t *testing.T, srv *httptest.Server, method, path, auth, body string) (*http.Response, ErrorBody) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var eb ErrorBody
	_ = json.NewDecoder(resp.Body).Decode(&eb)
	return resp, eb
}

// An endpoint asked with a method it does not serve answers 405
// method_not_allowed and lists the methods it does serve; an unknown path
// is still 404.
func TestWrongMethodAnswers405(t *testing.T) {
	srv := apiServer(t, &acceptingBackend{}, "alice:"+aliceToken+"\n")
	for _, tc := range []struct {
		method, path, allow string
	}{
		{http.MethodGet, "/api/v1/failover", "POST"},
		{http.MethodDelete, "/api/v1/members/remove", "POST"},
		{http.MethodPost, "/api/v1/status", "GET, HEAD"},
		{http.MethodPut, "/api/v1/history", "GET, HEAD"},
		{http.MethodPost, "/api/v1/explain/3", "GET, HEAD"},
	} {
		resp, eb := do(t, srv, tc.method, tc.path, "Bearer "+aliceToken, `{"reason":"x"}`)
		if resp.StatusCode != http.StatusMethodNotAllowed || eb.Error.Code != CodeMethod {
			t.Errorf("%s %s: got %d %+v, want 405 %s", tc.method, tc.path, resp.StatusCode, eb.Error, CodeMethod)
		}
		if got := resp.Header.Get("Allow"); got != tc.allow {
			t.Errorf("%s %s: got Allow %q, want %q", tc.method, tc.path, got, tc.allow)
		}
	}
	if resp, eb := do(t, srv, http.MethodGet, "/api/v1/nope", "", ""); resp.StatusCode != http.StatusNotFound || eb.Error.Code != CodeNotFound {
		t.Errorf("GET /api/v1/nope: got %d %+v, want 404 %s", resp.StatusCode, eb.Error, CodeNotFound)
	}
}

// The auth scheme is matched case-insensitively (RFC 9110 section 11.1).
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	b := &acceptingBackend{}
	srv := apiServer(t, b, "alice:"+aliceToken+"\n")
	for _, scheme := range []string{"Bearer", "bearer", "BEARER", "bEaReR"} {
		resp, eb := do(t, srv, http.MethodPost, "/api/v1/ack", scheme+" "+aliceToken, `{"reason":"seen"}`)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("scheme %q: got %d %+v, want 200", scheme, resp.StatusCode, eb.Error)
		}
	}
	for _, auth := range []string{"Basic " + aliceToken, "Bearer", "Bearer ", aliceToken, "Bearerx " + aliceToken} {
		resp, _ := do(t, srv, http.MethodPost, "/api/v1/ack", auth, `{"reason":"seen"}`)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("Authorization %q: got %d, want 401", auth, resp.StatusCode)
		}
	}
}

// Membership changes answer a bad node id with 400 and the removal of a
// node that is not a member with 404, not 500 or 200.
func TestMembershipErrorCodes(t *testing.T) {
	for _, tc := range []struct {
		name, path, body string
		b                *membersBackend
		status           int
		code             Code
	}{
		{"add with a bad id", "/api/v1/members/add", `{"id":"a/b","raft_addr":"10.0.0.1:7400","reason":"x"}`,
			&membersBackend{addErr: fmt.Errorf("add voter a/b: %w", fmt.Errorf("%w %q: want only [A-Za-z0-9._-]", cluster.ErrBadNodeID, "a/b"))},
			http.StatusBadRequest, CodeBadRequest},
		{"remove an unknown id", "/api/v1/members/remove", `{"id":"zz","reason":"x"}`,
			&membersBackend{removeErr: fmt.Errorf("remove server zz: %w", cluster.ErrNotMember)},
			http.StatusNotFound, CodeNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := apiServer(t, tc.b, "alice:"+aliceToken+"\n")
			resp, eb := do(t, srv, http.MethodPost, tc.path, "Bearer "+aliceToken, tc.body)
			if resp.StatusCode != tc.status || eb.Error.Code != tc.code {
				t.Errorf("got %d %+v, want %d %s", resp.StatusCode, eb.Error, tc.status, tc.code)
			}
		})
	}
}

// warnings is always a JSON array, empty when there is nothing to say, so
// clients can iterate it without a null check.
func TestStatusWarningsIsNeverNull(t *testing.T) {
	srv := apiServer(t, &pageBackend{st: fxNoLeader()}, "alice:"+aliceToken+"\n")
	resp, err := srv.Client().Get(srv.URL + "/api/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	if got := string(raw["warnings"]); got != "[]" {
		t.Errorf("got warnings %s, want []", got)
	}
}

// Each role writes only what it is granted: read nothing, operate the
// decision commands, admin also the membership. A refusal is 403 and names
// the role the write needs; nothing reaches the cluster.
// operateWrites and adminWrites are every write endpoint under /api/v1/,
// by the least role that may call it, each with a valid body.
var (
	operateWrites = map[string]string{
		"failover":   `{"to":"backup","reason":"x"}`,
		"failback":   `{"reason":"x"}`,
		"switchover": `{"to":"backup","reason":"x"}`,
		"pause":      `{"until":"30m","reason":"x"}`,
		"resume":     `{"reason":"x"}`,
		"ack":        `{"reason":"x"}`,
		"drill":      `{"reason":"x"}`,
	}
	adminWrites = map[string]string{
		"members/add":    `{"id":"d","raft_addr":"10.4.0.5:7400","reason":"x"}`,
		"members/remove": `{"id":"d","reason":"x"}`,
	}
)

func TestTokenRolesLimitWrites(t *testing.T) {
	b := &acceptingBackend{}
	srv := apiServer(t, b, "reader:read-token-0123456789:read\noperator:operate-token-0123456789:operate\n"+
		"admin:admin-token-0123456789:admin\nlegacy:legacy-token-0123456789\n")
	check := func(token, path, body string, want int, needs Role) {
		t.Helper()
		before := b.writes
		resp, eb := do(t, srv, http.MethodPost, "/api/v1/"+path, "Bearer "+token, body)
		if resp.StatusCode != want {
			t.Errorf("%s with %s: got %d %+v, want %d", path, token, resp.StatusCode, eb.Error, want)
		}
		if want != http.StatusForbidden {
			return
		}
		if eb.Error.Code != CodeForbidden || !strings.Contains(eb.Error.Message, "needs role "+string(needs)) {
			t.Errorf("%s with %s: got %+v, want %s naming role %s", path, token, eb.Error, CodeForbidden, needs)
		}
		if b.writes != before {
			t.Errorf("%s with %s: a refused write reached the cluster", path, token)
		}
	}
	for path, body := range operateWrites {
		check("read-token-0123456789", path, body, http.StatusForbidden, RoleOperate)
		check("operate-token-0123456789", path, body, http.StatusOK, "")
		check("admin-token-0123456789", path, body, http.StatusOK, "")
		check("legacy-token-0123456789", path, body, http.StatusOK, "")
		// A dry run is refused too: it shows what the token cannot do anyway.
		check("read-token-0123456789", path, strings.Replace(body, `"reason"`, `"dry_run":true,"reason"`, 1), http.StatusForbidden, RoleOperate)
	}
	for path, body := range adminWrites {
		check("read-token-0123456789", path, body, http.StatusForbidden, RoleAdmin)
		check("operate-token-0123456789", path, body, http.StatusForbidden, RoleAdmin)
		check("admin-token-0123456789", path, body, http.StatusOK, "")
		check("legacy-token-0123456789", path, body, http.StatusOK, "")
	}
}

// A membership change needs a reason, bounded like every other write's, and
// hands the actor and reason on to be recorded in the log.
func TestMembershipChangesNeedAReasonAndRecordTheActor(t *testing.T) {
	for path, body := range map[string]string{
		"/api/v1/members/add":    `{"id":"d","raft_addr":"10.4.0.5:7400"`,
		"/api/v1/members/remove": `{"id":"d"`,
	} {
		b := &membersBackend{}
		srv := apiServer(t, b, "alice:"+aliceToken+"\n")
		for name, reason := range map[string]string{"no reason": "", "blank reason": `,"reason":"  "`,
			"long reason": `,"reason":"` + strings.Repeat("x", MaxReasonLen+1) + `"`} {
			resp, eb := do(t, srv, http.MethodPost, path, "Bearer "+aliceToken, body+reason+"}")
			if resp.StatusCode != http.StatusBadRequest || eb.Error.Code != CodeBadRequest || !strings.Contains(eb.Error.Message, "reason") {
				t.Errorf("%s with %s: got %d %+v, want 400 naming the reason", path, name, resp.StatusCode, eb.Error)
			}
		}
		if b.actor != "" {
			t.Errorf("%s: a refused change reached the backend", path)
		}
		resp, eb := do(t, srv, http.MethodPost, path, "Bearer "+aliceToken, body+`,"reason":" site retired "}`)
		if resp.StatusCode != http.StatusOK || b.actor != "alice" || b.reason != "site retired" {
			t.Errorf("%s: got %d %+v, backend saw actor %q reason %q; want 200, alice, %q", path, resp.StatusCode, eb.Error, b.actor, b.reason, "site retired")
		}
	}
}
