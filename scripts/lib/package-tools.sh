# Sourced by the packaging scripts: the release tools, installed from the registries into
# target/package-tools (a virtual environment, created once): maturin (Python wheels),
# ziglang (the linker that targets glibc 2.17, so one build runs on every glibc since),
# cargo-zigbuild (cargo with that linker, for the C library and the Node addon) and auditwheel
# (checks a wheel's manylinux policy). After sourcing: $PKG_PY, $PKG_BIN on PATH, $VERSION.
# shellcheck shell=bash
PKG_TOOLS="${PKG_TOOLS:-$PWD/target/package-tools}"
PKG_PY="$PKG_TOOLS/bin/python"
if [ ! -x "$PKG_PY" ]; then
  python3 -m venv "$PKG_TOOLS"
fi
if ! "$PKG_PY" -c 'import ziglang, auditwheel' 2>/dev/null \
  || [ ! -x "$PKG_TOOLS/bin/maturin" ] || [ ! -x "$PKG_TOOLS/bin/cargo-zigbuild" ]; then
  echo "== installing maturin, ziglang, cargo-zigbuild, auditwheel into $PKG_TOOLS"
  "$PKG_TOOLS/bin/pip" install -q --disable-pip-version-check \
    "maturin>=1.16,<2" "ziglang==0.17.1" "cargo-zigbuild>=0.24,<0.25" "auditwheel>=6.8,<7"
fi
PKG_BIN="$PKG_TOOLS/bin"
export PATH="$PKG_BIN:$PATH"
# The one version of every artefact: the workspace's.
VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
export VERSION
# Where release_build builds each set of release artefacts.
RELEASE_BUILD_DIR="${RELEASE_BUILD_DIR:-${CARGO_TARGET_DIR:-$PWD/target}/package}"

# zig_linker TARGET GLIBC: the environment under which plain `cargo build`, `maturin build` and
# `napi build` link TARGET (a Rust triple) against glibc GLIBC through zig, by cargo-zigbuild's
# own `zig cc` (which mends the arguments rustc gives a linker). One wrapper at one path for
# every build: cargo fingerprints the linker, and `maturin --zig` and `cargo zigbuild` each make
# a wrapper of their own, so their builds could not share a compiled crate.
zig_linker() {
  local target="$1" glibc="$2" zig_target script
  zig_target="$(sed 's/-unknown-/-/' <<<"$target").$glibc"
  local wrapper="$PKG_TOOLS/zig/$target.$glibc/cc"
  script="$(printf '#!/bin/sh\nexec "%s" zig cc -- -g -fno-sanitize=all -target %s "$@"' \
    "$PKG_BIN/cargo-zigbuild" "$zig_target")"
  if [ "$(cat "$wrapper" 2>/dev/null)" != "$script" ]; then
    mkdir -p "$(dirname "$wrapper")"
    echo "$script" >"$wrapper"
    chmod +x "$wrapper"
  fi
  # The variables set, so that a build can leave them out (`env -u`).
  ZIG_LINKER_VARS=("CARGO_TARGET_$(tr 'a-z-' 'A-Z_' <<<"$target")_LINKER" "CC_$(tr '-' '_' <<<"$target")")
  export "${ZIG_LINKER_VARS[0]}=$wrapper" "${ZIG_LINKER_VARS[1]}=$wrapper"
}

# release_build SET TARGET: the build environment of one set of release artefacts for TARGET:
# `client` (the Python module, the Node addon and the C library) or `testing` (the testing
# modules of Python and Node). A set builds in one target directory ($RELEASE_BUILD_DIR/SET),
# with one profile and one linker, so each crate its artefacts share is compiled once
# (scripts/lib/check-shared-build.sh checks that). The client set has fat LTO, for size: each
# dependency is compiled to bitcode only, and each library's machine code is made once, from
# the code it reaches.
release_build() {
  local set="$1" target="$2"
  zig_linker "$target" 2.17
  export CARGO_TARGET_DIR="$RELEASE_BUILD_DIR/$set"
  if [ "$set" = client ]; then
    export CARGO_PROFILE_RELEASE_LTO=fat
  else
    unset CARGO_PROFILE_RELEASE_LTO
  fi
}
