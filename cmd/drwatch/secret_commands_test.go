package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/cmd/drwatch/config"
	"github.com/spf13/cobra"
)

// configCommands lists, as their arguments, every command that takes
// --config: walked from the command tree, so that a new one is covered.
// A group that only prints its help is left out (its subcommands are in).
func configCommands() [][]string {
	var out [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		takes := hasFlag(c, "config")
		group := c.HasSubCommands() && c.Name() != "drill"
		if takes && !group {
			out = append(out, path)
		}
		for _, s := range c.Commands() {
			walk(s, append(slices.Clone(path), s.Name()))
		}
	}
	walk(newRootCmd(), nil)
	return out
}

// commandArgs are the arguments a command needs, beyond --config, to get
// as far as reading its config file.
var commandArgs = map[string][]string{
	"ack":            {"--reason", "r", "--yes"},
	"dns set":        {"--site", "backup", "--no-quorum", "--reason", "r", "--yes"},
	"drill":          {"--what-if", "primary-down"},
	"explain":        {"1"},
	"failback":       {"--reason", "r", "--yes"},
	"failover":       {"--reason", "r", "--yes"},
	"members add":    {"d", "--raft-addr", "10.4.0.5:7400", "--reason", "r"},
	"members remove": {"c", "--reason", "r", "--yes"},
	"pause":          {"--reason", "r", "--yes"},
	"resume":         {"--reason", "r", "--yes"},
	"switchover":     {"--reason", "r", "--yes"},
}

// pastedSecretShapes build a secret around its random, distinctive part:
// the shapes the old "looks like a secret" guess missed, and a token.
var pastedSecretShapes = map[string]func(distinct string) string{
	"PEM key": func(d string) string {
		return "-----BEGIN PRIVATE KEY-----\n" + d + "\n-----END PRIVATE KEY-----\n"
	},
	"BIND key clause":        func(d string) string { return `key "drwatch." { algorithm hmac-sha256; secret "` + d + `"; };` },
	"passphrase with spaces": func(d string) string { return "correct horse battery " + d },
	"path-like token":        func(d string) string { return "k8s/" + d + "/x" },
	"token":                  func(d string) string { return "alice:" + d },
}

// A secret pasted into any file field of the configuration, in any shape,
// appears in no output of any command that takes --config, config
// validate with and without --no-file-checks included: each refuses the
// file and names the field. The fields come from the config types.
func TestNoCommandPrintsASecretPastedIntoAFileField(t *testing.T) {
	fields := map[string]string{} // Type.key -> a configuration holding it
	for name := range secretConfigs {
		for _, m := range secretPlaceholder.FindAllStringSubmatch(secretConfigs[name], -1) {
			key := m[1][strings.LastIndex(m[1], ".")+1:]
			if config.IsFileKey(key) {
				if _, ok := fields[m[1]]; !ok || name == "rfc2136" {
					fields[m[1]] = name
				}
			}
		}
	}
	want := map[string]bool{}
	secretBearingFields(reflect.TypeOf(config.Config{}), "", map[reflect.Type]bool{}, want)
	for f := range want {
		if config.IsFileKey(f[strings.LastIndex(f, ".")+1:]) && fields[f] == "" {
			t.Errorf("file field %s is in no test configuration: add it to secretConfigs", f)
		}
	}
	names := make([]string, 0, len(fields))
	for f := range fields {
		names = append(names, f)
	}
	sort.Strings(names)
	shapes := make([]string, 0, len(pastedSecretShapes))
	for s := range pastedSecretShapes {
		shapes = append(shapes, s)
	}
	sort.Strings(shapes)

	cmds := configCommands()
	for _, must := range []string{"config validate", "serve", "remediate plan", "drill", "dns set", "status"} {
		if !slices.ContainsFunc(cmds, func(c []string) bool { return strings.Join(c, " ") == must }) {
			t.Fatalf("test bug: %q is not among the commands that take --config: %q", must, cmds)
		}
	}
	cmds = append(cmds, []string{"config", "validate", "--no-file-checks"})

	files := newSecretConfigFiles(t)
	for fi, field := range names {
		key := field[strings.LastIndex(field, ".")+1:]
		for ci, cmd := range cmds {
			// Every shape in config validate; one shape a command,
			// turning, in the others, so that each shape meets each.
			which := shapes
			if cmd[0] != "config" {
				which = shapes[(fi+ci)%len(shapes):][:1]
			}
			for _, shape := range which {
				raw := make([]byte, 18)
				if _, err := rand.Read(raw); err != nil {
					t.Fatal(err)
				}
				distinct := base64.RawURLEncoding.EncodeToString(raw)
				if shape == "passphrase with spaces" {
					distinct = hex.EncodeToString(raw)
				}
				secret := pastedSecretShapes[shape](distinct)
				quoted, err := json.Marshal(secret) // a JSON string is a YAML one
				if err != nil {
					t.Fatal(err)
				}
				cfg := files.write(files.expand(secretConfigText(fields[field]), field, string(quoted)))
				name := strings.Join(cmd, " ")
				args := append(append(slices.Clone(cmd), commandArgs[name]...), "--config", cfg)
				if newRootCmdHasFlag(cmd, "endpoint") {
					// Never the config's peers: nothing may be reached.
					args = append(args, "--endpoint", "https://127.0.0.1:1")
				}
				out, stderr, code := run(t, args...)
				all := out + stderr
				if code == 0 {
					t.Errorf("%s with a %s in %s: got exit 0, want a refusal:\n%s", name, shape, field, all)
				}
				for _, s := range []string{secret, distinct, strings.TrimSpace(secret)} {
					for _, form := range secretForms(s) {
						if strings.Contains(all, form) {
							t.Errorf("%s with a %s in %s: output holds the secret (as %q):\n%s", name, shape, field, form, all)
						}
					}
				}
				if !strings.Contains(all, key+": ") || !strings.Contains(all, "value not shown") {
					t.Errorf("%s with a %s in %s: output does not name the field and say its value is not shown:\n%s", name, shape, field, all)
				}
			}
		}
	}
}

// newRootCmdHasFlag reports whether the command at path has the flag.
func newRootCmdHasFlag(path []string, flag string) bool {
	c, _, err := newRootCmd().Find(path)
	return err == nil && hasFlag(c, flag)
}

// hasFlag reports whether c takes the flag, its own or inherited.
func hasFlag(c *cobra.Command, flag string) bool {
	return c.Flags().Lookup(flag) != nil || c.PersistentFlags().Lookup(flag) != nil || c.InheritedFlags().Lookup(flag) != nil
}

// secretConfigFiles writes the test configurations of secretConfigs: each
// placeholder becomes a regular file of its own, an environment variable
// that is set, or the pasted secret.
type secretConfigFiles struct {
	t   *testing.T
	dir string
}

func newSecretConfigFiles(t *testing.T) secretConfigFiles {
	t.Setenv("DRWATCH_TEST_API_TOKEN", "x")
	for _, v := range []string{"DRWATCH_CONFIG", "DRWATCH_ENDPOINT", "DRWATCH_CA_FILE", "DRWATCH_CERT_FILE", "DRWATCH_KEY_FILE", "DRWATCH_TOKEN_FILE", "DRWATCH_TOKEN"} {
		t.Setenv(v, "")
	}
	return secretConfigFiles{t: t, dir: t.TempDir()}
}

// expand fills text's placeholders; target's gets value, as written.
func (s secretConfigFiles) expand(text, target, value string) string {
	return os.Expand(text, func(f string) string {
		switch {
		case f == target:
			return value
		case strings.HasSuffix(f, "_env"):
			return "DRWATCH_TEST_API_TOKEN"
		}
		p := filepath.Join(s.dir, strings.ReplaceAll(f, ".", "_"))
		if err := os.WriteFile(p, []byte("x\n"), 0o600); err != nil {
			s.t.Fatal(err)
		}
		return p
	})
}

// write stores text in a new file and returns its path.
func (s secretConfigFiles) write(text string) string {
	f, err := os.CreateTemp(s.dir, "drwatch-*.yaml")
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		s.t.Fatal(err)
	}
	return f.Name()
}
