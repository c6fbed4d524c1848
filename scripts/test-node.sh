#!/usr/bin/env bash
# The Node packages' tests, from a fresh clone (Node and npm must be there; Mosquitto via apt if
# missing):
#   1. the packages a release publishes (dist/, from scripts/package.sh, run here if missing) are
#      published to a throwaway local registry (verdaccio) and installed BY NAME into an empty
#      project, `npm install mqtt-statestore mqtt-statestore-testing`, with no cargo or rustc on
#      PATH: no build may run, and npm may print no EBADENGINE warning; there the README
#      example and the whole test suite run (node --test, a deadline per test, the shared
#      scenarios in Promise and Sync flavours);
#   2. a contributor's path: `npm install` and `npm run build:debug` inside node/, then
#      `npm install <checkout>/node` into an empty project outside the repository, and the
#      README example there;
#   3. `tsc --noEmit --strict` on the TypeScript example and on the addons' generated
#      declarations (native.d.ts, testing/index.d.ts), tsc over a file of deliberate type
#      mistakes (each must be reported) and correct uses (node/typecheck/check.mjs), index.d.ts
#      against the addon's generated native.d.ts and exports (node/typecheck/backing.mjs), and
#      clippy/rustfmt of the crates.
# Ends with node --test's "# pass N / # fail N" for each suite.
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

echo "== node: rustfmt and clippy of the addons"
cargo fmt -p statestore-node -p statestore-node-convert -p statestore-node-testing --check
cargo clippy -p statestore-node -p statestore-node-convert -p statestore-node-testing --all-targets --quiet -- -D warnings

echo "== node: the test kit's servers for the Mosquitto tests (statestore-testkit serve)"
cargo build -p statestore-testkit --quiet
export STATESTORE_TESTKIT_BIN="${CARGO_TARGET_DIR:-$root/target}/debug/statestore-testkit"
export STATESTORE_REPO="$root"

version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
tarballs=(mqtt-statestore mqtt-statestore-linux-x64-gnu mqtt-statestore-testing mqtt-statestore-testing-linux-x64-gnu)
for name in "${tarballs[@]}"; do
  [ -f "dist/$name-$version.tgz" ] || { bash scripts/package.sh node; break; }
done

work="$(mktemp -d -t statestore-node-XXXXXX)"
source scripts/lib/npm-registry.sh
source scripts/lib/user-path.sh
trap 'registry_stop; rm -rf "$work"' EXIT

run_suite() { # $1: project dir with the packages installed; $2: the test files (a glob in it)
  local project="$1" pattern="$2"
  mkdir -p "$project/test" "$project/typecheck"
  cp node/test/*.mjs "$project/test/"
  # What index.d.ts declares, read by the TypeScript checker: the test's own tool, found in
  # node/'s development dependencies (NODE_PATH), not in the user's project.
  cp node/typecheck/declared.mjs "$project/typecheck/"
  cp node/examples/quickstart.js "$project/"
  (cd "$project" && PATH="$USER_PATH" timeout 60 node quickstart.js >/dev/null && echo "README example: ok")
  # The glob is expanded inside the project (node --test does not expand it on Node 20).
  # shellcheck disable=SC2086
  (cd "$project" && PATH="$USER_PATH" NODE_PATH="$root/node/node_modules" timeout 900 node --test --test-timeout=120000 --test-concurrency=2 $pattern)
}

echo "== node: the release packages from a local registry, installed by name (no cargo, no rustc)"
registry_start "$work/registry"
for name in "${tarballs[@]}"; do registry_publish "$root/dist/$name-$version.tgz"; done
# The arm64 platform package too, when built: the registry then offers both platforms, as the
# public one does, and npm must pick this machine's.
arm64_package="$root/dist/mqtt-statestore-linux-arm64-gnu-$version.tgz"
[ ! -f "$arm64_package" ] || registry_publish "$arm64_package"
mkdir -p "$work/user"
(cd "$work/user" && npm init -y >/dev/null)
start=$(date +%s%N)
(cd "$work/user" && PATH="$USER_PATH" timeout 300 npm install --userconfig "$NPMRC" \
  mqtt-statestore mqtt-statestore-testing 2>&1) | tee "$work/install.log"
echo "== installed in $((($(date +%s%N) - start) / 1000000)) ms"
if grep -q EBADENGINE "$work/install.log"; then echo "npm warned EBADENGINE" >&2; exit 1; fi
if [ -d "$work/user/node_modules/mqtt-statestore-linux-arm64-gnu" ]; then
  echo "npm installed the arm64 platform package on $(uname -m)" >&2; exit 1
fi
for name in mqtt-statestore mqtt-statestore-linux-x64-gnu mqtt-statestore-testing mqtt-statestore-testing-linux-x64-gnu; do
  installed="$(node -p "require('$work/user/node_modules/$name/package.json').version")"
  [ "$installed" = "$version" ] || { echo "$name: installed $installed, expected $version" >&2; exit 1; }
done
(cd "$work/user" && PATH="$USER_PATH" node -e '
const t = process.hrtime.bigint()
const statestore = require("mqtt-statestore")
const ms = Number(process.hrtime.bigint() - t) / 1e6
if (statestore.version !== process.argv[1]) throw new Error(`version ${statestore.version}`)
console.log(`== mqtt-statestore ${statestore.version}: require ${ms.toFixed(0)} ms`)' "$version")
run_suite "$work/user" 'test/*.test.mjs'
# The docs' npm lines, as written, each document's in an empty project, with the local
# registry as the public one.
source scripts/lib/readme-blocks.sh
prepare() {
  npm init -y >/dev/null
  export npm_config_userconfig="$NPMRC" npm_config_loglevel=error PATH="$USER_PATH"
}
run_doc_blocks node
registry_stop

echo "== node: a contributor's path: build inside node/, npm install <checkout>/node elsewhere"
# Each step's output goes to a log, printed with the step's name and the free disk space if the
# step fails; a step that succeeds prints nothing.
step() { # $1: what the step does; the rest: the command
  local what="$1" code=0
  shift
  "$@" >"$work/step.log" 2>&1 || code=$?
  if [ "$code" -ne 0 ]; then
    echo "== node: contributor's path: '$what' failed (exit $code); its output:" >&2
    tail -n 80 "$work/step.log" >&2
    df -h "$root" "$work" >&2 || true
    exit 1
  fi
}
step "npm install in node/" bash -c 'cd node && timeout 600 npm install --no-package-lock --loglevel=error --omit=optional --omit=peer'
step "npm run build:debug in node/" bash -c 'cd node && timeout 1800 npm run --silent build:debug'
mkdir -p "$work/contributor"
step "npm install <checkout>/node" bash -c 'cd "$1" && npm init -y && timeout 300 npm install --loglevel=error "$2"' _ "$work/contributor" "$root/node"
cp node/examples/quickstart.js "$work/contributor/"
step "the README example (quickstart.js)" bash -c 'cd "$1" && timeout 60 node quickstart.js' _ "$work/contributor"
echo "README example from the checkout: ok"
# node/ goes back to the release addons scripts/package.sh left there (the chaos runs load it).
for addon in node/npm/linux-x64-gnu/*.node; do [ -f "$addon" ] && cp "$addon" node/; done
for addon in node/testing/npm/linux-x64-gnu/*.node; do [ -f "$addon" ] && cp "$addon" node/testing/; done

echo "== node: tsc --noEmit --strict on the TypeScript example"
(cd node && timeout 120 npx tsc -p examples/tsconfig.json --noEmit --strict)
echo "== node: tsc --noEmit --strict on the addons' generated native.d.ts and testing/index.d.ts"
(cd node && timeout 120 npx tsc -p typecheck/native.tsconfig.json)
echo "== node: tsc --strict reports every mistake of typecheck/mistakes.ts, accepts typecheck/correct.ts"
(cd node && timeout 180 node typecheck/check.mjs)
echo "== node: index.d.ts promises no call the addon (and its generated native.d.ts) lacks"
(cd node && timeout 120 node typecheck/backing.mjs)
echo "== node: all suites passed"
