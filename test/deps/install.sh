#!/usr/bin/env bash
# Installs the real servers the integration tests need. Each part lives in
# test/deps/parts/NAME.sh and defines two functions:
#   present  -- exit 0 when the part is already usable
#   install  -- install it (apt-get, or a build that is cached)
# Run as root this installs whatever is missing; run as another user it only
# reports what is missing (the tests themselves then fail naming the package).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
updated=0
apt_install() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-test-deps: not root; cannot install: $*" >&2
    return 1
  fi
  if [ "$updated" -eq 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 update -qq >/dev/null
    updated=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "$@" >/dev/null
}
missing=0
for part in "$here"/parts/*.sh; do
  [ -e "$part" ] || continue
  name=$(basename "$part" .sh)
  unset -f present install
  # shellcheck source=/dev/null
  source "$part"
  if present; then
    continue
  fi
  echo "install-test-deps: installing $name"
  if ! install; then
    echo "install-test-deps: could not install $name" >&2
    missing=1
  fi
  if ! present; then
    echo "install-test-deps: $name still missing after install" >&2
    missing=1
  fi
done
if [ "$missing" -ne 0 ] && [ "$(id -u)" -eq 0 ]; then
  exit 1
fi
exit 0
