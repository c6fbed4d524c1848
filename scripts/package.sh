#!/usr/bin/env bash
# Builds every release artefact into dist/, from a clean checkout, with tools it installs from
# the registries (scripts/lib/package-tools.sh):
#   Python  mqtt_statestore-V-cp39-abi3-manylinux_2_17_x86_64.whl (+ sdist), and the testing
#           extra's mqtt_statestore_testing wheel (+ sdist)
#   Node    mqtt-statestore-V.tgz, mqtt-statestore-linux-x64-gnu-V.tgz, and the testing
#           package's mqtt-statestore-testing-V.tgz, mqtt-statestore-testing-linux-x64-gnu-V.tgz
#   C       libstatestore-V-x86_64-linux-gnu.tar.gz, libstatestore_V_amd64.deb
#   arm64   the client's artefacts for aarch64-linux-gnu (scripts/package-arm64.sh):
#           mqtt_statestore-V-cp39-abi3-manylinux_2_17_aarch64.whl,
#           mqtt-statestore-linux-arm64-gnu-V.tgz, libstatestore-V-aarch64-linux-gnu.tar.gz,
#           libstatestore_V_arm64.deb
# then dist/SHA256SUMS. Every native artefact links against glibc 2.17 (zig as the linker).
# Usage: bash scripts/package.sh [python|node|c|arm64 ...]   (default: python node c; the parts
# run one after another, arm64 after node, whose platform folders it fills)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
# One after another: each build keeps both cores busy, and two side by side took longer than
# one after the other. The arm64 artefacts are not in the default set: the test run builds them
# in its test stage (scripts/test-arm64.sh), beside the other parts, which leave a core idle.
source scripts/lib/package-tools.sh
source scripts/lib/groups.sh
bash scripts/check-versions.sh
mkdir -p dist
marker="$(mktemp)"
trap 'rm -f "$marker"' EXIT
if [ $# -gt 0 ]; then
  in_groups package "$*"
else
  in_groups package "python node c"
fi
# The x86_64 artefacts of each set shared their dependencies' builds (release_build).
bash scripts/lib/check-shared-build.sh "$marker" "$RELEASE_BUILD_DIR/client" "$RELEASE_BUILD_DIR/testing"

(cd dist && find . -maxdepth 2 -type f ! -name SHA256SUMS -printf '%P\n' | sort | xargs sha256sum > SHA256SUMS)
echo "== dist/"
(cd dist && find . -maxdepth 2 -type f ! -name SHA256SUMS -printf '%P\t%s bytes\n' | sort)
echo "== package timings: ${GROUP_TIMES[*]}"
