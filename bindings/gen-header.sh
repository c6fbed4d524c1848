#!/usr/bin/env bash
# Regenerates include/statestore.h from the bindings/ crate with the pinned cbindgen (0.29),
# its STATESTORE_VERSION* macros from the workspace version (root Cargo.toml).
# Usage: bash bindings/gen-header.sh [OUTPUT]     (default include/statestore.h)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-include/statestore.h}"
if ! cbindgen --version 2>/dev/null | grep -q '^cbindgen 0\.29\.'; then
  echo "cbindgen 0.29 is needed: cargo install cbindgen --version '~0.29' --locked" >&2
  exit 1
fi
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
if ! [[ "$version" =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)([-+].*)?$ ]]; then
  echo "gen-header.sh: no MAJOR.MINOR.PATCH version in Cargo.toml: '$version'" >&2
  exit 1
fi
config="$(mktemp)"
trap 'rm -f "$config"' EXIT
sed -e "s/@VERSION@/$version/g" -e "s/@VERSION_MAJOR@/${BASH_REMATCH[1]}/g" \
  -e "s/@VERSION_MINOR@/${BASH_REMATCH[2]}/g" -e "s/@VERSION_PATCH@/${BASH_REMATCH[3]}/g" \
  bindings/cbindgen.toml >"$config"
cbindgen --quiet --config "$config" --crate statestore-c --output "$out" bindings
