package api

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/cmd/drwatch/api/apitest"
)

// TestReadEndpointsCarryNoSecrets renders the page, its partial, the
// summary, the badges and every JSON read endpoint of a server configured
// with a write token, after requests that carry that token (in the
// Authorization header and in the query string), and greps every reply for
// the token in any encoding. The page renders only from Status, which holds
// no secret by construction; this proves no reply reflects the request
// either (server.go's 404 for unknown /api/ paths does echo the path the
// client sent, which is the client's own input, so it is not requested
// here). The end-to-end suite repeats the grep on a real cluster with
// apitest.AssertNoSecrets.
func TestReadEndpointsCarryNoSecrets(t *testing.T) {
	const token = "tok-9f8e7d6c5b4a39281706f5e4d3c2b1a0"
	const other = "other-secret-0123456789abcdef"
	tokens, err := ParseTokens([]byte("alice:" + token + "\nbob:" + other + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []Status{fxFailedOver(), fxPending(), fxNoLeader()} {
		srv := pageServer(t, st, tokens)
		for _, path := range []string{
			"/", "/?partial=1", "/?partial=1&token=" + token, "/?" + token,
			"/api/v1/status", "/api/v1/summary.json", "/api/v1/history", "/api/v1/members", "/api/v1/explain/4200",
			"/badge/active.svg", "/badge/primary.svg", "/badge/" + token + ".svg",
			"/metrics", "/readyz", "/livez",
		} {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Cookie", "session="+other)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			var hdr strings.Builder
			_ = resp.Header.Write(&hdr)
			t.Run(strings.ReplaceAll(path, token, "TOKEN"), func(t *testing.T) {
				apitest.AssertNoSecrets(t, body, token, other)
				apitest.AssertNoSecrets(t, []byte(hdr.String()), token, other)
			})
		}
	}
}

func TestAssertNoSecretsCatchesEncodings(t *testing.T) {
	const sec = `p@ss<w&rd>"0123`
	for _, tt := range []struct{ name, body string }{
		{"raw", "x" + sec + "y"},
		{"html", "x p@ss&lt;w&amp;rd&gt;&#34;0123 y"},
		{"json", `{"a":"p@ss\u003cw\u0026rd\u003e\"0123"}`},
		{"url", "?q=p%40ss%3Cw%26rd%3E%220123"},
		{"base64", "cEBzczx3JnJkPiIwMTIz"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ft := &fakeTB{TB: t}
			apitest.AssertNoSecrets(ft, []byte(tt.body), sec)
			if !ft.failed {
				t.Errorf("AssertNoSecrets(%q) did not fail, want it to find the %s form", tt.body, tt.name)
			}
			if strings.Contains(ft.msg, sec) {
				t.Errorf("the failure message repeats the secret: %s", ft.msg)
			}
		})
	}
	ft := &fakeTB{TB: t}
	apitest.AssertNoSecrets(ft, []byte("nothing to see"), sec, "")
	if ft.failed {
		t.Errorf("clean body: got failure %q, want none", ft.msg)
	}
}

// fakeTB records failures instead of failing the real test.
type fakeTB struct {
	testing.TB
	failed bool
	msg    string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.failed = true
	f.msg += fmt.Sprintf(format, args...)
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = true
	f.msg += fmt.Sprintf(format, args...)
}
