#!/usr/bin/env bash
# Runs the unit tests of the memory that C programs rely on under Miri, the Rust interpreter
# that reports undefined behaviour (use after free, out-of-bounds or misaligned access,
# aliasing violations, leaks, data races):
#   - core's handle table (`statestore::bindings::HandleTable`),
#   - the C library's Rust side (crate statestore-c): handle tables with type tags, byte,
#     string and token arguments, out-parameters, result structs and their _free functions,
#     callback delivery, options, update buffers.
# Miri cannot run sockets or the library's runtime, so these tests need no network; the one
# test that needs the runtime is skipped under Miri and runs in the ordinary `cargo test`.
#
# Needs a nightly toolchain with the miri and rust-src components (stable has no Miri):
#   rustup toolchain install nightly --component miri,rust-src
# MIRI_TOOLCHAIN picks another toolchain (default: nightly). From an empty target directory
# the run builds every dependency for Miri: about 5 minutes on 2 cores; after that about 20 s.
# Usage: bash scripts/miri.sh        (extra MIRIFLAGS are added to the script's own).
# Ends with "N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."
toolchain="${MIRI_TOOLCHAIN:-nightly}"

if ! RUSTUP_AUTO_INSTALL=0 cargo "+$toolchain" miri --version >/dev/null 2>&1; then
  echo "scripts/miri.sh: 'cargo +$toolchain miri' is not available, so nothing was checked." >&2
  echo "Miri comes only with nightly Rust. Install it with" >&2
  echo "  rustup toolchain install nightly --component miri,rust-src" >&2
  echo "or set MIRI_TOOLCHAIN to an installed nightly toolchain that has the miri component." >&2
  exit 2
fi
echo "== $(cargo "+$toolchain" miri --version)"

# Handles are addresses without provenance: strict provenance makes any integer-to-pointer
# cast an error instead of a warning.
export MIRIFLAGS="-Zmiri-strict-provenance ${MIRIFLAGS:-}"

passed=0
failed=0
# part NAME ARGS...: one `cargo miri test`, with a deadline that allows for the first build.
part() {
  local name="$1" start=$SECONDS
  shift
  echo "== $name"
  if timeout 1800 cargo "+$toolchain" miri test "$@"; then
    passed=$((passed + 1))
    echo "ok   $name ($((SECONDS - start)) s)"
  else
    failed=$((failed + 1))
    echo "FAIL $name ($((SECONDS - start)) s)"
  fi
}
part "core: the handle table" -p statestore --features bindings --lib bindings::handles
part "C library: handles, arguments, results, callbacks" -p statestore-c --lib
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
