# Sourced by scripts/install-c.sh and scripts/package-c.sh: the one description of the installed
# C library (what goes where, the pkg-config and CMake files), so the source install, the
# tarball and the .deb cannot drift apart.
# shellcheck shell=bash

# What a static link needs besides libstatestore.a (from `cargo rustc --print
# native-static-libs` on Linux/glibc).
C_PRIVATE_LIBS="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"

# c_layout DEST LIBDIR PC_PREFIX SO ARCHIVE VERSION
#   Installs into the folder DEST (the prefix, DESTDIR included): LIBDIR/libstatestore.so.VERSION
#   (+ .so.0 and .so links), LIBDIR/libstatestore.a, include/statestore.h(pp),
#   LIBDIR/pkgconfig/statestore.pc and statestore-static.pc, LIBDIR/cmake/statestore/, and
#   share/statestore/valgrind.supp (the suppressions for users' valgrind runs, named by the
#   .pc files' valgrind_suppressions variable).
#   LIBDIR is relative to the prefix ("lib", or "lib/x86_64-linux-gnu" for Debian).
#   PC_PREFIX is the .pc files' prefix: an absolute path, or "relocatable" for one computed
#   from the .pc file's place (a tarball unpacked anywhere). The CMake package always computes
#   its prefix from its own place. Debug info is stripped ($STRIP, default strip: the archive
#   carries the std's debug info even from a release build), and so is the LLVM bitcode that
#   Rust embeds in archived objects for its own LTO (.llvmbc, .llvmcmd), which no C linker
#   reads. Runs from the repository root.
c_layout() {
  local dest="$1" libdir="$2" pc_prefix="$3" so="$4" archive="$5" version="$6"
  local soname up_from_pc="" up_from_cmake="" _
  # The links are named after the soname build.rs gave the library.
  soname="$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
  if [ -z "$soname" ]; then
    echo "c_layout: $so has no SONAME" >&2
    return 1
  fi
  # Paths back to the prefix: one ".." per component of LIBDIR, plus pkgconfig/ or
  # cmake/statestore/.
  for _ in ${libdir//\// }; do
    up_from_pc="$up_from_pc/.."
  done
  up_from_cmake="../..$up_from_pc"
  up_from_pc="..$up_from_pc"
  [ "$pc_prefix" = relocatable ] && pc_prefix="\${pcfiledir}/$up_from_pc"

  local lib="$dest/$libdir"
  install -d "$lib/pkgconfig" "$lib/cmake/statestore" "$dest/include"
  install -m 0755 "$so" "$lib/libstatestore.so.$version"
  ln -sfn "libstatestore.so.$version" "$lib/$soname"
  ln -sfn "$soname" "$lib/libstatestore.so"
  install -m 0644 "$archive" "$lib/libstatestore.a"
  install -m 0644 include/statestore.h include/statestore.hpp "$dest/include/"
  install -d "$dest/share/statestore"
  install -m 0644 bindings/valgrind.supp "$dest/share/statestore/valgrind.supp"
  "${STRIP:-strip}" --strip-debug "$lib/libstatestore.so.$version"
  "${STRIP:-strip}" --strip-debug -R .llvmbc -R .llvmcmd "$lib/libstatestore.a"

  local name description libs
  for name in statestore statestore-static; do
    if [ "$name" = statestore ]; then
      description="C client of the MQTT broker state store (Azure IoT Operations)"
      libs="-L\${libdir} -lstatestore"
    else
      # -lstatestore picks the shared library when both are installed: this one names the
      # archive.
      description="C client of the MQTT broker state store, linked statically (libstatestore.a)"
      libs="\${libdir}/libstatestore.a $C_PRIVATE_LIBS"
    fi
    cat >"$lib/pkgconfig/$name.pc" <<PC
prefix=$pc_prefix
libdir=\${prefix}/$libdir
includedir=\${prefix}/include
valgrind_suppressions=\${prefix}/share/statestore/valgrind.supp

Name: $name
Description: $description
Version: $version
Cflags: -I\${includedir}
Libs: $libs
PC
    if [ "$name" = statestore ]; then
      echo "Libs.private: $C_PRIVATE_LIBS" >>"$lib/pkgconfig/$name.pc"
    fi
  done

  local cmake_libs="${C_PRIVATE_LIBS//-l/}"
  sed -e "s/@VERSION@/$version/g" -e "s/@PRIVATE_LIBS@/${cmake_libs// /;}/g" \
    -e "s|@LIBDIR@|$libdir|g" -e "s|@PREFIX_FROM_HERE@|$up_from_cmake|g" \
    bindings/cmake/statestore-config.cmake.in >"$lib/cmake/statestore/statestore-config.cmake"
  sed -e "s/@VERSION@/$version/g" bindings/cmake/statestore-config-version.cmake.in \
    >"$lib/cmake/statestore/statestore-config-version.cmake"
}
