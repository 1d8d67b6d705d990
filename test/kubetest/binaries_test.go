package kubetest

import (
	"errors"
	"strings"
	"testing"
)

// A missing binary is an error naming make install-test-deps and the
// script that builds it, never a reason to skip: the tests that need it
// then fail saying how to get it.
func TestMissingBinariesNameHowToBuildThem(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	for _, env := range []string{"DRWATCH_KUBE_APISERVER", "DRWATCH_KUBE_CONTROLLER_MANAGER", "DRWATCH_KUBE_SCHEDULER", "DRWATCH_KWOK"} {
		t.Setenv(env, "")
	}
	kwok := func(string) (string, error) { bin, _, err := KwokPath(); return bin, err }
	for _, tc := range []struct {
		name  string
		path  func(string) (string, error)
		build string
	}{
		{"kube-apiserver", BinaryPath, "test/deps/build-kube.sh kube-apiserver"},
		{"kube-controller-manager", ControllerManagerPath, "test/deps/build-kube.sh kube-controller-manager"},
		{"kube-scheduler", SchedulerPath, "test/deps/build-kube.sh kube-scheduler"},
		{"kwok", kwok, "test/deps/build-kwok.sh"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.path(DefaultVersion)
			if !errors.Is(err, ErrNoBinary) {
				t.Fatalf("got %q, %v; want ErrNoBinary", p, err)
			}
			for _, want := range []string{"make install-test-deps", tc.build} {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("got %q, want it to name %q", err, want)
				}
			}
		})
	}
}
