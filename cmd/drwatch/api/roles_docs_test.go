package api

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The role table in docs/security.md and the role summary in README.md
// name every write each role may call: an operator grants tokens from
// them, and a write missing there (drills once were) is one nobody knows
// a read or operate token can or cannot do.
func TestRoleDocsNameEveryWrite(t *testing.T) {
	sec, err := os.ReadFile("../../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := func(role string) string {
		m := regexp.MustCompile("(?m)^\\s*\\| `" + role + "` \\|(.*)\\|\\s*$").FindStringSubmatch(string(sec))
		if m == nil {
			t.Fatalf("docs/security.md has no role table row for %s", role)
		}
		return m[1]
	}
	// README: "(`actor:token:operate` for failover, ..., and ack; `:admin` also for members; ...)".
	readmeRole := func(role string) string {
		m := regexp.MustCompile("`(?:actor:token)?:" + role + "` ((?:also )?for [^;]*);").FindStringSubmatch(strings.ReplaceAll(string(readme), "\n", " "))
		if m == nil {
			t.Fatalf("README.md does not say what :%s is for", role)
		}
		return m[1]
	}
	name := func(path string) string { return strings.ReplaceAll(path, "/", " ") }
	for role, writes := range map[string]map[string]string{"operate": operateWrites, "admin": adminWrites} {
		table, summary := row(role), readmeRole(role)
		for path := range writes {
			if !strings.Contains(table, "`"+name(path)+"`") {
				t.Errorf("docs/security.md's %s row (%s) does not list %q", role, table, name(path))
			}
			word := strings.Fields(name(path))[0]
			if !strings.Contains(summary, word) {
				t.Errorf("README.md's :%s summary (%s) does not name %q", role, summary, word)
			}
		}
	}
}
