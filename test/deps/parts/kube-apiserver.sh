# A real kube-apiserver for test/kubetest, built once from the Go module proxy
# into ${XDG_CACHE_HOME:-$HOME/.cache}/drwatch/kube-apiserver-$KUBE_VERSION
# (3-7 minutes, then cached). Keep KUBE_VERSION in step with
# test/kubetest.DefaultVersion.
_kube_apiserver_deps=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
present() {
  local v=${KUBE_VERSION:-v1.31.14}
  local bin=${XDG_CACHE_HOME:-$HOME/.cache}/drwatch/kube-apiserver-$v/kube-apiserver
  [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1
}
install() {
  command -v go >/dev/null 2>&1 || { echo "kube-apiserver: go not in PATH" >&2; return 1; }
  bash "$_kube_apiserver_deps/build-kube-apiserver.sh"
}
