#!/usr/bin/env bash
# Prints the interpreter of the chaos runs' venv (TARGET/chaos/venv) after making sure the
# statestore package installed there was built from this tree's current sources: it installs
# the release wheels the way a user does (pip install --no-index --find-links dist
# 'mqtt-statestore[testing]', after scripts/package.sh python when dist/ has none newer than the
# sources) when the installed one is missing or older than any source file of core/ or python/. A package or in-place extension built from older sources
# would test code other than the checkout's, and the run would judge that instead.
set -euo pipefail
cd "$(dirname "$0")/.."
target_dir="$(cargo metadata --format-version 1 --no-deps 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])' 2>/dev/null || echo target)"
venv="$target_dir/chaos/venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv" >&2
# Run from the venv's directory, so that ./python/statestore (sources, or a stale in-place
# build) can never be the one imported.
native="$(cd "$venv" && bin/python -c 'import statestore._native as n; print(n.__file__)' 2>/dev/null || true)"
sources=(core/src core/Cargo.toml server/src python/src python/statestore python/Cargo.toml python/pyproject.toml python/testing)
newer() { [ -n "$(find "${sources[@]}" -type f -newer "$1" -print -quit 2>/dev/null)" ]; }
if [ -z "$native" ] || newer "$native"; then
  # This machine's wheel: dist/ also holds the aarch64 one.
  wheel="$(ls -t dist/mqtt_statestore-*_"$(uname -m)".whl 2>/dev/null | head -1)"
  if [ -z "$wheel" ] || newer "$wheel"; then
    echo "chaos-python: building the wheels (dist/ has none newer than the sources)" >&2
    timeout 1800 bash scripts/package.sh python >&2
  fi
  echo "chaos-python: installing the wheels of dist/ into $venv" >&2
  timeout 600 "$venv/bin/pip" install -q --force-reinstall --no-index --find-links dist \
    'mqtt-statestore[testing]' >&2
fi
echo "$venv/bin/python"
