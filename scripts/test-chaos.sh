#!/usr/bin/env bash
# The chaos run in its short form, for bash .ci/run: the checker's own tests, the Rust clients
# against the malicious state store and the security fixtures, the hostile-input and
# connection-security tests of the C, Python and Node bindings, then the chaos run for about
# two minutes (CHAOS_DURATION overrides; every language must take part: one that cannot be
# built or loaded fails the run, naming the reason). Installs what it needs (mosquitto, libcjson-dev, a
# venv with pytest/hypothesis/pytest-timeout, fast-check). Closing line: "N passed, N failed".
# To reproduce a failure: CHAOS_C_SEED (the C generator prints its seed), the falsifying
# example hypothesis prints, the seed fast-check prints, the chaos run's seed
# (bash scripts/chaos.sh 120s --seed N).
set -uo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
export CARGO_TERM_COLOR=never
passed=0
failed=0
failures=()
step() {
  local name="$1"; shift
  echo "== chaos: $name"
  if "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); failures+=("$name"); echo "FAILED: $name"
  fi
}
# A flavour that cannot be tested is a failure here: this is the run CI relies on.
skip() { failed=$((failed + 1)); failures+=("$1 not tested: $2"); echo "FAILED (not tested) $1: $2"; }
export CHAOS_REQUIRE_ALL=1

missing=()
command -v mosquitto >/dev/null || [ -x /usr/sbin/mosquitto ] || missing+=(mosquitto)
[ -f /usr/include/cjson/cJSON.h ] || missing+=(libcjson-dev)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

timeout 1200 cargo build --quiet -p statestore-server -p statestore-chaos || { echo "0 passed, 1 failed"; exit 1; }
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
export CHAOS_BIN="$target_dir/debug/statestore-chaos"
server_bin="$target_dir/debug/statestore-server"
mkdir -p "$target_dir/chaos"

step "checker self-test and Rust clients vs the malicious server" timeout 600 cargo test --quiet -p statestore-chaos

# --- C: random calls, close races and the malicious server, under ASan and UBSan.
c_hostile() {
  local lib="$target_dir/chaos/lib" bin="$target_dir/chaos/hostile-c" work
  mkdir -p "$lib"
  ln -sf "$target_dir/debug/libstatestore.so" "$lib/libstatestore.so.0"
  ln -sf "$target_dir/debug/libstatestore.so" "$lib/libstatestore.so"
  gcc -std=c11 -Wall -Wextra -Werror -g -fsanitize=address,undefined -fno-omit-frame-pointer -Iinclude \
    tests/chaos/c/hostile.c -L"$lib" -Wl,-rpath,"$lib" -lstatestore -lcjson -lpthread -o "$bin" || return 1
  work="$(mktemp -d)"
  "$server_bin" --listen 127.0.0.1:0 --log-level error >"$work/server.out" 2>"$work/server.err" &
  local server_pid=$!
  mkfifo "$work/hostile.in"
  "$CHAOS_BIN" hostile --for 600s <"$work/hostile.in" >"$work/hostile.out" &
  local hostile_pid=$!
  exec 7>"$work/hostile.in"   # holds the hostile service's stdin open; closing it stops it
  local sport="" hport="" i
  for i in $(seq 100); do
    sport="$(sed -n 's/^statestore-server ready on [0-9.]*:\([0-9]*\).*/\1/p' "$work/server.out")"
    hport="$(sed -n 's/^hostile ready on [0-9.]*:\([0-9]*\)$/\1/p' "$work/hostile.out")"
    [ -n "$sport" ] && [ -n "$hport" ] && break
    sleep 0.2
  done
  local rc=1
  if [ -n "$sport" ] && [ -n "$hport" ]; then
    ASAN_OPTIONS="detect_leaks=1:exitcode=98" UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
      timeout 300 "$bin" "$sport" "$hport" tests/chaos/hostile.json "${CHAOS_C_ITERATIONS:-20000}" ${CHAOS_C_SEED:+"$CHAOS_C_SEED"}
    rc=$?
  else
    echo "the server or the hostile service did not start"; cat "$work/server.err"
  fi
  exec 7>&-
  kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null
  wait "$hostile_pid" 2>/dev/null
  rm -rf "$work"
  return $rc
}
# TLS, client certificates and passwords through the C ABI (tests/chaos/secure.json).
c_secure() {
  local lib="$target_dir/chaos/lib" bin="$target_dir/chaos/secure-c" work rc=1 i
  gcc -std=c11 -Wall -Wextra -Werror -g -fsanitize=address,undefined -fno-omit-frame-pointer -Iinclude \
    tests/chaos/c/secure.c -L"$lib" -Wl,-rpath,"$lib" -lstatestore -lcjson -lpthread -o "$bin" || return 1
  work="$(mktemp -d)"
  mkfifo "$work/secure.in"
  "$CHAOS_BIN" secure <"$work/secure.in" >"$work/secure.out" &
  local secure_pid=$!
  exec 7>"$work/secure.in"
  for i in $(seq 100); do [ -s "$work/secure.out" ] && break; sleep 0.2; done
  if [ -s "$work/secure.out" ]; then
    ASAN_OPTIONS="detect_leaks=1:exitcode=98" timeout 300 "$bin" "$(head -1 "$work/secure.out")" tests/chaos/secure.json
    rc=$?
  else
    echo "statestore-chaos secure did not start"
  fi
  exec 7>&-
  wait "$secure_pid" 2>/dev/null
  rm -rf "$work"
  return $rc
}
if [ -f include/statestore.h ] && timeout 1200 cargo build --quiet -p statestore-c; then
  step "C: hostile input (random calls, ASan+UBSan), close races, malicious server" c_hostile
  step "C: TLS, client certificates, passwords, no secret in messages or logs" c_secure
else
  skip c "libstatestore (bindings/) does not build"
fi

# --- Python: hypothesis and the malicious server, in a venv of our own, with the package
# installed from this tree's current sources (scripts/chaos-python.sh).
venv="$target_dir/chaos/venv"
python_ready() {
  bash scripts/chaos-python.sh >/dev/null || return 1
  "$venv/bin/python" -c 'import pytest, hypothesis, pytest_timeout' 2>/dev/null \
    || timeout 300 "$venv/bin/pip" install -q pytest hypothesis pytest-timeout || return 1
  (cd "$venv" && bin/python -c 'import statestore.testing')
}
if python_ready; then
  export CHAOS_PYTHON="$venv/bin/python"
  step "Python: hostile input (hypothesis), malicious server, connection security" \
    timeout 900 "$venv/bin/python" -m pytest -q -p no:cacheprovider --timeout 120 tests/chaos/python
else
  skip python "the statestore package could not be built or imported"
fi

# --- Node: fast-check and the malicious server.
node_ready() {
  command -v node >/dev/null || return 1
  (cd node && node -e 'require(".")' >/dev/null 2>&1) \
    || (cd node && timeout 600 npm install --no-audit --no-fund --omit=optional --omit=peer >/dev/null \
      && timeout 1800 npm run --silent build >/dev/null) || return 1
  (cd tests/chaos/node && { [ -d node_modules/fast-check ] || timeout 300 npm ci --no-audit --no-fund >/dev/null; })
}
if node_ready; then
  step "Node: hostile input (fast-check), malicious server, connection security" \
    bash -c 'cd tests/chaos/node && timeout 900 node --test --test-timeout=120000 hostile.test.mjs secure.test.mjs'
else
  skip node "the statestore Node package could not be built or loaded"
fi

step "chaos run (${CHAOS_DURATION:-100s})" timeout 900 bash scripts/chaos.sh "${CHAOS_DURATION:-100s}"

for name in "${failures[@]}"; do echo "FAILED: $name"; done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
