package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// A group's hooks load into its own section: the other group's and the
// top-level one stay empty.
func TestGroupHooksLoad(t *testing.T) {
	y := withGroupRemediations(t, "", "", `    hooks:
      pre_failover:
        - { name: drain-wiki, command: [/usr/local/bin/drain, wiki], on_timeout: block }
      post_failover:
        - { name: page, url: "https://hooks.example.org/wiki", secret_file: /etc/drwatch/wiki-hook.key }
`)
	c, ps := loadString(t, y)
	if ps != nil {
		t.Fatalf("got problems:\n%v", ps)
	}
	wiki := c.Groups[1].Hooks
	if len(wiki.PreFailover) != 1 || wiki.PreFailover[0].Name != "drain-wiki" || wiki.PreFailover[0].OnTimeout != "block" ||
		len(wiki.PostFailover) != 1 || wiki.PostFailover[0].SecretFile != "/etc/drwatch/wiki-hook.key" {
		t.Errorf("wiki's hooks: got %+v", wiki)
	}
	if lms := c.Groups[0].Hooks; len(lms.PreFailover)+len(lms.PostFailover) != 0 {
		t.Errorf("lms's hooks: got %+v, want none", lms)
	}
	if len(c.Hooks.PreFailover)+len(c.Hooks.PostFailover) != 0 {
		t.Errorf("top-level hooks took the group's: %+v", c.Hooks)
	}
}

// A problem in a group's hooks names its field by its full path, with
// its line, a file field's included (its value not shown); the same
// problem in the top-level hooks keeps its path.
func TestGroupHookProblemsNameTheirPath(t *testing.T) {
	y := withGroupRemediations(t, `hooks:
  post_failover:
    - { name: page, url: "ftp://hooks.example.org/x", secret_file: /etc/drwatch/top-hook.key }
`, "", `    hooks:
      pre_failover:
        - { name: both, command: [x], url: "https://hooks.example.org/x" }
      post_failover:
        - { name: page, url: "ftp://hooks.example.org/x", secret_file: /nonexistent/drwatch/wiki-hook.key }
`)
	want := map[string]string{
		"groups[wiki].hooks.pre_failover[both]":              "set exactly one of command and url",
		"groups[wiki].hooks.post_failover[page].url":         "must be http(s)",
		"hooks.post_failover[page].url":                      "must be http(s)",
		"groups[wiki].hooks.post_failover[page].secret_file": valueNotShown,
	}
	_, err := Parse("test.yaml", []byte(y), Options{})
	var ps Problems
	if err == nil || !errors.As(err, &ps) {
		t.Fatalf("got %v, want problems", err)
	}
	for path, msg := range want {
		found := false
		for _, p := range ps {
			if p.Path == path && strings.Contains(p.Msg, msg) {
				found = true
				if p.Line == 0 {
					t.Errorf("%s: no line", p)
				}
			}
		}
		if !found {
			t.Errorf("got problems:\n%v\nwant %s: %s", ps, path, msg)
		}
	}
	if strings.Contains(err.Error(), "/nonexistent/drwatch/wiki-hook.key") {
		t.Errorf("a problem prints the secret_file's value:\n%v", err)
	}
}

// The reference shows a group's hooks as the top-level section's fields,
// once.
func TestReferenceShowsGroupHooksOnce(t *testing.T) {
	var b strings.Builder
	if err := WriteReference(&b); err != nil {
		t.Fatal(err)
	}
	ref := b.String()
	if !strings.Contains(ref, "| `groups[].hooks` |") || strings.Contains(ref, "groups[].hooks.") {
		t.Fatalf("reference: want the groups[].hooks row alone")
	}
	f, _ := reflect.TypeOf(Group{}).FieldByName("Hooks")
	if f.Type != reflect.TypeOf(Config{}.Hooks) {
		t.Fatalf("a group's hooks are %s, want the top-level section's type", f.Type)
	}
}

// The top-level hooks run around the default group's flips only: with
// groups and no default group (no dns.records) they would never run, and
// are refused. A group's own hooks there are accepted
// (TestGroupHooksLoad), and so are top-level hooks beside a default
// group.
func TestTopLevelHooksWithoutADefaultGroupAreRefused(t *testing.T) {
	top := "hooks:\n  post_failover:\n    - { name: page, command: [/usr/local/bin/page] }\n"
	_, ps := loadString(t, withGroupRemediations(t, top, "", ""))
	found := false
	for _, p := range ps {
		found = found || (p.Path == "hooks" && strings.Contains(p.Msg, "groups[].hooks"))
	}
	if !found {
		t.Errorf("got problems:\n%v\nwant one at hooks pointing at groups[].hooks", ps)
	}

	y := strings.Replace(withGroupRemediations(t, top, "", ""), "  zone: example.org.\n",
		"  zone: example.org.\n  records:\n    - { name: www, type: A, ttl: 60, primary: [203.0.113.50], backup: [198.51.100.50] }\n", 1)
	y = strings.Replace(y, "drill: { record: drwatch-drill }\n",
		"drill: { record: drwatch-drill }\nsites:\n  primary: { probes: [ { name: www, type: tcp, address: \"203.0.113.50:443\" } ] }\n  backup: { probes: [ { name: www, type: tcp, address: \"198.51.100.50:443\" } ] }\n", 1)
	if c, ps := loadString(t, y); ps != nil || len(c.Hooks.PostFailover) != 1 {
		t.Errorf("top-level hooks beside a default group: got problems:\n%v", ps)
	}
}
