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
