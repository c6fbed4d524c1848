# Sourced by the package tests: $USER_PATH is this PATH without the Rust toolchain (cargo,
# rustc), so an install that would build from source fails instead of quietly compiling.
# shellcheck shell=bash
USER_PATH=""
IFS=: read -r -a _entries <<<"$PATH"
for _entry in "${_entries[@]}"; do
  if [ -x "$_entry/cargo" ] || [ -x "$_entry/rustc" ]; then continue; fi
  USER_PATH="${USER_PATH:+$USER_PATH:}$_entry"
done
unset _entries _entry
if PATH="$USER_PATH" command -v cargo >/dev/null || PATH="$USER_PATH" command -v rustc >/dev/null; then
  echo "cannot build a PATH without cargo and rustc (from $PATH)" >&2
  exit 1
fi
export USER_PATH
