#!/usr/bin/env bash
# Sets the one version of every artefact: the workspace's Cargo.toml and the manifests that
# repeat it (scripts/check-versions.sh lists them). Usage: bash scripts/set-version.sh 0.2.0
set -euo pipefail
cd "$(dirname "$0")/.."
new="${1:?usage: set-version.sh NEW_VERSION}"
old="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
sed -i "0,/^version = \"$old\"/s//version = \"$new\"/" Cargo.toml
sed -i "s/\"$old\"/\"$new\"/g" node/package.json node/testing/package.json
sed -i "s/==$old\"/==$new\"/g" python/pyproject.toml python/testing/pyproject.toml
cargo update --workspace --quiet
bash bindings/gen-header.sh   # the header's STATESTORE_VERSION macros
bash scripts/check-versions.sh
