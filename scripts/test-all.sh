#!/usr/bin/env bash
# Every test of the project, from a fresh clone: installs what it needs, then lint, fuzz smoke,
# examples and all test suites. FUZZ_SECONDS sets the fuzzing time per target (default 20).
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
