package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// mergeChain is n lines of merge keys, each merging the previous mapping
// twice: fully expanded it holds 2^(n-1) copies of the first.
func mergeChain(n int) string {
	var b strings.Builder
	b.WriteString("k0: &k0 {a: 1, b: 2}\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "k%d: &k%d {<<: [*k%d, *k%d]}\n", i, i, i-1, i-1)
	}
	return b.String()
}

// aliasChain is the classic billion laughs: each line lists the previous
// one ten times.
func aliasChain(n int) string {
	var b strings.Builder
	b.WriteString("x0: &x0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "x%d: &x%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*x%d, ", i-1), 10), ", "))
	}
	return b.String()
}

// hostileFiles are inputs that crashed the loader or made it spend
// gigabytes and minutes; each must be refused with a specific problem.
var hostileFiles = []struct {
	name, yaml string
	wantPath   string
	want       string
	wantLine   int
}{
	{"tagged empty list", "peers: !!seq\n", "peers", "tag !!seq has no value", 1},
	{"tagged empty list in a site", "sites:\n  primary:\n    probes: !!seq\n", "sites.primary.probes", "tag !!seq has no value", 3},
	{"tagged empty mapping", "peers: !!map\n", "peers", "tag !!map has no value", 1},
	{"tagged empty list in a flow mapping", "sites: {primary: {probes: !!seq}}\n", "", "invalid tag character", 1},
	{"tagged empty list behind an anchor", "peers: &p !!seq\n", "peers", "tag !!seq has no value", 1},
	{"deep flow nesting", "node: " + strings.Repeat("[", 40000) + strings.Repeat("]", 40000) + "\n", "", "nested deeper than 64 levels", 1},
	{"deep flow mappings", "node: " + strings.Repeat("{a: ", 20000) + strings.Repeat("}", 20000) + "\n", "", "nested deeper than 64 levels", 1},
	{"deep block sequences on one line", "peers:\n" + strings.Repeat("- ", 20000) + "a\n", "", "nested deeper than 64 levels", 2},
	{"deep block mappings", func() string {
		var b strings.Builder
		for i := range 1000 {
			fmt.Fprintf(&b, "%sa:\n", strings.Repeat(" ", i))
		}
		return b.String()
	}(), "", "nested deeper than 64 levels", 65},
	{"stacked anchors", "peers: " + strings.Repeat("&a ", 16000) + "a\n", "", "more than one anchor or tag", 1},
	{"stacked tags", "peers: " + strings.Repeat("!!seq ", 16000) + "a\n", "", "more than one anchor or tag", 1},
	{"merge key chain", mergeChain(23), "", "more than 50000 values once aliases and merge keys are expanded", 13},
	{"alias chain under an unknown key", aliasChain(12), "", "more than 50000 values once aliases and merge keys are expanded", 5},
	{"deep nesting through aliases", "a: &a " + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "\nb: [*a, " + strings.Repeat("[", 30) + "*a" + strings.Repeat("]", 30) + "]\n", "", "nested deeper than 64 levels", 2},
	{"alias to its own anchor", "peers: &a [*a]\n", "", "alias *a is inside its own anchor", 1},
}

// Each hostile file is refused with a problem naming what is wrong and
// where, and the refusal is cheap: the bound is on the bytes allocated while
// parsing (runtime.MemStats.TotalAlloc, an upper bound on the heap it can
// grow to), so it does not depend on how loaded the machine is. Before the
// limits the deep nesting allocated 2.4 GB and the merge chain doubled its
// cost with every line.
func TestHostileFilesAreRefusedCheaply(t *testing.T) {
	const maxAlloc = 100 << 20
	for _, tt := range hostileFiles {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := Parse("hostile.yaml", []byte(tt.yaml), Options{SkipFileChecks: true})
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > maxAlloc {
				t.Errorf("parse allocated %d MB, want at most %d MB", alloc>>20, maxAlloc>>20)
			}
			// The goal is 1 s on an idle machine; this generous bound only
			// catches the exponential and quadratic cases (minutes before
			// the limits), not a slow shared CI box.
			if elapsed > 20*time.Second {
				t.Errorf("parse took %s, want well under 20s", elapsed)
			}
			var ps Problems
			if !errors.As(err, &ps) || len(ps) == 0 {
				t.Fatalf("got %v, want Problems", err)
			}
			for _, p := range ps {
				if strings.Contains(p.Msg, "could not parse") {
					t.Fatalf("got the panic safety net %q, want a specific problem", p)
				}
			}
			for _, p := range ps {
				if p.Path == tt.wantPath && strings.Contains(p.Msg, tt.want) {
					if p.Line != tt.wantLine || p.Column == 0 {
						t.Errorf("got %s, want line %d and a column", p, tt.wantLine)
					}
					return
				}
			}
			t.Errorf("got problems:\n%v\nwant %s: ...%s", ps, tt.wantPath, tt.want)
		})
	}
}

// A panic inside the YAML library must not take the daemon down: it becomes
// one problem naming the file.
func TestPanicWhileParsingBecomesProblem(t *testing.T) {
	_, err := parseSafely("x.yaml", func() (*Config, error) {
		var m map[string]int
		m["boom"]++ // a nil map write, as a library bug would
		return nil, nil
	})
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 1 || !strings.HasPrefix(ps[0].String(), "x.yaml: could not parse") {
		t.Fatalf("got %v, want one x.yaml: could not parse problem", err)
	}
}

// Legitimate anchors and aliases below the limits keep working.
func TestAliasesBelowTheLimitsStillWork(t *testing.T) {
	y := strings.Replace(validYAML(t), "      - { name: lms, type: http, url: \"https://lms.example.org/heartbeat\", connect_to: \"198.51.100.10:443\" }",
		"      - &backup { name: lms, type: http, url: \"https://lms.example.org/heartbeat\", connect_to: \"198.51.100.10:443\" }", 1)
	y = strings.Replace(y, "  backup:\n    probes:\n", "  backup:\n    probes: &probes\n", 1)
	y += "x-unused: [*probes, *probes, *backup]\n"
	_, ps := loadString(t, y)
	for _, p := range ps {
		if p.Path != "x-unused" {
			t.Errorf("got %s, want only the unknown key x-unused", p)
		}
	}
}

// A type error in one field must not hide the others: this file has eleven
// problems, five of them type errors, and all eleven are reported.
func TestTypeErrorsDoNotHideOtherProblems(t *testing.T) {
	_, err := Load("testdata/eleven-problems.yaml", Options{SkipFileChecks: true})
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("got %v, want Problems", err)
	}
	want := []struct {
		line      int
		path, msg string
	}{
		{7, "api.client_certs", "must be optional or required"},
		{8, "policy.interval", `"soon" is not a duration`},
		{8, "policy.fall", `"three" is not a whole number`},
		{8, "policy.quorum", "not a majority"},
		{8, "policy.auto_failover", `"maybe" is not true or false`},
		{8, "policy.block_windw", "unknown key"},
		{13, "sites.primary.probes[lms].expect_status", "want a list"},
		{14, "sites.primary.probes[lms#2].name", "duplicate probe name"},
		{22, "dns.rfc2136.secret", "not accepted inline"},
		{25, "dns.records[lms].ttl", "want a single value"},
		{26, "dns.records[studio.example.net.].name", "not in zone"},
	}
	for _, w := range want {
		found := false
		for _, p := range ps {
			if p.Path == w.path && strings.Contains(p.Msg, w.msg) {
				found = true
				prefix := fmt.Sprintf("eleven-problems.yaml:%d:", w.line)
				if !strings.HasPrefix(filepath.Base(p.File)+p.String()[len(p.File):], prefix) || p.Column == 0 {
					t.Errorf("got %s, want FILE:%d:COL", p, w.line)
				}
			}
		}
		if !found {
			t.Errorf("missing %s: ...%s", w.path, w.msg)
		}
	}
	if len(ps) != len(want) {
		t.Errorf("got %d problems, want %d:\n%v", len(ps), len(want), ps)
	}
}
