# KWOK's kwok (simulated kubelets) for test/kubetest, built once from the Go
# module proxy into ${XDG_CACHE_HOME:-$HOME/.cache}/drwatch/kwok-$KWOK_VERSION
# (2-7 minutes on 2 cores, then cached). Keep KWOK_VERSION in step with
# test/kubetest.KwokVersion and test/deps/build-kwok.sh.
_kwok_deps=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
present() {
  local dir=${XDG_CACHE_HOME:-$HOME/.cache}/drwatch/kwok-${KWOK_VERSION:-v0.8.0}
  [ -x "$dir/kwok" ] && "$dir/kwok" --version >/dev/null 2>&1 && [ -s "$dir/stages.yaml" ]
}
install() {
  command -v go >/dev/null 2>&1 || { echo "kwok: go not in PATH" >&2; return 1; }
  bash "$_kwok_deps/build-kwok.sh"
}
