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

// A cluster of remediations.kubernetes connects through the context it
// names, else the file's current one, with a bound on each call; without a
// file it is refused by the field's name. Look-alike: the zero context
// keeps the current one.
func TestClusterRESTConfigUsesItsContext(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kubeconfig")
	// kubeconfigText with a second context, on a second server.
	two := strings.NewReplacer(
		"clusters:\n", "clusters:\n- name: d\n  cluster: {server: \"https://203.0.113.21:6443\"}\n",
		"contexts:\n", "contexts:\n- name: other\n  context: {cluster: d, user: u}\n",
	).Replace(kubeconfigText)
	for name, b := range map[string]string{path: two, filepath.Join(dir, "ca.crt"): "ca"} {
		if err := os.WriteFile(name, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ context, host string }{
		{"", "https://203.0.113.20:6443"},
		{"other", "https://203.0.113.21:6443"},
	} {
		rc, err := Cluster{Kubeconfig: path, Context: tc.context}.RESTConfig()
		if err != nil {
			t.Fatalf("context %q: %v", tc.context, err)
		}
		if rc.Host != tc.host || rc.Timeout <= 0 {
			t.Errorf("context %q: got host %q, timeout %v, want %q and a bound", tc.context, rc.Host, rc.Timeout, tc.host)
		}
	}
	if _, err := (Cluster{}).RESTConfig(); err == nil || !strings.HasPrefix(err.Error(), "kubeconfig_file ") {
		t.Errorf("no file: got %v, want a refusal naming kubeconfig_file", err)
	}
}
