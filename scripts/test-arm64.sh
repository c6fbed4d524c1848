#!/usr/bin/env bash
# Smoke tests of the aarch64 (arm64) artefacts in dist/ (scripts/package-arm64.sh, run here if
# they are missing), each run under qemu-aarch64 against a statestore-server (this machine's,
# x86_64) on loopback: installed as a user installs it, then a set and a get through the
# language's own import or link path.
#   Python  pip installs the wheel for an aarch64 platform (the tags must fit), Debian's arm64
#           python3.11 imports statestore from it: version, set, get
#   Node    npm installs the root package and the arm64 platform package, Debian's arm64 node
#           requires mqtt-statestore (napi-rs's loader picks the platform package): version,
#           set, get
#   C       the README's program, built by aarch64-linux-gnu-gcc with pkg-config against the
#           unpacked tarball and against the .deb's files: set, get
# The arm64 interpreters come from Debian's packages (scripts/lib/arm64.sh). ARM64_DIST names
# another folder of artefacts to test (default dist). Ends with "N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
export CARGO_TERM_COLOR=never
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false
dist="$(cd "${ARM64_DIST:-dist}" && pwd)"
export PKG_TOOLS="${PKG_TOOLS:-${CARGO_TARGET_DIR:-$root/target}/package-tools}"
source scripts/lib/package-tools.sh
source scripts/lib/arm64.sh
timings=()
step_start=$SECONDS
step() { timings+=("$1 $((SECONDS - step_start)) s"); step_start=$SECONDS; }

wheel="$(ls "$dist"/mqtt_statestore-"$VERSION"-*aarch64*.whl 2>/dev/null | head -1 || true)"
node_platform="$dist/mqtt-statestore-linux-arm64-gnu-$VERSION.tgz"
node_root="$dist/mqtt-statestore-$VERSION.tgz"
tarball="$dist/libstatestore-$VERSION-aarch64-linux-gnu.tar.gz"
debfile="$dist/libstatestore_${VERSION}_arm64.deb"
if [ -z "$wheel" ] || [ ! -f "$node_platform" ] || [ ! -f "$tarball" ] || [ ! -f "$debfile" ]; then
  [ -z "${ARM64_DIST:-}" ] || { echo "no arm64 artefacts in $dist" >&2; exit 1; }
  # The root npm package is the same for every platform: built with the x86_64 ones when
  # dist/ has them already (as in the test run), else here.
  if [ -f "$node_root" ]; then parts=(arm64); else parts=(node arm64); fi
  echo "== no arm64 artefacts in dist/: scripts/package.sh ${parts[*]}"
  bash scripts/package.sh "${parts[@]}"
  wheel="$(ls "$dist"/mqtt_statestore-"$VERSION"-*aarch64*.whl | head -1)"
  step package
fi

arm64_host_tools
arm64_userland
step "arm64 userland"

work="$(mktemp -d -t statestore-arm64-XXXXXX)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
CHECK_LOGS="$work/logs"
SHOW_TAIL=3 # what each smoke check printed (versions, values) is worth seeing
source scripts/lib/checks.sh
# Debian's arm64 interpreters under qemu; paths outside $ARM64_ROOT are the host's.
qemu_root=(qemu-aarch64 -L "$ARM64_ROOT")

# --- the server (x86_64) on a free loopback port: the test kit's (statestore-testkit serve),
# ending with this script; STATESTORE_TESTKIT_BIN names one already built.
if [ -z "${STATESTORE_TESTKIT_BIN:-}" ]; then
  cargo build --quiet -p statestore-testkit
  target_dir="$(cargo metadata --format-version 1 --no-deps | "$PKG_PY" -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
fi
source scripts/lib/testkit-serve.sh
testkit_serve embedded "${target_dir:-}"
server_pid=$TESTKIT_SERVER_PID
port=$TESTKIT_PORT
echo "== the test kit's server on port $port"
step server

# --- Python: pip picks the wheel for a linux aarch64 CPython 3.11 by its tags
echo "== python (wheel: $(basename "$wheel"))"
run "pip installs the wheel for manylinux2014_aarch64" 300 "$PKG_PY" -m pip install -q \
  --disable-pip-version-check --no-index --find-links "$dist" --no-deps --only-binary=:all: \
  --platform manylinux2014_aarch64 --python-version 3.11 --implementation cp \
  --target "$work/python" "mqtt-statestore==$VERSION"
cat >"$work/smoke.py" <<'PY'
import platform, sys
import statestore
version, port = sys.argv[1], int(sys.argv[2])
assert statestore.__version__ == version, (statestore.__version__, version)
with statestore.Client.connect("127.0.0.1", port) as client:
    client.set("arm64/python", "from " + platform.machine())
    got = client.get("arm64/python")
assert got is not None and got.value == b"from aarch64", got
print(f"statestore {statestore.__version__} on {platform.machine()}: set and get ok")
PY
run "python3.11 (aarch64): import statestore, set, get" 300 env PYTHONPATH="$work/python" \
  "${qemu_root[@]}" "$ARM64_ROOT/usr/bin/python3.11" -S "$work/smoke.py" "$VERSION" "$port"
step python

# --- Node: npm installs the root package and the arm64 platform package (what npm fetches on
# an arm64 machine; --force: npm refuses a package whose "cpu" is not this machine's, which is
# the point of the field); napi-rs's loader in the root package must find the addon by name.
echo "== node ($(basename "$node_platform"))"
mkdir -p "$work/node"
(cd "$work/node" && npm init -y >/dev/null)
run "npm installs mqtt-statestore with its arm64 platform package" 300 bash -c "cd '$work/node' &&
  npm install --no-package-lock --loglevel=error --force \
    '$node_root' '$node_platform' &&
  ls node_modules/mqtt-statestore-linux-arm64-gnu/*.node"
cat >"$work/node/smoke.js" <<'JS'
const { Client, version } = require('mqtt-statestore')
const [expected, port] = process.argv.slice(2)
async function main() {
  if (version !== expected) throw new Error(`version ${version}, expected ${expected}`)
  const client = await Client.connect({ host: '127.0.0.1', port: Number(port) })
  await client.set('arm64/node', `from ${process.arch}`)
  const got = await client.get('arm64/node')
  await client.close()
  if (!got || got.value.toString() !== 'from arm64') throw new Error(`got ${got && got.value}`)
  console.log(`mqtt-statestore ${version} on ${process.arch}: set and get ok`)
}
main().catch((e) => { console.error(e); process.exit(1) })
JS
run "node (arm64): require mqtt-statestore, set, get" 300 bash -c "cd '$work/node' &&
  ${qemu_root[*]} '$ARM64_ROOT/usr/bin/node' smoke.js '$VERSION' '$port'"
step node

# --- C: the README's program through pkg-config, from the tarball and from the .deb's files
echo "== c ($(basename "$tarball"), $(basename "$debfile"))"
source scripts/lib/readme-blocks.sh
readme_blocks README.md c "$work/readme"
readme_program="$(ls "$work"/readme-*.c | head -1)"
cc=(aarch64-linux-gnu-gcc -std=c11 -Wall -Wextra -Werror)
mkdir -p "$work/tar" "$work/deb"
run "tarball unpacks" 60 tar -xzf "$tarball" -C "$work/tar"
unpacked="$work/tar/libstatestore-$VERSION-aarch64-linux-gnu"
run "tarball: README program builds with pkg-config (aarch64-linux-gnu-gcc)" 120 bash -c "
  PKG_CONFIG_PATH='$unpacked/lib/pkgconfig' ${cc[*]} '$readme_program' -o '$work/readme-tar' \
    \$(PKG_CONFIG_PATH='$unpacked/lib/pkgconfig' pkg-config --cflags --libs statestore) -Wl,-rpath,'$unpacked/lib'"
run "tarball (aarch64): README program sets and gets" 120 bash -c "
  qemu-aarch64 -L /usr/aarch64-linux-gnu '$work/readme-tar' '$port' | tee /dev/stderr | grep -q '^color = blue'"
run "deb: arm64 package of libstatestore $VERSION for glibc >= 2.17" 30 bash -c "
  dpkg-deb -f '$debfile' Package Version Architecture Depends && dpkg-deb -x '$debfile' '$work/deb' &&
  [ \"\$(dpkg-deb -f '$debfile' Architecture)\" = arm64 ] && dpkg-deb -f '$debfile' Depends | grep -q 'libc6 (>= 2.17)'"
# The .deb's files as dpkg would install them under / : pkg-config's sysroot prefixes its paths.
deb_pc=(env PKG_CONFIG_SYSROOT_DIR="$work/deb" PKG_CONFIG_LIBDIR="$work/deb/usr/lib/aarch64-linux-gnu/pkgconfig")
run "deb: README program builds with pkg-config (aarch64-linux-gnu-gcc)" 120 bash -c "
  ${cc[*]} '$readme_program' -o '$work/readme-deb' \$(${deb_pc[*]} pkg-config --cflags --libs statestore)"
run "deb (aarch64): README program sets and gets" 120 bash -c "
  LD_LIBRARY_PATH='$work/deb/usr/lib/aarch64-linux-gnu' qemu-aarch64 -L /usr/aarch64-linux-gnu '$work/readme-deb' '$port' |
    tee /dev/stderr | grep -q '^color = blue'"
step c

echo
echo "== arm64 smoke timings: ${timings[*]}"
summary
