#!/usr/bin/env bash
# The Python artefacts in dist/: the client wheel (mqtt-statestore, import statestore) and the
# testing extra's wheel (mqtt-statestore-testing: the local state store statestore.testing
# runs), each abi3 for CPython >= 3.9 and manylinux2014 (glibc 2.17) on x86_64, built by maturin
# with zig as the linker and checked by auditwheel; and both source distributions, which build
# wherever no wheel fits (with a Rust toolchain).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/package-tools.sh
export CARGO_TERM_COLOR=never
mkdir -p dist
rm -f dist/mqtt_statestore-*.whl dist/mqtt_statestore_testing-*.whl dist/mqtt_statestore-*.tar.gz \
  dist/mqtt_statestore_testing-*.tar.gz

# Each wheel's module built with the other artefacts of its set (release_build), linked by zig.
for project in python python/testing; do
  case "$project" in python) set=client ;; *) set=testing ;; esac
  (release_build "$set" x86_64-unknown-linux-gnu
   timeout 1800 maturin build --quiet --release --compatibility manylinux2014 \
     --target x86_64-unknown-linux-gnu --interpreter "$PKG_PY" -m "$project/Cargo.toml" --out dist)
  timeout 300 maturin sdist -m "$project/Cargo.toml" --out dist
done

for wheel in dist/mqtt_statestore-"$VERSION"-*.whl dist/mqtt_statestore_testing-"$VERSION"-*.whl; do
  case "$wheel" in *-cp39-abi3-*manylinux_2_17_x86_64*.whl) ;;
    *) echo "unexpected wheel tag: $wheel" >&2; exit 1 ;; esac
  policy="$("$PKG_BIN/auditwheel" show "$wheel" | tr -s ' \n' ' ')"
  echo "$policy"
  grep -q 'consistent with the following platform tag: "manylinux_2_17_x86_64"' <<<"$policy" \
    || { echo "$wheel: not manylinux_2_17 by auditwheel" >&2; exit 1; }
done

# What ships is the client: its module holds no broker and no server.
check="$(mktemp -d)"
trap 'rm -rf "$check"' EXIT
"$PKG_PY" -m zipfile -e dist/mqtt_statestore-"$VERSION"-*.whl "$check/client"
bash scripts/lib/check-client-only.sh "$check"/client/statestore/_native*.so
# ... and the check sees a server where there is one: the testing wheel's module.
"$PKG_PY" -m zipfile -e dist/mqtt_statestore_testing-"$VERSION"-*.whl "$check/testing"
if bash scripts/lib/check-client-only.sh "$check"/testing/statestore_testing/*.so >/dev/null 2>&1; then
  echo "check-client-only.sh did not see the server in the testing module" >&2; exit 1
fi
