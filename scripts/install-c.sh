#!/usr/bin/env bash
# Builds libstatestore (release) and installs it for C and C++ users:
#   PREFIX/lib/libstatestore.so.0.1.0 (+ .so.0, .so links), PREFIX/lib/libstatestore.a,
#   PREFIX/include/statestore.h, PREFIX/include/statestore.hpp,
#   PREFIX/lib/pkgconfig/statestore.pc (and statestore-static.pc),
#   PREFIX/lib/cmake/statestore/statestore-config.cmake (+ version file).
# Usage: bash scripts/install-c.sh [PREFIX]     (default /usr/local; DESTDIR is honoured;
#        STATESTORE_KEEP_DEBUG=1 keeps the debug info)
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="${1:-/usr/local}"
case "$prefix" in /*) ;; *) prefix="$PWD/$prefix" ;; esac
dest="${DESTDIR:-}$prefix"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
major="${version%%.*}"

cargo build --release --quiet -p statestore-c
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
out="$target_dir/release"

# What a static link needs besides libstatestore.a (from `cargo rustc --print
# native-static-libs` on Linux/glibc).
private_libs="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"

install -d "$dest/lib/pkgconfig" "$dest/lib/cmake/statestore" "$dest/include"
install -m 0755 "$out/libstatestore.so" "$dest/lib/libstatestore.so.$version"
ln -sf "libstatestore.so.$version" "$dest/lib/libstatestore.so.$major"
ln -sf "libstatestore.so.$major" "$dest/lib/libstatestore.so"
install -m 0644 "$out/libstatestore.a" "$dest/lib/libstatestore.a"
install -m 0644 include/statestore.h include/statestore.hpp "$dest/include/"
# The release profile keeps debug info for the project's own backtraces; installed libraries
# go without it (a fifth of the size) unless STATESTORE_KEEP_DEBUG=1.
if [ "${STATESTORE_KEEP_DEBUG:-0}" != 1 ] && command -v strip >/dev/null; then
  strip --strip-debug "$dest/lib/libstatestore.so.$version" "$dest/lib/libstatestore.a"
fi

cat > "$dest/lib/pkgconfig/statestore.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: statestore
Description: C client of the MQTT broker state store (Azure IoT Operations)
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -lstatestore
Libs.private: $private_libs
PC
# -lstatestore picks the shared library when both are installed: this one names the archive.
cat > "$dest/lib/pkgconfig/statestore-static.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: statestore-static
Description: C client of the MQTT broker state store, linked statically (libstatestore.a)
Version: $version
Cflags: -I\${includedir}
Libs: \${libdir}/libstatestore.a $private_libs
PC

cmake_libs="${private_libs//-l/}"
sed -e "s/@VERSION@/$version/g" -e "s/@PRIVATE_LIBS@/${cmake_libs// /;}/g" \
  bindings/cmake/statestore-config.cmake.in > "$dest/lib/cmake/statestore/statestore-config.cmake"
sed -e "s/@VERSION@/$version/g" bindings/cmake/statestore-config-version.cmake.in \
  > "$dest/lib/cmake/statestore/statestore-config-version.cmake"
if [ -z "${DESTDIR:-}" ] && [ "$prefix" = /usr/local ] && command -v ldconfig >/dev/null; then
  ldconfig 2>/dev/null || true
fi
echo "installed libstatestore $version into $dest"
