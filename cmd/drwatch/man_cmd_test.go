package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// The man pages the package ships cover every command an operator can run,
// one page each, named like man(1) expects (drwatch-config-validate.1), and
// none for a hidden command: `man` itself is for packagers.
func TestManPagesCoverEveryVisibleCommand(t *testing.T) {
	dir := t.TempDir()
	if _, stderr, code := run(t, "man", dir); code != exitOK {
		t.Fatalf("drwatch man %s: got exit %d (%s), want 0", dir, code, stderr)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	// The tree as Execute sees it: cobra adds `completion` when it runs.
	root := newRootCmd()
	root.InitDefaultCompletionCmd()
	var want []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c != root {
			return
		}
		want = append(want, strings.ReplaceAll(c.CommandPath(), " ", "-")+".1")
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("got pages %v, want %v", got, want)
	}
	for _, hidden := range []string{"drwatch-man.1", "drwatch-help.1"} {
		if slices.Contains(got, hidden) {
			t.Errorf("got a page %s, want none for a hidden command", hidden)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, "drwatch-config-validate.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`.TH "DRWATCH-CONFIG-VALIDATE" "1"`, "--no-file-checks", `drwatch-config(1)`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("drwatch-config-validate.1: got no %q in\n%s", want, page)
		}
	}
	if strings.Contains(string(page), "Auto generated") {
		t.Errorf("drwatch-config-validate.1: got a generation-date footer, want reproducible pages")
	}
}

func TestManNeedsADirectory(t *testing.T) {
	if _, _, code := run(t, "man"); code != exitUsage {
		t.Errorf("drwatch man: got exit %d, want %d (usage)", code, exitUsage)
	}
}
