#!/usr/bin/env bash
# The Node package's tests (issue 15), from a fresh clone: installs what it needs (Node and npm
# must be there; Mosquitto via apt if missing), then
#   1. `npm install` inside node/ (builds the addon from source, installs typescript),
#   2. `npm install <repo>/node` into an empty temporary project, as a user does,
#   3. `npm pack` and `npm install <tarball>` into another one (builds from the packed sources),
# and runs the README example in each, the whole test suite (node --test, a deadline per test) in
# the first and the package checks in the second; then `tsc --noEmit --strict` on the TypeScript example, and clippy/rustfmt of
# the crate. The shared scenarios run inside the suite (test/scenarios.test.mjs), Promise and
# Sync. Ends with node --test's "# pass N / # fail N" for each suite.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
export CARGO_TERM_COLOR=never
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false

command -v node >/dev/null || { echo "node (>= 18) is required"; exit 1; }
if ! command -v mosquitto >/dev/null && [ ! -x /usr/sbin/mosquitto ]; then
  echo "== installing mosquitto"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mosquitto >/dev/null
fi

echo "== node: rustfmt and clippy of statestore-node"
cargo fmt -p statestore-node --check
cargo clippy -p statestore-node --all-targets --quiet -- -D warnings

echo "== node: statestore-server binary for the Mosquitto tests"
cargo build -p statestore-server --quiet
export STATESTORE_SERVER_BIN="$root/target/debug/statestore-server"
export STATESTORE_REPO="$root"

work="$(mktemp -d -t statestore-node-XXXXXX)"
trap 'rm -rf "$work"' EXIT
# The packed install builds the copied crates with the repository's release settings into the
# shared target directory, so compiled dependencies are reused.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
export CARGO_PROFILE_RELEASE_DEBUG="${CARGO_PROFILE_RELEASE_DEBUG:-1}"

echo "== node: npm install inside node/ (build from source, dev dependencies)"
(cd node && timeout 900 npm install --no-package-lock)

echo "== node: tsc --noEmit --strict on the TypeScript example"
(cd node && timeout 120 npx tsc -p examples/tsconfig.json --noEmit --strict)

run_suite() { # $1: project dir with statestore installed; $2: the test files (a glob in it)
  local project="$1" pattern="$2"
  mkdir -p "$project/test"
  cp node/test/*.mjs "$project/test/"
  cp node/examples/quickstart.js "$project/"
  (cd "$project" && timeout 60 node quickstart.js >/dev/null && echo "README example: ok")
  # The glob is expanded inside the project (node --test does not expand it on Node 20).
  # shellcheck disable=SC2086
  (cd "$project" && timeout 600 node --test --test-timeout=120000 --test-concurrency=2 $pattern)
}

echo "== node: npm install ./node into an empty project"
mkdir -p "$work/folder"
(cd "$work/folder" && npm init -y >/dev/null && timeout 900 npm install "$root/node")
run_suite "$work/folder" 'test/*.test.mjs'

echo "== node: npm pack, then npm install of the tarball into an empty project"
(cd node && timeout 120 npm pack --loglevel=warn --pack-destination "$work" >/dev/null)
mkdir -p "$work/tarball"
(cd "$work/tarball" && npm init -y >/dev/null && timeout 900 npm install "$work"/statestore-*.tgz)
[ -d "$work/tarball/node_modules/statestore/crate" ] || { echo "the tarball has no Rust sources"; exit 1; }
# The same package built from the packed sources: the README example and the package checks
# (require/import, every export); the whole suite ran on the folder install above.
run_suite "$work/tarball" 'test/package.test.mjs'
echo "== node: all suites passed"
