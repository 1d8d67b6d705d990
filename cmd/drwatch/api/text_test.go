package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/failover"
)

// invalidByte stands for a 0xff byte in a request body.
const invalidByte = "INVALID-FF"

// acceptingBackend commits every write and counts them.
type acceptingBackend struct {
	pageBackend
	writes int
}

func (b *acceptingBackend) Submit(context.Context, failover.Command) (failover.Result, uint64, error) {
	b.writes++
	return failover.Result{}, 7, nil
}
func (b *acceptingBackend) DrillCanary() (failover.DrillCanary, error) {
	return failover.DrillCanary{Name: "drwatch-drill.lms.example.org.", Type: "A", TTL: 60}, nil
}
func (b *acceptingBackend) DryRun(failover.Command) (DryRun, error) { b.writes++; return DryRun{}, nil }
func (b *acceptingBackend) AddMember(context.Context, string, string, string, string) error {
	b.writes++
	return nil
}
func (b *acceptingBackend) RemoveMember(context.Context, string, bool, string, string) error {
	b.writes++
	return nil
}

// Every free-text field of a write body refuses C0 and C1 control
// characters, tab, invalid UTF-8 and the invisible format characters that
// reorder or break text (bidi overrides, line separators) with a 400 that
// names the field, and nothing reaches the cluster.
func TestWritesRefuseControlAndFormatCharactersNamingTheField(t *testing.T) {
	tokens, err := ParseTokens([]byte("alice:s3cr3t-token-for-alice\n"))
	if err != nil {
		t.Fatal(err)
	}
	b := &acceptingBackend{}
	srv := httptest.NewServer(NewServer(b, Options{Tokens: tokens}))
	t.Cleanup(srv.Close)

	good := map[string]map[string]any{
		"failover":       {"to": "backup", "reason": "primary down"},
		"failback":       {"reason": "primary back"},
		"switchover":     {"to": "backup", "reason": "planned"},
		"pause":          {"until": "30m", "reason": "migration"},
		"resume":         {"reason": "migration done"},
		"ack":            {"reason": "seen"},
		"members/add":    {"id": "d", "raft_addr": "10.4.0.5:7400", "reason": "new site"},
		"members/remove": {"id": "d", "reason": "site retired"},
	}
	post := func(path string, body map[string]any) (int, ErrorBody) {
		buf, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		// json.Marshal would replace an invalid byte; put it in afterwards.
		buf = bytes.ReplaceAll(buf, []byte(invalidByte), []byte{0xff})
		resp, eb := do(t, srv, http.MethodPost, "/api/v1/"+path, "Bearer s3cr3t-token-for-alice", string(buf))
		return resp.StatusCode, eb
	}
	bad := map[string]string{
		"newline": "x\n12  failover  mallory  forged",
		"cr":      "x\rforged",
		"escape":  "x\x1b[2J",
		"nul":     "x\x00",
		"tab":     "x\ty",
		"del":     "x\x7f",
		"c1":      "x\u009b2J",
		"invalid": "x" + invalidByte,
		"rlo":     "x\u202edetrever",
		"rli":     "x\u2067y\u2069",
		"rlm":     "x\u200f",
		"line":    "x\u2028forged",
		"para":    "x\u2029forged",
		"zwsp":    "x\u200b",
	}
	for path, body := range good {
		if code, eb := post(path, body); code != http.StatusOK {
			t.Fatalf("%s with clean text: got %d %+v, want 200", path, code, eb)
		}
		for field := range body {
			for name, s := range bad {
				poisoned := map[string]any{}
				for k, v := range body {
					poisoned[k] = v
				}
				poisoned[field] = body[field].(string) + s
				before := b.writes
				code, eb := post(path, poisoned)
				if code != http.StatusBadRequest || eb.Error.Code != CodeBadRequest || !strings.HasPrefix(eb.Error.Message, field+": ") {
					t.Errorf("%s with %s in %s: got %d %+v, want 400 bad_request naming %s", path, name, field, code, eb, field)
				}
				if b.writes != before {
					t.Errorf("%s with %s in %s: the write reached the cluster", path, name, field)
				}
			}
		}
	}
}
