package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// pastedSecrets are secrets in shapes the "looks like a secret" guess
// missed: several lines, spaces, braces, slashes. Each holds a distinctive
// marker that must never be printed.
var pastedSecrets = map[string]string{
	"PEM key":                "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC0pemMarker\n-----END PRIVATE KEY-----",
	"BIND key clause":        `key "drwatch." { algorithm hmac-sha256; secret "bindMarkerK2xU8s1P5d0="; };`,
	"passphrase with spaces": "correct horse battery passMarker",
	"path-like token":        "aB3/pathMarker+Q9z/x",
	"blanks around a path":   " /etc/drwatch/blankMarker ",
}

// yamlQuote writes s as a double-quoted YAML scalar.
func yamlQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// A file field holding anything but an absolute path is refused, with and
// without the file checks, by its field path and without its value; an
// absolute path with a space in it is left alone.
func TestFileFieldRefusesAPastedSecretWithoutPrintingIt(t *testing.T) {
	y := validYAML(t)
	const field = "key_file: /etc/drwatch/tsig.key"
	for name, secret := range pastedSecrets {
		expectSecretRefused(t, name, secret, strings.Replace(y, field, "key_file: "+yamlQuote(secret), 1), "dns.rfc2136.key_file")
	}
	spaced := strings.Replace(y, field, `key_file: "/etc/drwatch/my tsig.key"`, 1)
	if _, err := Parse("f.yaml", []byte(spaced), Options{SkipFileChecks: true}); err != nil {
		t.Errorf("an absolute path with a space: got %v, want it accepted", err)
	}
}

// expectSecretRefused checks that cfg, holding the pasted secret (of
// pastedSecrets, by name) in the file field at path, is refused, with and
// without the file checks, by that path and without the value.
func expectSecretRefused(t *testing.T, name, secret, cfg, path string) {
	t.Helper()
	for _, opts := range []Options{{SkipFileChecks: true}, {}} {
		_, err := Parse("f.yaml", []byte(cfg), opts)
		if err == nil {
			t.Errorf("%s (skip file checks %v): got no problem", name, opts.SkipFileChecks)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, path+": ") || !strings.Contains(msg, valueNotShown) {
			t.Errorf("%s: got %v, want the field path %s and %q", name, msg, path, valueNotShown)
		}
		marker := secret[strings.LastIndex(secret, "Marker")-4:][:10]
		if strings.Contains(msg, marker) {
			t.Errorf("%s: the message holds the value:\n%s", name, msg)
		}
	}
}

// A special file in a file field fails the file checks, naming the field;
// a symbolic link to a regular file passes.
func TestFileFieldRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"ca.crt", "node.crt", "node.key", "tokens", "kube-ca.crt", "kube-token", "tsig.key"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(filepath.Join(dir, "tsig.key"), filepath.Join(dir, "tsig.key.real")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "tsig.key.real"), filepath.Join(dir, "tsig.key")); err != nil {
		t.Fatal(err)
	}
	y := strings.ReplaceAll(validYAML(t), "/etc/drwatch", dir)
	if _, err := Parse("f.yaml", []byte(y), Options{}); err != nil {
		t.Fatalf("regular files, one behind a link: got %v, want none", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for special, want := range map[string]string{
		"/dev/zero":      "a character device, not a regular file",
		"/dev/urandom":   "a character device, not a regular file",
		"/proc/self/mem": "a kernel pseudo file",
		fifo:             "a FIFO, not a regular file",
		dir:              "is a directory",
	} {
		cfg := strings.Replace(y, "key_file: "+dir+"/tsig.key", "key_file: "+special, 1)
		_, err := Parse("f.yaml", []byte(cfg), Options{})
		if err == nil || !strings.Contains(err.Error(), "dns.rfc2136.key_file: "+want) {
			t.Errorf("%s: got %v, want dns.rfc2136.key_file: %s", special, err, want)
		}
	}
}

// The path rule reads through anchors and aliases: an alias of an
// absolute path is a path.
func TestFileFieldAliasOfAPathIsAPath(t *testing.T) {
	y := strings.Replace(validYAML(t), "cert_file: /etc/drwatch/node.crt, key_file: /etc/drwatch/node.key",
		"cert_file: &crt /etc/drwatch/node.crt, key_file: *crt", 1)
	if _, err := Parse("f.yaml", []byte(y), Options{SkipFileChecks: true}); err != nil {
		t.Fatalf("got %v, want the alias accepted", err)
	}
}

// The config file itself is read as a file field's file is: a device or a
// FIFO given as --config is refused at once, not read without end or hung
// on.
func TestConfigFileMustBeRegular(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"/dev/zero": "a character device", fifo: "a FIFO"} {
		if _, err := Load(p, Options{SkipFileChecks: true}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", p, err, want)
		}
	}
}
