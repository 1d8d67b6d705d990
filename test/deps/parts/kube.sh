# A real kube-apiserver, kube-controller-manager and kube-scheduler of one
# release for test/kubetest, built once from the Go module proxy into
# ${XDG_CACHE_HOME:-$HOME/.cache}/drwatch/<command>-$KUBE_VERSION
# (10-20 minutes on 2 idle cores for all three, then cached; a missing one
# alone is built in seconds while Go's build cache still holds the others). Keep KUBE_VERSION in step with
# test/kubetest.DefaultVersion and test/deps/build-kube.sh.
_kube_deps=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
present() {
  local v=${KUBE_VERSION:-v1.34.4} c bin
  for c in kube-apiserver kube-controller-manager kube-scheduler; do
    bin=${XDG_CACHE_HOME:-$HOME/.cache}/drwatch/$c-$v/$c
    [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1 || return 1
  done
}
install() {
  command -v go >/dev/null 2>&1 || { echo "kube: go not in PATH" >&2; return 1; }
  bash "$_kube_deps/build-kube.sh" kube-apiserver kube-controller-manager kube-scheduler
}
