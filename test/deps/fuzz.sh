#!/usr/bin/env bash
# Runs every Fuzz target briefly. FUZZTIME overrides the per-target budget.
set -euo pipefail
cd "$(dirname "$0")/../.."
t=${FUZZTIME:-20s}
for pkg in $(go list ./...); do
  for f in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
    echo "== $pkg $f"
    go test -run '^$' -fuzz "^$f\$" -fuzztime "$t" "$pkg"
  done
done
