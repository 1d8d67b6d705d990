package main

import (
	"fmt"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// The documents whose drwatch command lines must parse.
var documentsWithCommands = []string{"../../README.md", "../../docs/operations.md", "../../docs/runbooks.md"}

// docCommand is one drwatch invocation shown in a document.
type docCommand struct {
	file string
	line int
	text string   // as written, for failure messages
	args []string // the words after "drwatch", unquoted
}

func (d docCommand) String() string { return fmt.Sprintf("%s:%d: %s", d.file, d.line, d.text) }

// Every drwatch command line in README.md, docs/operations.md and
// docs/runbooks.md, in fenced code blocks and inline code, parses with the
// real command tree: the subcommand exists, every flag exists and takes the
// value it is given, and the positional arguments are as many as the
// command accepts. Nothing is executed.
func TestDocumentedCommandsParse(t *testing.T) {
	total := 0
	for _, file := range documentsWithCommands {
		doc, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		cmds := documentedCommands(strings.TrimPrefix(file, "../../"), string(doc))
		if len(cmds) == 0 {
			t.Errorf("%s: found no drwatch command lines; the extractor is broken", file)
		}
		total += len(cmds)
		for _, c := range cmds {
			if err := parseCommandLine(c.args); err != nil {
				t.Errorf("%s\n\tthe binary rejects it: %v", c, err)
			}
		}
	}
	// The three documents show well over a hundred; far fewer means the
	// extractor lost some, and the test would pass without looking.
	if total < 100 {
		t.Errorf("found %d documented drwatch command lines, want at least 100", total)
	}
}

// The checker itself: what the binary rejects, it rejects, and placeholders
// and the documents' synopsis forms stand for valid values.
func TestDocumentedCommandCheckerRejectsWhatTheBinaryRejects(t *testing.T) {
	tests := []struct {
		doc     string
		wantN   int // commands found
		wantErr bool
	}{
		{"```sh\ndrwatch status -o json\n```\n", 1, false},
		{"```sh\ndrwatch failover --to backup --reason \"a b\" --wait --wait-timeout 2m\n```\n", 1, false},
		{"```sh\ndrwatch failover --to backup --frobnicate\n```\n", 1, true},
		{"```sh\ndrwatch frobnicate\n```\n", 1, true},
		{"```sh\ndrwatch dns frobnicate --config x\n```\n", 1, true},
		{"```sh\ndrwatch members remove a b --reason x\n```\n", 1, true},
		{"```sh\ndrwatch explain 3 4\n```\n", 1, true},
		{"```sh\ndrwatch status extra\n```\n", 1, true},
		{"```sh\ndrwatch failover --to backup --reason x --wait-timeout soon\n```\n", 1, true},
		{"```sh\ndrwatch failover --to backup --reason … --wait-timeout DURATION\n```\n", 1, false},
		{"```sh\ndrwatch failover --to backup --wait …\n```\n", 1, false},
		{"```sh\ndrwatch failover --reason \"...\" --wait ... --frobnicate\n```\n", 1, true},
		{"```sh\ndrwatch members remove ID --reason …\ndrwatch explain GEN\n```\n", 2, false},
		{"```sh\nfor n in a b; do drwatch config validate --config \"$DIR/$n/x.yaml\"; done\n```\n", 1, false},
		{"```sh\ndrwatch dns set --site backup --no-quorum \\\n  --reason x --yes --frobnicate\n```\n", 1, true},
		{"```sh\njournalctl -u drwatch -f   # drwatch --frobnicate\ninstall -m 0755 drwatch /usr/local/bin/drwatch\n```\n", 0, false},
		{"```sh\nbin/drwatch version --frobnicate\n```\n", 1, true},
		{"Run `drwatch history --frobnicate` first.\n", 1, true},
		{"Run `drwatch history -o json` or `drwatch` itself.\n", 1, false},
		{"```sh\ndrwatch pause --reason x [--until 2h]; drwatch history [-o json]\n```\n", 4, false},
		{"```sh\ndrwatch history [--frobnicate]\n```\n", 2, true},
		{"```sh\ndrwatch remediate plan -c FILE [NAME]\n```\n", 2, false},
	}
	for _, tt := range tests {
		cmds := documentedCommands("doc.md", tt.doc)
		var errs []error
		for _, c := range cmds {
			if err := parseCommandLine(c.args); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", c, err))
			}
		}
		if len(cmds) != tt.wantN || (len(errs) > 0) != tt.wantErr {
			t.Errorf("%q: got %d commands %v, errors %v; want %d commands, an error=%v", tt.doc, len(cmds), cmds, errs, tt.wantN, tt.wantErr)
		}
	}
}

// parseCommandLine resolves args in the real command tree and parses them
// as Execute would, without running the command: unknown subcommands,
// unknown flags, bad flag values and wrong argument counts are errors.
func parseCommandLine(args []string) error {
	root := newRootCmd()
	// Execute adds cobra's `completion` command; the binary accepts it.
	root.InitDefaultCompletionCmd()
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	cmd.InitDefaultHelpFlag()
	_ = cmd.InheritedFlags() // merges the parents' persistent flags into cmd.Flags()
	rest = fillPlaceholders(cmd.Flags(), rest)
	if err := cmd.ParseFlags(rest); err != nil {
		return fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	if help, _ := cmd.Flags().GetBool("help"); help {
		return nil
	}
	positional := cmd.Flags().Args()
	if !cmd.Runnable() {
		// A group such as "drwatch dns" only prints its help; a word
		// after it is a subcommand that does not exist.
		if len(positional) > 0 {
			return fmt.Errorf("%s has no subcommand %q", cmd.CommandPath(), positional[0])
		}
		return nil
	}
	if err := cmd.ValidateArgs(positional); err != nil {
		return err
	}
	if err := cmd.ValidateRequiredFlags(); err != nil {
		return err
	}
	return cmd.ValidateFlagGroups()
}

// placeholder matches the words documents put where the reader supplies a
// value: GEN, ID, FILE, <gen>, "…", "...", and shell variables.
var placeholder = regexp.MustCompile(`^([A-Z][A-Z0-9_]*|<[^>]+>|…|\.\.\.|.*\$.*)$`)

// placeholderValues stand for a placeholder given to a flag whose type is
// not a string, so that the placeholder is checked to be a flag value, not
// a literal of the wrong type.
var placeholderValues = map[string]string{"duration": "1s", "int": "1", "int64": "1", "uint": "1", "uint64": "1", "float64": "1"}

// fillPlaceholders replaces a placeholder given as the value of a typed flag
// by a valid value of that type, and drops a bare "…" that is no flag's
// value: it elides further flags. Literal values are left as written, and
// so are unknown flags, for ParseFlags to reject.
func fillPlaceholders(fs *pflag.FlagSet, args []string) []string {
	out := append([]string(nil), args...)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if a == "--" {
			break
		}
		if a == "…" || a == "..." {
			out = append(out[:i], out[i+1:]...)
			i--
			continue
		}
		var f *pflag.Flag
		switch {
		case strings.HasPrefix(a, "--"):
			name, value, hasValue := strings.Cut(a[2:], "=")
			if f = fs.Lookup(name); f != nil && hasValue {
				if v, ok := placeholderValues[f.Value.Type()]; ok && placeholder.MatchString(value) {
					out[i] = "--" + name + "=" + v
				}
				continue
			}
		case strings.HasPrefix(a, "-") && len(a) == 2:
			f = fs.ShorthandLookup(a[1:])
		}
		if f == nil || f.NoOptDefVal != "" || i+1 >= len(out) {
			continue
		}
		i++ // the flag's value
		if v, ok := placeholderValues[f.Value.Type()]; ok && placeholder.MatchString(out[i]) {
			out[i] = v
		}
	}
	return out
}

var fence = regexp.MustCompile("^\\s*```")

// inlineCode matches a code span on one line.
var inlineCode = regexp.MustCompile("`([^`]+)`")

// documentedCommands returns the drwatch invocations in a Markdown
// document: every simple command whose program is drwatch in fenced code
// (with continuation lines joined and comments dropped), and every inline
// code span that starts with "drwatch ". A synopsis's optional part,
// "[--until 2h]", yields the command with and without it.
func documentedCommands(file, doc string) []docCommand {
	var out []docCommand
	lines := strings.Split(doc, "\n")
	inFence := false
	for i := 0; i < len(lines); i++ {
		line, start := lines[i], i+1
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if !inFence {
			for _, m := range inlineCode.FindAllStringSubmatch(line, -1) {
				if strings.HasPrefix(m[1], "drwatch ") {
					for _, words := range simpleCommands(m[1]) {
						out = append(out, drwatchCommands(file, start, m[1], words)...)
					}
				}
			}
			continue
		}
		for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, "\\") + " " + lines[i]
		}
		for _, words := range simpleCommands(line) {
			out = append(out, drwatchCommands(file, start, strings.TrimSpace(line), words)...)
		}
	}
	return out
}

// drwatchCommands returns words as drwatch commands if its program is
// drwatch (after variable assignments and shell keywords), expanding the
// synopsis's optional parts.
func drwatchCommands(file string, line int, text string, words []string) []docCommand {
	for len(words) > 0 && (strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") ||
		words[0] == "do" || words[0] == "then" || words[0] == "else" || words[0] == "sudo" || words[0] == "exec") {
		words = words[1:]
	}
	if len(words) == 0 || path.Base(words[0]) != "drwatch" {
		return nil
	}
	var out []docCommand
	for _, args := range expandOptional(words[1:]) {
		out = append(out, docCommand{file: file, line: line, text: text, args: args})
	}
	return out
}

// expandOptional turns "history [-o json]" into "history" and
// "history -o json".
func expandOptional(words []string) [][]string {
	for i, w := range words {
		if !strings.HasPrefix(w, "[") {
			continue
		}
		end := i
		for end < len(words) && !strings.HasSuffix(words[end], "]") {
			end++
		}
		if end == len(words) {
			return [][]string{words} // not a synopsis bracket: leave it to the parser
		}
		inner := append([]string(nil), words[i:end+1]...)
		inner[0] = strings.TrimPrefix(inner[0], "[")
		inner[len(inner)-1] = strings.TrimSuffix(inner[len(inner)-1], "]")
		head, tail := words[:i:i], words[end+1:]
		var out [][]string
		for _, t := range expandOptional(tail) {
			out = append(out, append(append([]string(nil), head...), t...))
			out = append(out, append(append(append([]string(nil), head...), inner...), t...))
		}
		return out
	}
	return [][]string{words}
}

// simpleCommands splits a line of shell into its simple commands' words:
// quotes are removed, ';', '|', '&', '(', ')' and a backquote end a command,
// a redirection ends its words, and an unquoted '#' starts a comment.
func simpleCommands(line string) [][]string {
	var (
		out      [][]string
		words    []string
		word     strings.Builder
		inWord   bool
		redirect bool
		quote    rune
		endWord  = func() {
			if inWord && !redirect {
				words = append(words, word.String())
			}
			word.Reset()
			inWord = false
		}
		endCommand = func() {
			endWord()
			if len(words) > 0 {
				out = append(out, words)
			}
			words, redirect = nil, false
		}
	)
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				word.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			endWord()
		case r == '#' && !inWord:
			endCommand()
			return out
		case strings.ContainsRune(";|&()`", r):
			endCommand()
		case r == '>' || r == '<':
			if inWord && strings.Trim(word.String(), "0123456789") == "" {
				word.Reset() // the file descriptor of 2>&1, not an argument
				inWord = false
			}
			endWord()
			redirect = true
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	endCommand()
	return out
}
