#!/usr/bin/env bash
# Every test of the project, from a fresh clone: installs what it needs, then lint, fuzz smoke,
# examples and all test suites, then each language binding's own script (scripts/test-LANG.sh:
# installs what that language needs, builds the package the way a user does, runs its tests and
# its runners of the shared scenarios). FUZZ_SECONDS sets the fuzzing time per target (default 10).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
# Line tables are all that backtraces, sanitizers and valgrind's reports read; full debug info
# would double the debug builds' size on disk and their link time.
export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-line-tables-only}"
# A run from a clean clone builds everything once: incremental caches would only take disk
# (about 3 GB of the run's 10).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
# Each stage's time, printed as it ends and all together at the end (the README quotes them).
timings=()
stage_start=$SECONDS
stage_name=""
stage() {
  if [ -n "$stage_name" ]; then
    timings+=("$stage_name $((SECONDS - stage_start)) s")
    echo "== $stage_name took $((SECONDS - stage_start)) s"
  fi
  stage_name="$1"
  stage_start=$SECONDS
  [ -z "$1" ] || echo "== $1"
}
on_exit() {
  local status=$?
  [ "$status" -eq 0 ] && return
  echo "== failed in stage '$stage_name' after $((SECONDS - stage_start)) s; before it: ${timings[*]} (total $SECONDS s)" >&2
  # A build that runs out of disk or memory can fail with little to say for itself.
  df -h . >&2 || true
  free -m >&2 || true
}
trap on_exit EXIT
stage setup
# The run needs about 9 GB of free disk (it prints what it used at the end); a build that
# runs out of disk fails with little to say.
df -h . | tail -n 1
bash scripts/setup.sh

stage "format and lints"
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
# Every relative link of the Markdown files resolves (file, folder, heading).
python3 scripts/check-links.py
# Every code block of the README and the docs is run (here and by each test-LANG.sh) or
# checked against what CI runs, and the checker fails on broken docs.
python3 scripts/lib/doc-blocks.py check
# The checkers' self-tests (the doc-block checker's; the release build's check that each set of
# artefacts compiles a shared crate once), whose report shows only when one fails.
for selftest in "python3 scripts/lib/doc-blocks.py selftest" "bash scripts/lib/check-shared-build.sh --selftest"; do
  report="$($selftest 2>&1)" || { echo "$report" >&2; echo "$selftest failed" >&2; exit 1; }
done
# tokio must park threads with std's locks: parking_lot's process-wide table crashes forked
# children (third_party/README.md).
tokio_features=$(cargo tree --workspace -e features -i tokio)
if grep -q 'tokio feature "parking_lot"' <<<"$tokio_features"; then
  echo "tokio's parking_lot feature is on (forked children crash): see third_party/README.md" >&2
  grep -A6 'feature "parking_lot"' <<<"$tokio_features" >&2
  exit 1
fi

stage "fuzz smoke (${FUZZ_SECONDS:-10}s per target)"
bash scripts/fuzz.sh "${FUZZ_SECONDS:-10}"

stage "rust tests"
cargo test --workspace --doc
# nextest: one process per test, each killed after 2 minutes if it hangs (.config/nextest.toml).
# Its build compiles the examples too (as `cargo test` does), so they are not built again.
cargo nextest run --workspace --no-tests=fail
stage "examples and the docs' command lines"
# Each example run as a user would, as the test build left it.
for example in core/examples/*.rs; do
  "${CARGO_TARGET_DIR:-target}/debug/examples/$(basename "$example" .rs)" >/dev/null
done
# The docs' command lines of the `statestore` tool, and docs/rust.md's [dependencies], as a
# user runs them: `statestore` is the one the workspace built (as `cargo install --path cli`
# installs it), the state store the lines start has the default port to itself.
source scripts/lib/readme-blocks.sh
prepare() {
  export PATH="${CARGO_TARGET_DIR:-$DOC_ROOT/target}/debug:$PATH"
  # docs/cli.md's lock runs this report job: it writes the fenced key its next line deletes.
  printf '#!/bin/sh\nexec statestore set report done --fencing-token "$STATESTORE_FENCING_TOKEN"\n' >make-report.sh
  chmod +x make-report.sh
}
run_toml() { # a project beside a checkout in ./statestore, with the block's dependencies
  ln -sfn "$DOC_ROOT" statestore
  mkdir -p app-src
  { printf '[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n[[bin]]\nname = "app"\npath = "app-src/main.rs"\n'; cat; } >Cargo.toml
  echo 'fn main() {}' >app-src/main.rs
  # This platform's packages only: another platform's (Windows console crates under clap) need
  # not be in the local cache.
  cargo metadata --offline --format-version 1 --filter-platform "$(rustc -vV | sed -n 's/^host: //p')" >/dev/null
}
run_doc_blocks cli --private-network

# The release artefacts (dist/, scripts/package.sh), then each binding (installs the artefacts
# as a user does, with no Rust toolchain on PATH, runs its tests and its runners of the shared
# scenarios), then the bindings benchmark's smoke run and the short chaos run, which use the
# same artefacts, and the aarch64 artefacts' cross build and smoke test under qemu
# (scripts/test-arm64.sh). Each part is timed, so the README can say what it costs; a missing
# script is a failure.
# The bench part runs the benchmark's smoke profile: it checks that every flavour runs and
# counts (timings come from the benchmark's own runs, never from the test run).
export BENCH_PROFILE="${BENCH_PROFILE:-smoke}"
stage package
rm -rf dist
bash scripts/package.sh
export STATESTORE_DIST_READY=1
# Groups side by side (scripts/lib/groups.sh): the C part runs most of its programs under
# valgrind, on one core, the other parts wait on the network much of the time, and the arm64
# part's cross build fills what the two leave idle. Each group needs only dist/ and its own
# folders; the bench installs its own copies of the packages, and the arm64 part adds its
# artefacts to dist/ (no other part reads them).
# STATESTORE_TEST_ARM64=0 leaves the arm64 group out (a quicker run on a machine without apt).
source scripts/lib/groups.sh
if [ "${STATESTORE_TEST_ARM64:-1}" = 1 ]; then
  stage "c, bench | python, node, chaos | arm64"
  in_groups test "c bench" "python node chaos" "arm64"
else
  stage "c, bench | python, node, chaos"
  in_groups test "c bench" "python node chaos"
fi
timings+=("${GROUP_TIMES[@]}")
stage ""
echo "== timings: ${timings[*]} (total $SECONDS s)"
echo "== disk used by the checkout and its builds: $(du -sh . 2>/dev/null | cut -f1)"
