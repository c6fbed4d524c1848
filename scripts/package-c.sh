#!/usr/bin/env bash
# Prebuilt C library packages, from the repository root:
#   dist/libstatestore-VERSION-ARCH-linux-gnu.tar.gz   (relocatable: unpack anywhere, point
#                                                      PKG_CONFIG_PATH or CMAKE_PREFIX_PATH at it)
#   dist/libstatestore_VERSION_DEBARCH.deb               (installs under /usr, multiarch libdir)
# Both hold the same files (scripts/lib/c-layout.sh, as scripts/install-c.sh installs them).
# The library is linked through zig against glibc 2.17, so it loads on any glibc since.
# Usage: bash scripts/package-c.sh [RUST_TARGET]     (default x86_64-unknown-linux-gnu; or
#        aarch64-unknown-linux-gnu, built beforehand by scripts/package-arm64.sh, which names the
#        folder holding libstatestore.so and .a in STATESTORE_C_BUILT)
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
target="${1:-x86_64-unknown-linux-gnu}"
case "$target" in
  x86_64-unknown-linux-gnu) arch=x86_64; deb_arch=amd64; binutils="" ;;
  # The host's binutils read and strip only x86 objects: Debian's cross binutils do the rest.
  aarch64-unknown-linux-gnu) arch=aarch64; deb_arch=arm64; binutils=aarch64-linux-gnu- ;;
  *) echo "package-c.sh: unsupported target '$target' (x86_64- or aarch64-unknown-linux-gnu)" >&2; exit 2 ;;
esac
export STRIP="${binutils}strip"
glibc=2.17
triplet="$arch-linux-gnu"

# The tools live next to the build output, so a shared CARGO_TARGET_DIR shares them too.
export PKG_TOOLS="${PKG_TOOLS:-${CARGO_TARGET_DIR:-$root/target}/package-tools}"
source scripts/lib/package-tools.sh
source scripts/lib/c-layout.sh

echo "== libstatestore $VERSION for $target (glibc $glibc)"
start=$SECONDS
if [ -n "${STATESTORE_C_BUILT:-}" ]; then
  out="$STATESTORE_C_BUILT"
else
  # Built with the other client artefacts (release_build): fat LTO keeps only the code the
  # exported functions reach, and internalises every Rust symbol: libstatestore.a goes from
  # 40 MB (every object of std and each dependency) to 6 MB, the tarball from 12.5 MB to under
  # 4 MB, and the .so shrinks by a sixth.
  release_build client "$target"
  if ! cargo build --release --quiet -p statestore-c --target "$target"; then
    # Only the linker differs: the host's gcc links against the host's glibc, so the result needs
    # that glibc or newer (the .deb's Depends below says which).
    echo "package-c.sh: WARNING: linking through zig failed; linking with the host linker instead" >&2
    env -u "${ZIG_LINKER_VARS[0]}" -u "${ZIG_LINKER_VARS[1]}" \
      cargo build --release --quiet -p statestore-c --target "$target"
  fi
  target_dir="$CARGO_TARGET_DIR"
  out="$target_dir/$target/release"
fi
echo "   built in $((SECONDS - start)) s"

# The newest glibc symbol version the library uses is the glibc it needs.
needs_glibc="$("${binutils}objdump" -T "$out/libstatestore.so" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)"
echo "   needs glibc >= $needs_glibc"
depends="libc6 (>= $needs_glibc)"
# zig links its own unwinder; the host linker links libgcc_s.
if readelf -d "$out/libstatestore.so" | grep -q 'NEEDED.*libgcc_s'; then
  depends="$depends, libgcc-s1 | libgcc1"
fi

mkdir -p dist
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
# Reproducible archives: file times from the last commit.
epoch="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}"

# --- tarball: prefix = the top folder, .pc and CMake files relative to themselves
name="libstatestore-$VERSION-$triplet"
c_layout "$stage/$name" lib relocatable "$out/libstatestore.so" "$out/libstatestore.a" "$VERSION"
install -m 0644 bindings/README.md "$stage/$name/README.md"
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
  -cf - "$name" | gzip -9n >"dist/$name.tar.gz"

# --- .deb: /usr, libdir /usr/lib/TRIPLET (on the default search paths of ld.so, pkg-config
# and CMake on Debian and Ubuntu)
deb="$stage/deb"
c_layout "$deb/usr" "lib/$triplet" /usr "$out/libstatestore.so" "$out/libstatestore.a" "$VERSION"
install -d "$deb/usr/share/doc/libstatestore" "$deb/DEBIAN"
install -m 0644 bindings/README.md "$deb/usr/share/doc/libstatestore/README.md"
cat >"$deb/DEBIAN/control" <<CONTROL
Package: libstatestore
Version: $VERSION
Architecture: $deb_arch
Maintainer: ${DEB_MAINTAINER:-statestore maintainers <statestore@example.invalid>}
Installed-Size: $(du -sk --exclude=DEBIAN "$deb" | cut -f1)
Depends: $depends
Section: libdevel
Priority: optional
Description: C client of the MQTT broker state store (Azure IoT Operations)
 libstatestore.so and libstatestore.a with statestore.h and the C++17 layer
 statestore.hpp, found by pkg-config (statestore, statestore-static) and by
 CMake's find_package(statestore).
CONTROL
# ld.so finds multiarch libraries through its cache: refresh it after install and removal.
echo "activate-noawait ldconfig" >"$deb/DEBIAN/triggers"
find "$deb" -exec touch -h -d "@$epoch" {} +
dpkg-deb --build --root-owner-group -Zxz "$deb" "dist/libstatestore_${VERSION}_$deb_arch.deb" >/dev/null

echo "== artefacts"
for f in "dist/$name.tar.gz" "dist/libstatestore_${VERSION}_$deb_arch.deb"; do
  printf '   %-50s %8s bytes (%s)\n' "$f" "$(stat -c %s "$f")" "$(du -h "$f" | cut -f1)"
done
