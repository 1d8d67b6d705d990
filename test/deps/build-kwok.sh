#!/usr/bin/env bash
# Builds KWOK's kwok command (simulated kubelets: node registration status,
# node leases and heartbeats, pod status; sigs.k8s.io/kwok) from the Go module
# proxy at a pinned version and caches it, so test/kubetest can run it beside
# the real kube-apiserver, controller manager and scheduler.
#
# Usage: test/deps/build-kwok.sh                 (builds it, then a no-op)
#        KWOK_VERSION=v0.8.0 test/deps/build-kwok.sh
# Output: ${XDG_CACHE_HOME:-$HOME/.cache}/drwatch/kwok-$KWOK_VERSION/{kwok,stages.yaml}
#
# Why it is done this way:
#  * sigs.k8s.io/kwok's go.mod has no replace directives, so `go install
#    module@version` builds it as released, with the dependency versions its
#    own go.mod pins; nothing of drwatch's module graph is involved.
#  * consts.Version is the version KWOK reports in the nodes' nodeInfo; the
#    release sets it by ldflags, as here.
#  * kwok itself carries no stages (what it does to nodes and pods, and
#    when); kwokctl writes its defaults from the module's kustomize/stage.
#    The same default stages are copied, at the same version, into
#    stages.yaml beside the binary: node-initialize, node heartbeats with
#    leases, and the fast pod stages (ready, complete, delete).
# Keep KWOK_VERSION in step with test/kubetest.KwokVersion and
# test/deps/parts/kwok.sh.
set -euo pipefail
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
root=${XDG_CACHE_HOME:-$HOME/.cache}/drwatch
dir=$root/kwok-$KWOK_VERSION
bin=$dir/kwok
if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1 && [ -s "$dir/stages.yaml" ]; then
  echo "kwok $KWOK_VERSION already built: $bin"
  exit 0
fi
export GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=mod
mkdir -p "$root"
work=$(mktemp -d "$root/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
GOBIN=$work go install -trimpath \
  -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v}" \
  "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
"$work/kwok" --version
src=$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
[ -n "$src" ] || { echo "build-kwok: sigs.k8s.io/kwok@$KWOK_VERSION not downloadable" >&2; exit 1; }
stage=$src/kustomize/stage
for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
  pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
  echo "---"
  cat "$stage/$f"
done >"$work/stages.yaml"
mkdir -p "$dir"
mv "$work/stages.yaml" "$dir/stages.yaml"
# rename is atomic: a concurrent reader sees either no binary or a whole one.
mv "$work/kwok" "$bin"
echo "built $bin"
