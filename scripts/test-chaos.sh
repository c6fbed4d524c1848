#!/usr/bin/env bash
# Issue 17's checks in their short form, for bash .ci/run: the chaos run for about two
# minutes (CHAOS_DURATION overrides), then the hostile-input tests of each binding that is
# built. The closing line is "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
passed=0
failed=0
step() {
  local name="$1"; shift
  echo "== chaos: $name"
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $name"; fi
}

step "checker self-test" cargo test --quiet -p statestore-chaos
step "chaos run (${CHAOS_DURATION:-100s})" bash scripts/chaos.sh "${CHAOS_DURATION:-100s}"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
