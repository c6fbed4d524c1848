# Sourced by the shell test runners (test-c.sh, test-arm64.sh): checks counted and named, each
# check's output kept in CHECK_LOGS and shown when it fails, and the closing line
# "N passed, N failed" that the other runners print too.
# shellcheck shell=bash
passed=0
failed=0
failures=()
CHECK_LOGS="${CHECK_LOGS:-$(mktemp -d)}"
mkdir -p "$CHECK_LOGS"

# A check's time is shown when it is long enough to matter for the run's length.
took() { [ "$1" -ge 5 ] && echo " ($1 s)" || true; }
pass() { passed=$((passed + 1)); echo "ok   $1$(took "${2:-0}")"; }
fail() { failed=$((failed + 1)); failures+=("$1"); echo "FAIL $1$(took "${2:-0}")"; }

# run NAME TIMEOUT CMD...: one check; SHOW_TAIL=N also prints the last N lines of a passing
# check's output (for checks whose output is the result worth seeing).
run() {
  local name="$1" limit="$2"
  shift 2
  local log="$CHECK_LOGS/${name//[^A-Za-z0-9._-]/_}.log" start=$SECONDS
  if timeout "$limit" "$@" >"$log" 2>&1; then
    pass "$name" $((SECONDS - start))
    [ "${SHOW_TAIL:-0}" -eq 0 ] || tail -"$SHOW_TAIL" "$log" | sed 's/^/    /'
  else
    fail "$name" $((SECONDS - start))
    tail -40 "$log" | sed 's/^/    /'
  fi
}

# The closing lines; the exit status of the runner (0 when nothing failed).
summary() {
  if [ "$failed" -gt 0 ]; then printf 'failed: %s\n' "${failures[@]}"; fi
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
