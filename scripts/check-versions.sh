#!/usr/bin/env bash
# The version lives in one place, the workspace's Cargo.toml; the manifests that cannot read it
# (npm's package.json files, the Python packages' pins on each other) must say the same. Fails
# naming each one that does not. scripts/set-version.sh NEW changes them all.
# Usage: bash scripts/check-versions.sh [ROOT]   (default: this checkout)
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
bad=0
check() { # FILE TEXT: TEXT must occur in FILE
  if ! grep -qF -- "$2" "$1"; then echo "$1: expected $2 (the workspace version is $version)" >&2; bad=1; fi
}
for manifest in node/package.json node/testing/package.json; do
  check "$manifest" "\"version\": \"$version\""
done
check node/package.json "\"mqtt-statestore-linux-x64-gnu\": \"$version\""
check node/package.json "\"mqtt-statestore-linux-arm64-gnu\": \"$version\""
check node/package.json "\"mqtt-statestore-testing\": \"$version\""
check node/testing/package.json "\"mqtt-statestore-testing-linux-x64-gnu\": \"$version\""
check python/pyproject.toml "mqtt-statestore-testing==$version"
check python/testing/pyproject.toml "mqtt-statestore==$version"
# Any other pinned mention of a version in these manifests is a stale one.
if grep -nE '"[0-9]+\.[0-9]+\.[0-9]+"|==[0-9]+\.[0-9]+\.[0-9]+' node/package.json node/testing/package.json \
  python/pyproject.toml python/testing/pyproject.toml | grep -vF -- "$version" >&2; then bad=1; fi
[ "$bad" = 0 ] || exit 1
echo "versions: $version everywhere"
