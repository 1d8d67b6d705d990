package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

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
