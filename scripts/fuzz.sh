#!/usr/bin/env bash
# Runs every fuzz target for a bounded time (seconds per target, default 20) on the stable
# toolchain (`--sanitizer none`), starting from the committed seeds, two targets at a time (a
# libFuzzer run uses one core). A crash fails the run and leaves the input in
# fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
cargo fuzz build --sanitizer none

fuzz_one() {
  local target="$1" seconds="$2" scratch
  scratch="$(mktemp -d)" # libFuzzer writes new inputs to the first corpus dir: keep seeds clean
  if ! cargo fuzz run --sanitizer none "$target" "$scratch" "fuzz/seeds/$target" -- \
    -max_total_time="$seconds" -dict=fuzz/resp.dict >"$scratch.log" 2>&1; then
    grep -v '^ *[0-9]*: \|^ *at ' "$scratch.log" | tail -40
    echo "fuzz: $target FAILED" >&2
    return 1
  fi
  echo "fuzz: $target for ${seconds}s: $(grep -E '^Done' "$scratch.log")"
  rm -rf "$scratch" "$scratch.log"
}
export -f fuzz_one
cargo fuzz list | xargs -P 2 -I{} bash -c 'fuzz_one "$1" "$2"' _ {} "$seconds"
