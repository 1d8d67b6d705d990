#!/bin/sh
# Prints the Debian package version for the version `make build` stamps
# (git describe --tags --always --dirty): a tag (v1.2.3, v1.2.3-4-gHASH)
# without its v; otherwise 0~COMMITTIME+gHASH, which sorts below any tagged
# release and in commit order. Every '-' becomes '+': a '-' would start a
# Debian revision, which a package built from this tree does not have.
set -eu
v=${1#v}
case "$v" in
[0-9]*.*) ;;
*) v="0~$(git log -1 --format=%cd --date=format:%Y%m%d%H%M%S 2>/dev/null || echo 0)+g$v" ;;
esac
echo "$v" | tr - +
