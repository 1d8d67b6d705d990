package apitest

import (
	"encoding/base64"
	"encoding/json"
	"html"
	"html/template"
	"net/url"
	"strings"
	"testing"
)

// AssertNoSecrets fails t when body contains any of secrets, raw or in an
// encoding a reply could carry it in: HTML-escaped (html/template and
// html.EscapeString differ), JSON-string-escaped, URL-encoded or base64.
// Empty secrets are ignored; secrets shorter than 8 bytes are refused,
// because a short value matches by accident and proves nothing.
func AssertNoSecrets(t testing.TB, body []byte, secrets ...string) {
	t.Helper()
	s := string(body)
	for _, sec := range secrets {
		if sec == "" {
			continue
		}
		if len(sec) < 8 {
			t.Fatalf("AssertNoSecrets: secret fixture %q is too short to grep for reliably; use at least 8 bytes", sec)
		}
		for _, f := range encodings(sec) {
			enc, form := f[0], f[1]
			if i := strings.Index(s, form); i >= 0 {
				lo, hi := max(0, i-40), min(len(s), i+len(form)+40)
				// Name the secret by position only: the failure text must
				// not become one more place that prints it.
				t.Errorf("body contains secret #%d (%s form) at byte %d, near %q", indexOf(secrets, sec), enc,
					i, strings.ReplaceAll(s[lo:hi], form, "<SECRET>"))
			}
		}
	}
}

func indexOf(xs []string, x string) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return -1
}

// encodings lists (name, form) of sec, each distinct form once.
func encodings(sec string) [][2]string {
	jb, _ := json.Marshal(sec)
	var out [][2]string
	seen := map[string]bool{}
	for _, f := range [][2]string{
		{"raw", sec},
		{"html", html.EscapeString(sec)},
		{"html/template", template.HTMLEscapeString(sec)},
		{"json", strings.Trim(string(jb), `"`)},
		{"url", url.QueryEscape(sec)},
		{"url-path", url.PathEscape(sec)},
		{"base64", base64.StdEncoding.EncodeToString([]byte(sec))},
		{"base64url", base64.RawURLEncoding.EncodeToString([]byte(sec))},
	} {
		if !seen[f[1]] {
			seen[f[1]] = true
			out = append(out, f)
		}
	}
	return out
}
