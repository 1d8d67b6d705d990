#!/usr/bin/env bash
# Builds a real kube-apiserver from the Go module proxy alone (no git clone, no
# staging tree) and caches the binary, so the kubernetes integration tests
# (test/kubetest) can run a real API server against Debian's etcd.
#
# Usage: test/deps/build-kube-apiserver.sh            (builds once, then a no-op)
#        KUBE_VERSION=v1.31.14 test/deps/build-kube-apiserver.sh
# Output: ${XDG_CACHE_HOME:-$HOME/.cache}/drwatch/kube-apiserver-$KUBE_VERSION/kube-apiserver
#
# Why it is done this way:
#  * k8s.io/kubernetes' go.mod replaces every k8s.io/* staging module with
#    ./staging/src/k8s.io/*, which the module zip does not contain; we point
#    those replaces at the published staging modules of the same release
#    (kubernetes v1.X.Y ships staging modules as v0.X.Y).
#  * the module zip carries go.work and vendor/modules.txt, both pointing at
#    the missing tree: delete them and build with -mod=mod.
#  * the checksum database does not know several k8s.io/* v0.31 versions
#    through this proxy: GONOSUMDB=k8s.io.
#  * a handful of staging modules are not served at all; kube-apiserver does
#    not import them, so their require and replace lines are dropped.
# The build takes 3-7 minutes on 2 cores and about 1.5 GB of module cache.
set -euo pipefail
KUBE_VERSION=${KUBE_VERSION:-v1.31.14}
staging=v0.${KUBE_VERSION#v1.}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/drwatch/kube-apiserver-$KUBE_VERSION
out=$cache/kube-apiserver
if [ -x "$out" ] && "$out" --version >/dev/null 2>&1; then
  echo "kube-apiserver $KUBE_VERSION already built: $out"
  exit 0
fi
unserved="cri-client csi-translation-lib endpointslice kube-controller-manager kube-proxy kube-scheduler sample-apiserver sample-cli-plugin sample-controller"
export GONOSUMDB=k8s.io GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0
mkdir -p "$cache"
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
src=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
[ -n "$src" ] || { echo "build-kube-apiserver: k8s.io/kubernetes@$KUBE_VERSION not downloadable" >&2; exit 1; }
cp -r "$src" "$work/src"
chmod -R u+w "$work/src"
cd "$work/src"
rm -rf go.work go.work.sum vendor
sed -i -E "s#^(\s*)(k8s\.io/[a-z0-9-]+) => \./staging/src/k8s\.io/[a-z0-9-]+\$#\1\2 => \2 $staging#" go.mod
for m in $unserved; do
  sed -i -E "/^\s*k8s\.io\/$m( |\$)/d" go.mod
done
major=${KUBE_VERSION#v}; major=${major%%.*}
minor=${KUBE_VERSION#v*.}; minor=${minor%%.*}
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
go build -trimpath -ldflags "$ldflags" -o "$work/kube-apiserver" ./cmd/kube-apiserver
"$work/kube-apiserver" --version
# rename is atomic: a concurrent reader sees either no binary or a whole one.
mv "$work/kube-apiserver" "$out"
echo "built $out"
