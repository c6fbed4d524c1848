#!/usr/bin/env bash
# Builds libstatestore (release) and installs it for C and C++ users:
#   PREFIX/lib/libstatestore.so.VERSION (+ .so.0, .so links), PREFIX/lib/libstatestore.a,
#   PREFIX/include/statestore.h, PREFIX/include/statestore.hpp,
#   PREFIX/lib/pkgconfig/statestore.pc (and statestore-static.pc),
#   PREFIX/lib/cmake/statestore/statestore-config.cmake (+ version file).
# Usage: bash scripts/install-c.sh [PREFIX]     (default /usr/local; DESTDIR is honoured)
# The layout is scripts/lib/c-layout.sh's, shared with the prebuilt packages (package-c.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/c-layout.sh
prefix="${1:-/usr/local}"
case "$prefix" in /*) ;; *) prefix="$PWD/$prefix" ;; esac
dest="${DESTDIR:-}$prefix"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"

cargo build --release --quiet -p statestore-c
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
out="$target_dir/release"

c_layout "$dest" lib "$prefix" "$out/libstatestore.so" "$out/libstatestore.a" "$version"
if [ -z "${DESTDIR:-}" ] && [ "$prefix" = /usr/local ] && command -v ldconfig >/dev/null; then
  ldconfig 2>/dev/null || true
fi
echo "installed libstatestore $version into $dest"
