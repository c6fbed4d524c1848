#!/usr/bin/env bash
# The Python package's tests (issue 14), from a fresh clone: a virtual environment in
# target/py-venv (created once) with pytest, pytest-asyncio, pytest-timeout and mypy;
# `pip install ./python` exactly as a user installs it (maturin from PyPI as the build backend,
# a release build into the workspace's target directory); then every test in python/tests
# (each with a deadline, against the in-process state store, and the statestore-server binary
# on Mosquitto), the shared scenarios with Client and AsyncClient, the examples, mypy --strict
# on the package and the examples, and stubtest of the stubs against the compiled module.
# Ends with pytest's summary line.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
export CARGO_TERM_COLOR=never
venv="$root/target/py-venv"
py="$venv/bin/python"

# --- tools: Mosquitto (for the tests on a real broker), a venv with the test tools
bash scripts/setup.sh >/dev/null 2>&1 || {
  # setup.sh also installs fuzzing tools; mosquitto is all this script needs.
  command -v mosquitto >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mosquitto >/dev/null; }
}
if [ ! -x "$py" ]; then
  echo "== creating $venv"
  python3 -m venv "$venv"
fi
if ! "$py" -c "import pytest, pytest_asyncio, pytest_timeout, mypy" 2>/dev/null; then
  echo "== installing pytest, pytest-asyncio, pytest-timeout, mypy"
  "$venv/bin/pip" install -q --disable-pip-version-check "pytest>=8" "pytest-asyncio>=0.23" "pytest-timeout>=2.3" "mypy>=1.10"
fi

# --- the statestore-server binary for the Mosquitto tests (the workspace test run built it)
cargo build -q -p statestore-server

# --- install the package as a user does
echo "== pip install ./python"
start=$SECONDS
"$venv/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps ./python
echo "== installed in $((SECONDS - start)) s"

# --- static checks: stubs and examples
echo "== mypy --strict (package and examples)"
(cd python && "$py" -m mypy --strict statestore examples)
echo "== stubtest"
# From outside the source tree: the installed package (with its compiled module) is what is
# checked, as users get it; python/statestore has no compiled module in a fresh clone.
(cd "$root/target" && "$py" -m mypy.stubtest statestore --allowlist "$root/python/stubtest-allowlist.txt")

echo "== examples"
for example in python/examples/*.py; do
  timeout 60 "$py" "$example" >/dev/null
done

# --- tests (pytest exits 5 when it collected nothing: set -e fails the script then too).
# Run from outside the source tree so that the installed package is what is imported.
echo "== pytest"
cd "$root/python/tests"
"$venv/bin/pytest" -c "$root/python/pyproject.toml" --rootdir "$root/python" -p no:cacheprovider -q "$root/python/tests"
