#!/usr/bin/env bash
# Runs every Fuzz target for FUZZTIME each (default 20s). A failing target does
# not stop the run: every target gets its time, the failures are listed at the
# end, and the exit status is 1 if any failed. FUZZ_ONLY (a regexp) limits the
# run to the targets whose "package Target" matches it.
set -uo pipefail
cd "$(dirname "$0")/../.."
t=${FUZZTIME:-20s}
only=${FUZZ_ONLY:-.}
failed=()
for pkg in $(go list ./...); do
  for f in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
    echo "$pkg $f" | grep -Eq -- "$only" || continue
    echo "== $pkg $f"
    if ! go test -run '^$' -fuzz "^$f\$" -fuzztime "$t" "$pkg"; then
      failed+=("$pkg $f")
    fi
  done
done
if [ ${#failed[@]} -gt 0 ]; then
  printf 'fuzz: FAILED %s\n' "${failed[@]}"
  exit 1
fi
echo "fuzz: every target passed"
