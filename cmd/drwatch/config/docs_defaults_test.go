package config

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// proseDefault is a default written in a field's meaning, "(default 5m)",
// instead of in its `default` tag.
var proseDefault = regexp.MustCompile(`\(default [^)]*\)`)

// Every default is in the reference's default column, from the field's
// `default` tag, never only in its prose: the column is what a reader (and
// the loader) goes by. A field without a default ("empty means the
// credentials' own project") keeps an empty column.
func TestReferenceShowsEveryDefaultInItsColumn(t *testing.T) {
	var b bytes.Buffer
	if err := WriteReference(&b); err != nil {
		t.Fatal(err)
	}
	noDefault := 0
	for _, line := range strings.Split(b.String(), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := splitRow(line)
		if len(cells) != 4 || strings.Contains(cells[1], "mapping") {
			continue
		}
		path, def, meaning := cells[0], cells[2], cells[3]
		if m := proseDefault.FindString(meaning); m != "" && def == "" {
			t.Errorf("%s: meaning says %q, default column is empty: put it in a default tag", path, m)
		}
		if def == "" && strings.Contains(meaning, "empty means") {
			noDefault++
		}
	}
	if noDefault == 0 {
		t.Error("no field without a default found: the look-alike case is not exercised")
	}
}

// splitRow splits a Markdown table row into its trimmed cells; "\|" is a
// pipe inside a cell.
func splitRow(line string) []string {
	line = strings.ReplaceAll(strings.Trim(line, "|"), `\|`, "\x00")
	var cells []string
	for _, c := range strings.Split(line, "|") {
		cells = append(cells, strings.TrimSpace(strings.ReplaceAll(c, "\x00", `\|`)))
	}
	return cells
}
