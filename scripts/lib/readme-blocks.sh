# Sourced by the runners that compile the READMEs' code blocks (test-c.sh, test-arm64.sh), so
# that the examples are read from the READMEs themselves and cannot drift.
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
