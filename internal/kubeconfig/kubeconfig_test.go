package kubeconfig

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/drwatch/drwatch/internal/regularfile"
)

const kubeconfigText = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://203.0.113.20:6443", certificate-authority: ca.crt}
users:
- name: u
  user: {token: s3cr3t-kube-token}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`

// A kubeconfig is read through regularfile: a FIFO or a device is refused
// by the field's name, and relative paths inside resolve against the
// file's directory.
func TestRESTConfigReadsOnlyRegularFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(good, []byte(kubeconfigText), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("ca"), 0o600); err != nil {
		t.Fatal(err)
	}
	rc, err := RESTConfig("kubeconfig_file", good, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != "https://203.0.113.20:6443" || rc.BearerToken != "s3cr3t-kube-token" || rc.TLSClientConfig.CAFile != filepath.Join(dir, "ca.crt") {
		t.Errorf("got host %q, ca %q, want the file's server and its CA beside it", rc.Host, rc.TLSClientConfig.CAFile)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, "/dev/zero"} {
		_, err := RESTConfig("kubeconfig_file", p, nil)
		if !errors.Is(err, regularfile.ErrNotRegular) || !strings.HasPrefix(err.Error(), "kubeconfig_file: ") || strings.Contains(err.Error(), p) {
			t.Errorf("%s: got %v, want a refusal naming the field and not the path", p, err)
		}
	}
}

// A file that does not decode is refused without the decoder's message,
// which would quote the content.
func TestRESTConfigNeverQuotesTheContent(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(bad, []byte("clusters: s3cr3t-kube-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := RESTConfig("kubeconfig_file", bad, nil)
	if !errors.Is(err, ErrNotKubeconfig) || strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), bad) {
		t.Errorf("got %v, want ErrNotKubeconfig without the content or the path", err)
	}
}
