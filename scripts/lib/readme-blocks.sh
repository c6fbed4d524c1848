# Sourced by the runners of the docs' code blocks, so that what runs is read from the docs
# themselves and cannot drift: test-c.sh and test-arm64.sh (C and C++ programs), and every
# test script for the command lines (run_doc_blocks).
# shellcheck shell=bash

# readme_blocks README LANG PREFIX: writes each ```LANG block of README to
# PREFIX-<line>.<LANG> (<line>: the line of its opening fence).
readme_blocks() {
  awk -v lang="$2" -v out="$3" '
    $0 == "```" lang { file = out "-" NR "." lang; printf "" > file; next }
    file && /^```/ { close(file); file = ""; next }
    file { print > file }
  ' "$1"
}

# run_doc_blocks SET [--private-network]: runs, as written, the command lines and snippets of
# README.md, CONTRIBUTING.md and docs/*.md that scripts/lib/doc-blocks.py gives to SET (the
# others are examples run by the language suites, output, or checked by `doc-blocks.py check`).
# Each document's lines run in one shell, in a folder of their own under a temporary one, after
# the caller's function `prepare DOC` (and `run_cmake`/`run_toml` for such blocks, reading the
# block on stdin). --private-network: in a network namespace of their own, whose loopback has
# the default port 1883 free for the lines that use it, whatever else runs on the machine.
run_doc_blocks() {
  local set="$1" work status=0
  work="$(mktemp -d -t statestore-doc-blocks-XXXXXX)"
  {
    declare -f prepare
    declare -f run_cmake run_toml || true
    python3 scripts/lib/doc-blocks.py script "$set"
  } >"$work/run.sh"
  local run=(bash "$work/run.sh")
  if [ "${2:-}" = --private-network ]; then
    if unshare --net --map-root-user bash -c 'ip link set lo up' 2>/dev/null; then
      run=(unshare --net --map-root-user bash -c 'ip link set lo up && exec bash "$1"' _ "$work/run.sh")
    else
      # A machine without user namespaces (some containers): the host's loopback, where no
      # test uses 1883 (they all take free ports), so the lines still run as written.
      echo "   (no network namespace here: the lines use the host's loopback)" >&2
    fi
  fi
  DOC_ROOT="$PWD" DOC_WORK="$work" timeout 600 "${run[@]}" || status=$?
  rm -rf "$work"
  return "$status"
}
