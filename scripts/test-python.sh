#!/usr/bin/env bash
# The Python package's tests, from a fresh clone: a virtual environment in target/py-venv
# (created once) with pytest, pytest-asyncio, pytest-timeout and mypy; the built wheels
# (dist/, from scripts/package.sh, run here if they are missing) installed as a user installs
# them, `pip install --no-index --find-links dist 'mqtt-statestore[testing]'`, with no cargo or
# rustc on PATH; then every test in python/tests
# (each with a deadline, against the in-process state store, and the test kit's Mosquitto
# with the state store attached: statestore-testkit serve), the shared scenarios with Client
# and AsyncClient, the docs' pip lines, the examples, mypy --strict
# on the package and the examples, mypy --strict over a file of deliberate type mistakes (each
# must be reported) and correct uses (tests/test_types.py), and stubtest of the stubs against
# the compiled module.
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

# --- the test kit's servers for the Mosquitto tests (the workspace test run built them)
cargo build -q -p statestore-testkit

# --- install the built wheels as a user does, with no Rust toolchain to fall back on
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
if ! ls dist/mqtt_statestore-"$version"-*.whl dist/mqtt_statestore_testing-"$version"-*.whl >/dev/null 2>&1; then
  bash scripts/package.sh python
fi
source scripts/lib/user-path.sh
echo "== pip install --no-index --find-links dist 'mqtt-statestore[testing]' (no cargo, no rustc)"
"$venv/bin/pip" uninstall -q -y mqtt-statestore mqtt-statestore-testing statestore 2>/dev/null || true
start=$(date +%s%N)
PATH="$USER_PATH" "$venv/bin/pip" install -q --disable-pip-version-check --no-index --find-links dist \
  "mqtt-statestore[testing]==$version"
echo "== installed in $((($(date +%s%N) - start) / 1000000)) ms"
(cd "$root/target" && PATH="$USER_PATH" "$py" - "$version" <<'PY'
import subprocess, sys, time
import statestore
assert statestore.__version__ == sys.argv[1], (statestore.__version__, sys.argv[1])
import statestore_testing
assert statestore_testing.__version__ == sys.argv[1]
# A fresh interpreter per import: the time a user's program pays for `import statestore`.
code = "import time; t = time.perf_counter(); import statestore; print(time.perf_counter() - t)"
runs = sorted(float(subprocess.check_output([sys.executable, "-c", code])) for _ in range(5))
print(f"== statestore {statestore.__version__}: import statestore {runs[2] * 1000:.0f} ms (median of 5)")
PY
)

# --- the docs' pip lines, as written, in a fresh venv that finds only dist/
source scripts/lib/readme-blocks.sh
prepare() {
  [ -x "$DOC_WORK/venv/bin/pip" ] || python3 -m venv "$DOC_WORK/venv"
  export PATH="$DOC_WORK/venv/bin:$USER_PATH" PIP_NO_INDEX=1 PIP_FIND_LINKS="$DOC_ROOT/dist" \
    PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_QUIET=1
}
run_doc_blocks python

# --- static checks: stubs and examples
echo "== mypy --strict (package and examples)"
(cd python && "$py" -m mypy --strict statestore examples)
echo "== stubtest"
# From outside the source tree: the installed package (with its compiled module) is what is
# checked, as users get it; python/statestore has no compiled module in a fresh clone.
(cd "$root/target" && "$py" -m mypy.stubtest statestore statestore_testing --allowlist "$root/python/stubtest-allowlist.txt")

echo "== examples"
for example in python/examples/*.py; do
  PATH="$USER_PATH" timeout 60 "$py" "$example" >/dev/null
done

# --- tests (pytest exits 5 when it collected nothing: set -e fails the script then too).
# Run from outside the source tree so that the installed package is what is imported.
echo "== pytest"
cd "$root/python/tests"
PATH="$USER_PATH" "$venv/bin/pytest" -c "$root/python/pyproject.toml" --rootdir "$root/python" -p no:cacheprovider -q "$root/python/tests"

# --- the source distribution, where no wheel fits: it builds (Rust toolchain on PATH this time)
# and the built package works (a set and a get on the local state store of the testing wheel).
# Its build shares the workspace's target directory, so it reuses what is compiled, and is a
# debug build (MATURIN_PEP517_ARGS): what it checks is that the sdist builds and works.
echo "== sdist: pip install dist/mqtt_statestore-$version.tar.gz (a source build)"
cd "$root"
sdist_venv="$root/target/py-sdist-venv"
[ -x "$sdist_venv/bin/python" ] || python3 -m venv "$sdist_venv"
start=$SECONDS
CARGO_TARGET_DIR="$root/target" MATURIN_PEP517_ARGS="--profile dev" timeout 1800 "$sdist_venv/bin/pip" install -q --disable-pip-version-check \
  --force-reinstall --find-links dist "dist/mqtt_statestore-$version.tar.gz" "mqtt-statestore-testing==$version"
echo "== sdist built and installed in $((SECONDS - start)) s"
(cd "$root/target" && timeout 60 "$sdist_venv/bin/python" - "$version" <<'PY'
import sys
import statestore
from statestore.testing import LocalStateStore
assert statestore.__version__ == sys.argv[1]
with LocalStateStore() as server, server.client() as client:
    client.set("from-sdist", "yes")
    assert client.get("from-sdist").value == b"yes"
print("sdist: set and get ok")
PY
)
