#!/usr/bin/env bash
# The chaos run: writers in every flavour on two rings (an embedded
# `statestore-server --data-dir` behind a cutting proxy, and Mosquitto with a
# `statestore-server --broker` behind one) while a fault driver cuts and delays links,
# restarts Mosquitto with and without its sessions and SIGKILLs the server; then a checker
# judges every promise (tests/chaos/README.md).
#
#   bash scripts/chaos.sh [DURATION] [extra statestore-chaos run flags]   # DURATION: 120s, 30m
#
# Flavours whose package is not built here are reported as SKIPPED with the reason (with
# CHAOS_REQUIRE_ALL=1 they fail the run instead). Output
# (logs, run.json, summary.json) goes to target/chaos/<timestamp>/; exit status 1 if a promise
# was broken. Everything listens on 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
duration="${1:-120s}"
shift || true

if ! command -v mosquitto >/dev/null && [ ! -x /usr/sbin/mosquitto ]; then
  (apt-get update -qq && apt-get install -y -qq mosquitto) >/dev/null
fi

cargo build --quiet -p statestore-server -p statestore-chaos
target_dir="$(cargo metadata --format-version 1 --no-deps 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])' 2>/dev/null || echo target)"
bin="$target_dir/debug/statestore-chaos"

flags=()
writers=tests/chaos/writers

# C: the writer program linked against the built libstatestore (scripts/test-c.sh builds it).
c_lib_dir="$target_dir/debug"
if [ -f include/statestore.h ] && cargo build --quiet -p statestore-c 2>/dev/null \
    && ls "$c_lib_dir"/libstatestore.so >/dev/null 2>&1 && [ -f "$writers/writer.c" ]; then
  # The library's soname is libstatestore.so.0 (scripts/install-c.sh makes the link; the
  # writer links against the freshly built one).
  lib="$target_dir/chaos/lib"
  mkdir -p "$lib"
  ln -sf "$(cd "$c_lib_dir" && pwd)/libstatestore.so" "$lib/libstatestore.so.0"
  ln -sf "$(cd "$c_lib_dir" && pwd)/libstatestore.so" "$lib/libstatestore.so"
  if gcc -std=c11 -Wall -Wextra -Werror -O1 -g -Iinclude "$writers/writer.c" \
      -L"$lib" -Wl,-rpath,"$(cd "$lib" && pwd)" -lstatestore -lpthread \
      -o "$target_dir/chaos/writer-c" 2>"$target_dir/chaos/writer-c.build.log"; then
    flags+=(--writer "c=$target_dir/chaos/writer-c")
  else
    flags+=(--skip "c=the C writer does not build against include/statestore.h: $(head -c 300 "$target_dir/chaos/writer-c.build.log" | tr '\n' ' ')")
  fi
else
  flags+=(--skip "c=no libstatestore/statestore.h (bindings/ not built) or no $writers/writer.c")
fi

# Python: the package installed from this tree's sources into the chaos venv
# (scripts/chaos-python.sh refreshes it when the sources are newer); CHAOS_PYTHON overrides.
python="${CHAOS_PYTHON:-$(bash scripts/chaos-python.sh || true)}"
if [ -n "$python" ] && [ -f "$writers/writer.py" ]; then
  flags+=(--writer "python-sync=$python $writers/writer.py sync" --writer "python-async=$python $writers/writer.py async")
else
  reason="the statestore Python package is not importable (build it with scripts/test-python.sh)"
  flags+=(--skip "python-sync=$reason" --skip "python-async=$reason")
fi

# Node: the package in node/ loadable by node.
if command -v node >/dev/null && [ -f "$writers/writer.mjs" ] \
    && (cd node && node -e 'require(".")' >/dev/null 2>&1); then
  flags+=(--writer "node=node $writers/writer.mjs" --writer "node-sync=node $writers/writer.mjs sync")
else
  reason="the statestore Node package in node/ does not load (build it: npm install && npm run build in node/)"
  flags+=(--skip "node=$reason" --skip "node-sync=$reason")
fi

# Keep the last few runs (a 30-minute run writes about 400 MB of logs).
# (No earlier run is not an error: ls fails then, and pipefail would end the script.)
{ ls -dt "$target_dir"/chaos/20*/ 2>/dev/null || true; } | tail -n +4 | xargs -r rm -rf
out="$target_dir/chaos/$(date -u +%Y%m%dT%H%M%SZ)"
# CHAOS_REQUIRE_ALL=1 (scripts/test-chaos.sh, so CI) makes a skipped flavour fail the run.
if [ "${CHAOS_REQUIRE_ALL:-0}" = 1 ]; then
  flags+=(--require-all)
fi
exec "$bin" run --duration "$duration" --out "$out" --server-bin "$target_dir/debug/statestore-server" "${flags[@]}" "$@"
