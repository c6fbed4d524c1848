# Sourced by the package tests: $USER_PATH is this PATH as a user without a Rust toolchain has
# it: the rustup folder is dropped, and cargo and rustc found anywhere else (a distribution's
# package in /usr/bin, say) are shadowed by stand-ins that fail, so an install that would
# build from source fails instead of quietly compiling.
# shellcheck shell=bash
_no_rust="$(mktemp -d -t statestore-no-rust-XXXXXX)"
for _tool in cargo rustc rustup; do
  printf '#!/bin/sh\necho "%s: not available (a user without a Rust toolchain)" >&2\nexit 127\n' "$_tool" \
    > "$_no_rust/$_tool"
  chmod +x "$_no_rust/$_tool"
done
USER_PATH="$_no_rust"
IFS=: read -r -a _entries <<<"$PATH"
for _entry in "${_entries[@]}"; do
  [ -x "$_entry/rustup" ] && continue
  USER_PATH="$USER_PATH:$_entry"
done
if PATH="$USER_PATH" cargo --version >/dev/null 2>&1 || PATH="$USER_PATH" rustc --version >/dev/null 2>&1; then
  echo "cannot build a PATH without cargo and rustc (from $PATH)" >&2
  exit 1
fi
unset _entries _entry _tool _no_rust
export USER_PATH
