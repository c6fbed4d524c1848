#!/usr/bin/env bash
# The bindings benchmark: every binding flavour side by side with the Rust clients and with the protocol
# spoken by hand (paho-mqtt, mqtt.js), in one run. Installs what the drivers need under
# target/bench-bindings/ the way users do: the release packages of dist/ (scripts/package.sh,
# run here for the languages whose packages are missing or older than the sources) in a venv
# with paho-mqtt and in a folder with mqtt, libstatestore installed by scripts/install-c.sh
# into a prefix and bench/drivers/c_driver.c compiled against it with pkg-config), builds the
# harness in release and runs `statestore-bench bindings`: the Markdown table on stdout,
# bench/results/bindings.json, bindings.svg and bindings.md.
#
# A package that does not install is not an error: its flavours are reported as
# "unavailable: <reason>" (the step's log is under target/bench-bindings/logs/).
#
# Usage: scripts/bench-bindings.sh [--quick | --smoke] [--out DIR] [--filter TEXT]
#                                  [--flavours rust-async,python-async,...]
#   (full profile by default: ~30 minutes; --quick: about 4 minutes once installed)
# Environment: BENCH_SKIP_INSTALL=1 reuses what is installed without checking for changes;
# STATESTORE_DIST_READY=1 takes dist/ as built from the current sources (CI builds it first).
set -uo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
export CARGO_TERM_COLOR=never
work="$root/target/bench-bindings"
logs="$work/logs"
mkdir -p "$logs"

say() { echo "bench-bindings: $*" >&2; }

# fingerprint PATHS...: changes when a tracked or untracked file under PATHS changes.
fingerprint() {
  {
    git log -1 --format=%H -- "$@" 2>/dev/null
    git diff HEAD -- "$@" 2>/dev/null
    git ls-files -o --exclude-standard -- "$@" 2>/dev/null | while read -r f; do stat -c '%n %Y %s' "$f"; done
  } | md5sum | cut -c1-32
}

# fresh NAME PATHS...: true when NAME was installed from the current PATHS already.
fresh() {
  local name="$1"
  shift
  [ "${BENCH_SKIP_INSTALL:-0}" = 1 ] && [ -f "$work/$name.stamp" ] && return 0
  [ -f "$work/$name.stamp" ] && [ "$(cat "$work/$name.stamp")" = "$(fingerprint "$@")" ]
}
stamp() {
  local name="$1"
  shift
  fingerprint "$@" >"$work/$name.stamp"
}

# --- Mosquitto (the Mosquitto cells; the harness reports them failed without it)
if ! command -v mosquitto >/dev/null && [ ! -x /usr/sbin/mosquitto ]; then
  say "installing mosquitto"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mosquitto; } >"$logs/mosquitto.log" 2>&1 ||
    say "mosquitto did not install (see $logs/mosquitto.log)"
fi

# --- the harness
# BENCH_CARGO_PROFILE=dev builds the harness unoptimised, for a run whose figures do not count.
cargo_profile="${BENCH_CARGO_PROFILE:-release}"
say "building statestore-bench ($cargo_profile)"
if ! timeout 1800 cargo build --profile "$cargo_profile" --quiet -p statestore-bench 2>"$logs/cargo-bench.log"; then
  cat "$logs/cargo-bench.log" >&2
  say "the harness does not build"
  exit 1
fi
target_dir="$(cargo metadata --format-version 1 --no-deps 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
bench="$target_dir/$([ "$cargo_profile" = dev ] && echo debug || echo "$cargo_profile")/statestore-bench"
args=()

# --- Python: a venv with the package and paho-mqtt
venv="$work/venv"
python_ok=1
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv" >"$logs/venv.log" 2>&1 || { say "cannot make a venv (see $logs/venv.log)"; python_ok=0; }
fi
if [ "$python_ok" = 1 ]; then
  "$venv/bin/python" -c 'import paho.mqtt' 2>/dev/null ||
    timeout 300 "$venv/bin/pip" install -q 'paho-mqtt>=2,<3' >"$logs/paho.log" 2>&1 ||
    say "paho-mqtt did not install (see $logs/paho.log)"
  if fresh python python core Cargo.lock && "$venv/bin/python" -c 'import statestore' 2>/dev/null; then
    say "python package up to date"
  else
    say "installing the Python package (dist/ wheel, from scripts/package.sh python)"
    if { [ "${STATESTORE_DIST_READY:-0}" = 1 ] || timeout 1800 bash scripts/package.sh python >"$logs/python.log" 2>&1; } &&
      timeout 600 "$venv/bin/pip" install -q --force-reinstall --no-index --find-links dist mqtt-statestore >>"$logs/python.log" 2>&1; then
      stamp python python core Cargo.lock
    else
      say "the Python package did not install (see $logs/python.log): its flavours will be unavailable"
    fi
  fi
  args+=(--python "$venv/bin/python")
fi

# --- Node: a folder with the package and mqtt.js
nodedir="$work/node"
mkdir -p "$nodedir"
[ -f "$nodedir/package.json" ] || echo '{"name":"statestore-bench-drivers","private":true}' >"$nodedir/package.json"
if command -v node >/dev/null; then
  [ -d "$nodedir/node_modules/mqtt" ] ||
    (cd "$nodedir" && timeout 300 npm install --no-audit --no-fund --loglevel=error 'mqtt@5') >"$logs/mqtt.log" 2>&1 ||
    say "mqtt.js did not install (see $logs/mqtt.log)"
  if fresh node node core Cargo.lock && (cd "$nodedir" && node -e 'require("mqtt-statestore")') 2>/dev/null; then
    say "node package up to date"
  else
    say "installing the Node package (dist/ tarballs, from scripts/package.sh node)"
    version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
    if { [ "${STATESTORE_DIST_READY:-0}" = 1 ] || timeout 1800 bash scripts/package.sh node >"$logs/node.log" 2>&1; } &&
      (cd "$nodedir" && timeout 600 npm install --no-audit --no-fund --loglevel=error \
        "$root/dist/mqtt-statestore-$version.tgz" "$root/dist/mqtt-statestore-linux-x64-gnu-$version.tgz") >>"$logs/node.log" 2>&1 &&
      (cd "$nodedir" && node -e 'require("mqtt-statestore")') 2>>"$logs/node.log"; then
      stamp node node core Cargo.lock
    else
      say "the Node package did not install (see $logs/node.log): its flavours will be unavailable"
    fi
  fi
  args+=(--node "$(command -v node)" --node-dir "$nodedir")
fi

# --- C: libstatestore in a prefix, the driver compiled against it
prefix="$work/c"
cdriver="$work/c_driver"
if [ -f scripts/install-c.sh ] && command -v cc >/dev/null; then
  if fresh c bindings include core Cargo.lock scripts/install-c.sh bench/drivers/c_driver.c && [ -x "$cdriver" ]; then
    say "C library and driver up to date"
  else
    command -v pkg-config >/dev/null || {
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pkg-config
    } >"$logs/pkg-config.log" 2>&1
    say "installing libstatestore (scripts/install-c.sh $prefix) and compiling the C driver"
    rm -f "$cdriver"
    if timeout 1800 bash scripts/install-c.sh "$prefix" >"$logs/c.log" 2>&1 &&
      PKG_CONFIG_PATH="$prefix/lib/pkgconfig" cc -O2 -std=c11 -Wall -Wextra -Werror \
        -o "$cdriver" bench/drivers/c_driver.c \
        $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs statestore) \
        -Wl,-rpath,"$prefix/lib" -lpthread >>"$logs/c.log" 2>&1; then
      stamp c bindings include core Cargo.lock scripts/install-c.sh bench/drivers/c_driver.c
    else
      rm -f "$cdriver"
      say "the C library or driver did not build (see $logs/c.log): its flavours will be unavailable"
    fi
  fi
  [ -x "$cdriver" ] && args+=(--c-driver "$cdriver")
fi

say "running statestore-bench bindings $*"
exec "$bench" bindings "${args[@]}" "$@"
