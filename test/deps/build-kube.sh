#!/usr/bin/env bash
# Builds real Kubernetes control-plane binaries from the Go module proxy alone
# (no git clone, no staging tree) and caches them, so the kubernetes
# integration tests (test/kubetest) can run a real kube-apiserver against
# Debian's etcd, and a real kube-controller-manager and kube-scheduler against
# that API server. All three come from one release: the controllers and the
# scheduler must match the API server.
#
# Usage: test/deps/build-kube.sh                       (builds all three, then a no-op)
#        test/deps/build-kube.sh kube-apiserver        (only the commands named)
#        KUBE_VERSION=v1.34.4 test/deps/build-kube.sh
# Output: ${XDG_CACHE_HOME:-$HOME/.cache}/drwatch/<command>-$KUBE_VERSION/<command>
#
# Why it is done this way:
#  * k8s.io/kubernetes' go.mod replaces every k8s.io/* staging module with
#    ./staging/src/k8s.io/*, which the module zip does not contain; we point
#    those replaces at the published staging modules of the same release
#    (kubernetes v1.X.Y ships staging modules as v0.X.Y).
#  * the module zip carries go.work and vendor/modules.txt, both pointing at
#    the missing tree: delete them and build with -mod=mod.
#  * the checksum database does not know several k8s.io/* versions through
#    this proxy: GONOSUMDB=k8s.io.
#  * the proxy does not serve every staging module of every release. The
#    release is chosen so that everything kube-apiserver,
#    kube-controller-manager and kube-scheduler import is served (v1.31.x lacks
#    kube-controller-manager and csi-translation-lib); the modules in
#    KUBE_UNSERVED are imported by none of them, so their require and replace
#    lines are dropped. Every other staging module is checked first, so a
#    release that cannot work fails here naming the module, not deep inside
#    go build, and no module is ever resolved at another version.
# Building all three takes 10-20 minutes on 2 idle cores (78 minutes measured
# for the first two at a load average near 25) and about 2 GB of module cache;
# kube-scheduler alone, once Go's build cache holds the other two, took 10 s.
set -euo pipefail
KUBE_VERSION=${KUBE_VERSION:-v1.34.4}
KUBE_UNSERVED=${KUBE_UNSERVED:-sample-cli-plugin sample-controller}
cmds=("$@")
[ ${#cmds[@]} -gt 0 ] || cmds=(kube-apiserver kube-controller-manager kube-scheduler)
staging=v0.${KUBE_VERSION#v1.}
root=${XDG_CACHE_HOME:-$HOME/.cache}/drwatch
todo=()
for c in "${cmds[@]}"; do
  case $c in
  kube-apiserver | kube-controller-manager | kube-scheduler) ;;
  *) echo "build-kube: unknown command $c (kube-apiserver, kube-controller-manager, kube-scheduler)" >&2; exit 2 ;;
  esac
  bin=$root/$c-$KUBE_VERSION/$c
  if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then
    echo "$c $KUBE_VERSION already built: $bin"
  else
    todo+=("$c")
  fi
done
[ ${#todo[@]} -gt 0 ] || exit 0
export GONOSUMDB=k8s.io GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0
mkdir -p "$root"
work=$(mktemp -d "$root/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
src=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
[ -n "$src" ] || { echo "build-kube: k8s.io/kubernetes@$KUBE_VERSION not downloadable" >&2; exit 1; }
cp -r "$src" "$work/src"
chmod -R u+w "$work/src"
cd "$work/src"
rm -rf go.work go.work.sum vendor
for m in $(sed -n -E 's#^\s*(k8s\.io/[a-z0-9-]+) => \./staging/.*#\1#p' go.mod); do
  case " $KUBE_UNSERVED " in *" ${m#k8s.io/} "*) continue ;; esac
  if ! go mod download "$m@$staging" 2>"$work/download.err"; then
    echo "build-kube: $m@$staging is not served by the module proxy ($(tail -1 "$work/download.err")); pick another KUBE_VERSION" >&2
    exit 1
  fi
done
sed -i -E "s#^(\s*)(k8s\.io/[a-z0-9-]+) => \./staging/src/k8s\.io/[a-z0-9-]+\$#\1\2 => \2 $staging#" go.mod
for m in $KUBE_UNSERVED; do
  sed -i -E "/^\s*k8s\.io\/$m( |\$)/d" go.mod
done
major=${KUBE_VERSION#v}; major=${major%%.*}
minor=${KUBE_VERSION#v*.}; minor=${minor%%.*}
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
pkgs=()
for c in "${todo[@]}"; do pkgs+=("./cmd/$c"); done
mkdir "$work/bin"
go build -trimpath -ldflags "$ldflags" -o "$work/bin/" "${pkgs[@]}"
for c in "${todo[@]}"; do
  "$work/bin/$c" --version
  mkdir -p "$root/$c-$KUBE_VERSION"
  # rename is atomic: a concurrent reader sees either no binary or a whole one.
  mv "$work/bin/$c" "$root/$c-$KUBE_VERSION/$c"
  echo "built $root/$c-$KUBE_VERSION/$c"
done
