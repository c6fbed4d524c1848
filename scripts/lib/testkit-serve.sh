# Sourced by the C test scripts (test-c.sh, test-arm64.sh): the test kit's servers, started
# as the Python and Node suites start theirs.
#   testkit_serve KIND TARGET_DIR   runs `statestore-testkit serve KIND` (STATESTORE_TESTKIT_BIN,
#   else TARGET_DIR/debug/statestore-testkit) as a coprocess: its standard input is this shell's
#   pipe, so it ends when the shell does. Sets TESTKIT_PORT (from its `ready on 127.0.0.1:PORT`)
#   and TESTKIT_SERVER_PID; fails, saying so, if it is not ready within 60 s.
# shellcheck shell=bash
testkit_serve() {
  local bin="${STATESTORE_TESTKIT_BIN:-$2/debug/statestore-testkit}" line=""
  coproc TESTKIT { exec "$bin" serve "$1"; }
  TESTKIT_SERVER_PID=$TESTKIT_PID
  IFS= read -r -t 60 -u "${TESTKIT[0]}" line || true
  if [[ ! "$line" =~ ^ready\ on\ 127\.0\.0\.1:([0-9]+)$ ]]; then
    echo "statestore-testkit serve $1 did not start: ${line:-no ready line within 60 s}" >&2
    return 1
  fi
  TESTKIT_PORT="${BASH_REMATCH[1]}"
}
