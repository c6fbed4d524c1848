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
stage="$root/target/npm"
rm -rf "$stage"
mkdir -p dist "$stage"
rm -f dist/mqtt-statestore-*.tgz

# The build tools (@napi-rs/cli) are the package's development dependencies.
(cd node && timeout 600 npm install --no-package-lock --loglevel=error --omit=optional --omit=peer)
napi() { (cd node && timeout 1800 npx --no-install napi "$@"); }

# package DIR (relative to node/), BINARY: builds its addon for glibc 2.17, lays out the platform
# package with napi-rs's create-npm-dirs + artifacts, packs both.
package() {
  local dir="$1" npm_dir="$stage/$2"
  napi build --cwd "$dir" --platform --release --target "$target.2.17" --cross-compile --strip \
    --js "$( [ "$dir" = . ] && echo native.js || echo index.js)" \
    --dts "$( [ "$dir" = . ] && echo native.d.ts || echo index.d.ts)" --output-dir "$stage/$2-out"
  # The loader and typings napi wrote belong to the root package.
  if [ "$dir" = . ]; then cp "$stage/$2-out/native.js" "$stage/$2-out/native.d.ts" node/
  else cp "$stage/$2-out/index.js" "$stage/$2-out/index.d.ts" "node/$dir/"; fi
  # The checkout gets the same addon, as `npm run build` would leave it: node/ then loads in
  # place (the chaos runs and a folder install use it).
  cp "$stage/$2-out"/*.node "node/$dir/"
  napi create-npm-dirs --cwd "$dir" --npm-dir "$npm_dir"
  napi artifacts --cwd "$dir" --output-dir "$stage/$2-out" --npm-dir "$npm_dir"
  for platform in "$npm_dir"/*/; do
    ls "$platform"*.node >/dev/null || { echo "no addon in $platform" >&2; exit 1; }
    (cd "$platform" && npm pack --loglevel=warn --pack-destination "$root/dist" >/dev/null)
  done
  (cd "node/$dir" && npm pack --loglevel=warn --pack-destination "$root/dist" >/dev/null)
}
package . client
package testing testing

# What ships is the client: its addon holds no broker and no server.
bash scripts/lib/check-client-only.sh "$stage"/client/*/*.node
# The root packages carry no native code and run nothing at install.
for tarball in dist/mqtt-statestore-"$VERSION".tgz dist/mqtt-statestore-testing-"$VERSION".tgz; do
  if tar -tzf "$tarball" | grep -E '\.node$'; then echo "$tarball: holds native code" >&2; exit 1; fi
  if tar -xzOf "$tarball" package/package.json | grep -qE '"(pre|post)?install"'; then
    echo "$tarball: has an install script" >&2; exit 1
  fi
done
ls -l dist/*.tgz
