#!/usr/bin/env bash
# Every test of the project, from a fresh clone: installs what it needs, then lint, fuzz smoke,
# examples and all test suites, then each language binding's own script (scripts/test-LANG.sh:
# installs what that language needs, builds the package the way a user does, runs its tests and
# its runners of the shared scenarios). FUZZ_SECONDS sets the fuzzing time per target (default 20).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
bash scripts/setup.sh

echo "== format and lints"
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet

echo "== fuzz smoke (${FUZZ_SECONDS:-20}s per target)"
bash scripts/fuzz.sh "${FUZZ_SECONDS:-20}"

echo "== examples"
for example in core/examples/*.rs; do
  cargo run --quiet -p statestore --example "$(basename "$example" .rs)" >/dev/null
done

echo "== tests"
cargo test --workspace --doc
# nextest: one process per test, each killed after 2 minutes if it hangs (.config/nextest.toml).
cargo nextest run --workspace --no-tests=fail

# The bindings, each timed so the README can say what every part costs.
for lang in c python node; do
  if [ -f "scripts/test-$lang.sh" ]; then
    echo "== $lang binding"
    start=$SECONDS
    bash "scripts/test-$lang.sh"
    echo "== $lang binding: $((SECONDS - start)) s"
  fi
done
