package kubetest

import (
	"os"
	"path/filepath"
	"testing"
)

// UnreachableKubeconfig writes, in a directory of t's, a kubeconfig of a
// cluster at an address where nothing listens, and returns its path: for
// tests that build clients (which contact nothing) without a cluster.
func UnreachableKubeconfig(t testing.TB) string {
	t.Helper()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: p, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: not-a-real-token}}]
contexts: [{name: p, context: {cluster: p, user: u}}]
current-context: p
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return kc
}
