#!/usr/bin/env bash
# Regenerates include/statestore.h from the bindings/ crate with the pinned cbindgen (0.29).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! cbindgen --version 2>/dev/null | grep -q '^cbindgen 0\.29\.'; then
  echo "cbindgen 0.29 is needed: cargo install cbindgen --version '~0.29' --locked" >&2
  exit 1
fi
cbindgen --quiet --config bindings/cbindgen.toml --crate statestore-c --output include/statestore.h bindings
