#!/usr/bin/env bash
# The aarch64 (arm64) release artefacts in dist/, cross-built on this x86_64 machine:
#   Python  mqtt_statestore-V-cp39-abi3-manylinux_2_17_aarch64.whl
#   Node    mqtt-statestore-linux-arm64-gnu-V.tgz (the platform package; the root package
#           mqtt-statestore, the same for every platform, is scripts/package-node.sh's)
#   C       libstatestore-V-aarch64-linux-gnu.tar.gz, libstatestore_V_arm64.deb
# Each linked by zig against glibc 2.17 and checked as the x86_64 ones are (auditwheel's
# manylinux policy, the newest glibc symbol, no broker or server in the client). The compiler
# is Debian's rustc-web with its aarch64 standard library (scripts/lib/arm64.sh). The testing
# packages (mqtt-statestore-testing*) are x86_64 only. Prints the time of each step.
# Usage: bash scripts/package-arm64.sh [build|node]: `build` makes every artefact but the Node
# platform package; `node` packs that one, from the addon `build` made, in the napi-rs platform
# folder that scripts/package-node.sh lays out (laying it out itself when missing). Without an
# argument, both.
set -euo pipefail
steps="${1:-build node}"
cd "$(dirname "$0")/.."
root="$PWD"
export CARGO_TERM_COLOR=never
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false
export PKG_TOOLS="${PKG_TOOLS:-${CARGO_TARGET_DIR:-$root/target}/package-tools}"
source scripts/lib/package-tools.sh
source scripts/lib/arm64.sh
target=aarch64-unknown-linux-gnu
timings=()
step() { timings+=("$1 $((SECONDS - step_start)) s"); echo "   $1: $((SECONDS - step_start)) s"; step_start=$SECONDS; }
step_start=$SECONDS

mkdir -p dist
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
export RELEASE_BUILD_DIR="$ARM64_HOME/build"
out="$RELEASE_BUILD_DIR/client/$target/release"

# glibc_at_most FILE: the newest glibc symbol version FILE uses is 2.17 or older.
glibc_at_most() {
  local newest
  newest="$(aarch64-linux-gnu-objdump -T "$1" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)"
  if [ "$(printf '%s\n' "$newest" 2.17 | sort -V | tail -1)" != 2.17 ]; then
    echo "$1: needs glibc $newest (newer than 2.17)" >&2; return 1
  fi
  echo "glibc <= 2.17: $1 (newest symbol GLIBC_$newest)"
}

if [[ " $steps " == *" build "* ]]; then
echo "== arm64: tools"
arm64_host_tools
arm64_rustc
"$ARM64_RUSTC" --version
step toolchain

# Debian's compiler, and the client set's build (release_build): one target directory, profile
# and linker for the three, so their dependencies are compiled once.
export RUSTC="$ARM64_RUSTC"
release_build client "$target"
rm -f dist/mqtt_statestore-"$VERSION"-*aarch64*.whl dist/libstatestore-*-aarch64-linux-gnu.tar.gz \
  dist/libstatestore_*_arm64.deb

echo "== arm64: build (the wheel by maturin, then the C library and the Node addon by cargo)"
touch "$logs/start"
timeout 2700 maturin build --quiet --release --compatibility manylinux2014 --target "$target" \
  -m python/Cargo.toml --out dist
step "build wheel"
timeout 2700 cargo build --release --quiet -p statestore-c -p statestore-node --target "$target"
step "build C library + Node addon"
bash scripts/lib/check-shared-build.sh "$logs/start" "$CARGO_TARGET_DIR"

echo "== arm64: Python wheel"
wheel="$(ls dist/mqtt_statestore-"$VERSION"-*aarch64*.whl)"
case "$wheel" in *-cp39-abi3-*manylinux_2_17_aarch64*.whl) ;;
  *) echo "unexpected wheel tag: $wheel" >&2; exit 1 ;; esac
policy="$("$PKG_BIN/auditwheel" show "$wheel" | tr -s ' \n' ' ')"
echo "$policy"
grep -q 'consistent with the following platform tag: "manylinux_2_17_aarch64"' <<<"$policy" \
  || { echo "$wheel: not manylinux_2_17 by auditwheel" >&2; exit 1; }
"$PKG_PY" -m zipfile -e "$wheel" "$logs/wheel"
bash scripts/lib/check-client-only.sh "$logs"/wheel/statestore/_native*.so

step "wheel checks"

echo "== arm64: C library"
glibc_at_most "$out/libstatestore.so"
bash scripts/lib/check-client-only.sh "$out/libstatestore.so"
STATESTORE_C_BUILT="$out" bash scripts/package-c.sh "$target"
step "C packages"

fi

if [[ " $steps " == *" node "* ]]; then
echo "== arm64: Node platform package"
platform=node/npm/linux-arm64-gnu
if [ ! -f "$platform/package.json" ]; then
  # napi-rs's folder for the platform, as scripts/package-node.sh lays them out.
  (cd node && timeout 600 npm install --no-package-lock --loglevel=error --omit=optional --omit=peer)
  (cd node && timeout 300 npx --no-install napi create-npm-dirs --npm-dir npm)
fi
[ -f "$out/libstatestore_node.so" ] || { echo "arm64: no addon in $out: run scripts/package-arm64.sh build first" >&2; exit 1; }
rm -f dist/mqtt-statestore-linux-arm64-gnu-*.tgz
addon="$platform/statestore.linux-arm64-gnu.node"
install -m 0755 "$out/libstatestore_node.so" "$addon"
aarch64-linux-gnu-strip --strip-debug "$addon"
bash scripts/lib/check-client-only.sh "$addon"
glibc_at_most "$addon"
(cd "$platform" && npm pack --loglevel=warn --pack-destination "$root/dist" >/dev/null)
step "Node package"

fi

echo "== arm64 artefacts"
for f in dist/mqtt_statestore-"$VERSION"-*aarch64*.whl dist/mqtt-statestore-linux-arm64-gnu-"$VERSION".tgz \
  dist/libstatestore-"$VERSION"-aarch64-linux-gnu.tar.gz dist/libstatestore_"$VERSION"_arm64.deb; do
  [ ! -f "$f" ] || printf '   %-75s %9s bytes\n' "$f" "$(stat -c %s "$f")"
done
echo "== arm64 package timings: ${timings[*]}"
