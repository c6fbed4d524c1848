#!/usr/bin/env bash
# The Node artefacts in dist/, in napi-rs's layout: the root package mqtt-statestore (JavaScript,
# index.d.ts and napi-rs's loader; no native code, no install script, no dependency) with the
# platform package mqtt-statestore-linux-x64-gnu (the prebuilt addon, glibc 2.17) as an optional
# dependency; and the same pair for mqtt-statestore-testing (the local state store's addon,
# which mqtt-statestore/testing loads). Each packed by `npm pack`.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
source scripts/lib/package-tools.sh
export CARGO_TERM_COLOR=never
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false
target=x86_64-unknown-linux-gnu
mkdir -p dist
rm -f dist/mqtt-statestore-*.tgz

# The build tools (@napi-rs/cli) are the package's development dependencies.
(cd node && timeout 600 npm install --no-package-lock --loglevel=error --omit=optional --omit=peer)
napi() { (cd node && timeout 1800 npx --no-install napi "$@"); }

# package DIR (relative to node/): builds its addon for glibc 2.17, with the other artefacts of
# its set (release_build), next to its loader (as `npm run build` does), lays out the platform
# packages in DIR/npm with napi-rs's create-npm-dirs, packs this machine's and the package
# itself.
package() {
  local dir="$1" js=index.js dts=index.d.ts
  [ "$dir" = . ] && { js=native.js; dts=native.d.ts; }
  rm -rf "node/$dir/npm"
  local set=client
  [ "$dir" = . ] || set=testing
  (release_build "$set" "$target"
   napi build --cwd "$dir" --platform --release --target "$target" --js "$js" --dts "$dts")
  napi create-npm-dirs --cwd "$dir" --npm-dir npm
  # The addon into this machine's platform folder; the checkout keeps its copy, as
  # `npm run build` leaves it, so node/ loads in place (the chaos runs and a folder install use
  # it). napi-rs's `artifacts` would want every configured platform's addon at once; the arm64
  # one is scripts/package-arm64.sh's.
  local platform="node/$dir/npm/linux-x64-gnu"
  cp "node/$dir"/*.linux-x64-gnu.node "$platform/"
  (cd "$platform" && npm pack --loglevel=warn --pack-destination "$root/dist" >/dev/null)
  (cd "node/$dir" && npm pack --loglevel=warn --pack-destination "$root/dist" >/dev/null)
}
package .
package testing

# What ships is the client: its addon holds no broker and no server.
bash scripts/lib/check-client-only.sh node/npm/linux-x64-gnu/*.node
# The root packages carry no native code and run nothing at install.
for tarball in dist/mqtt-statestore-"$VERSION".tgz dist/mqtt-statestore-testing-"$VERSION".tgz; do
  if tar -tzf "$tarball" | grep -E '\.node$'; then echo "$tarball: holds native code" >&2; exit 1; fi
  if tar -xzOf "$tarball" package/package.json | grep -qE '"(pre|post)?install"'; then
    echo "$tarball: has an install script" >&2; exit 1
  fi
done
ls -l dist/*.tgz
