#!/usr/bin/env bash
# Runs every fuzz target for a bounded time (seconds per target, default 20) on the stable
# toolchain (`--sanitizer none`), starting from the committed seeds. A crash fails the run and
# leaves the input in fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
cargo fuzz build --sanitizer none
for target in $(cargo fuzz list); do
  scratch="$(mktemp -d)" # libFuzzer writes new inputs to the first corpus dir: keep seeds clean
  echo "fuzz: $target for ${seconds}s"
  if ! cargo fuzz run --sanitizer none "$target" "$scratch" "fuzz/seeds/$target" -- \
    -max_total_time="$seconds" -dict=fuzz/resp.dict >"$scratch.log" 2>&1; then
    grep -v '^ *[0-9]*: \|^ *at ' "$scratch.log" | tail -40
    echo "fuzz: $target FAILED" >&2
    exit 1
  fi
  grep -E '^Done' "$scratch.log"
  rm -rf "$scratch" "$scratch.log"
done
