# Sourced by scripts/package-arm64.sh, scripts/test-arm64.sh and scripts/setup.sh: what building
# and running the aarch64 (arm64) artefacts on an x86_64 machine needs, all from Debian's
# packages, kept in $ARM64_HOME (target/aarch64 unless CARGO_TARGET_DIR says otherwise):
#   arm64_host_tools    apt-installs qemu-user, the aarch64 cross binutils/gcc and libc, and
#                       the LLVM library the private compiler loads (once; root or sudo)
#   arm64_rustc         sets $ARM64_RUSTC: a Rust compiler with the aarch64 standard library.
#                       rustup cannot fetch a target here; Debian's rustc-web with its
#                       libstd-rust-web-dev for amd64 and arm64 is unpacked (dpkg -x, never
#                       installed: the host's rustup toolchain stays the only rustc on PATH)
#                       into one folder, which is then the compiler's own sysroot for both.
#   arm64_userland      sets $ARM64_ROOT: Debian's arm64 python3.11 and nodejs with the
#                       libraries they load, unpacked, for `qemu-aarch64 -L $ARM64_ROOT`
# The .debs are downloaded once into $ARM64_HOME/debs and reused.
# shellcheck shell=bash
ARM64_HOME="${ARM64_HOME:-${CARGO_TARGET_DIR:-$PWD/target}/aarch64}"

_arm64_sudo() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
# Waits for another apt-get (another part of the run installing its tools) instead of failing.
_arm64_apt() { _arm64_sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 "$@"; }

arm64_host_tools() {
  local missing=()
  command -v qemu-aarch64 >/dev/null || missing+=(qemu-user)
  command -v aarch64-linux-gnu-gcc >/dev/null || missing+=(gcc-aarch64-linux-gnu)
  [ -e /usr/aarch64-linux-gnu/lib/libc.so.6 ] || missing+=(libc6-dev-arm64-cross)
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "== dpkg --add-architecture arm64 (for apt-get download of arm64 packages)"
    _arm64_sudo dpkg --add-architecture arm64
    _arm64_apt update -qq
  fi
  local llvm
  llvm="$(_arm64_llvm_package)"
  [ -n "$llvm" ] && ! dpkg -s "$llvm" >/dev/null 2>&1 && missing+=("$llvm")
  if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing ${missing[*]}"
    _arm64_apt update -qq
    _arm64_apt install -y -qq --no-install-recommends \
      "${missing[@]}" >/dev/null
  fi
}

# The versioned runtime package of Debian's rustc-web (libstd-rust-web-1.96 for rustc 1.96).
_arm64_std_package() {
  apt-cache depends libstd-rust-web-dev 2>/dev/null | sed -n 's/^ *Depends: \(libstd-rust-web-[0-9.]*\)$/\1/p' | head -1
}

# The LLVM library that runtime links to (libllvm22): a plain shared library, installed by apt.
_arm64_llvm_package() {
  local std
  std="$(_arm64_std_package)"
  [ -n "$std" ] && apt-cache depends "$std" 2>/dev/null | sed -n 's/^ *Depends: \(libllvm[0-9]*\)$/\1/p' | head -1
}

# _arm64_unpack DEST PACKAGE...: apt-get download (into the cache) and dpkg -x into DEST.
_arm64_unpack() {
  local dest="$1" package file
  shift
  mkdir -p "$ARM64_HOME/debs" "$dest"
  for package in "$@"; do
    # apt-get download names files PACKAGE_VERSION_ARCH.deb; PACKAGE may carry ":arm64".
    local name="${package%%:*}" arch="${package#*:}"
    [ "$arch" = "$package" ] && arch="$(dpkg --print-architecture)"
    file="$(ls "$ARM64_HOME/debs/${name}_"*"_$arch.deb" "$ARM64_HOME/debs/${name}_"*"_all.deb" 2>/dev/null | head -1 || true)"
    if [ -z "$file" ]; then
      (cd "$ARM64_HOME/debs" && timeout 600 apt-get download -qq "$package" 2>&1 | grep -v unsandboxed >&2 || true)
      file="$(ls "$ARM64_HOME/debs/${name}_"*"_$arch.deb" "$ARM64_HOME/debs/${name}_"*"_all.deb" 2>/dev/null | head -1 || true)"
      [ -n "$file" ] || { echo "arm64: apt-get download $package failed" >&2; return 1; }
    fi
    dpkg -x "$file" "$dest"
  done
}

arm64_rustc() {
  local root="$ARM64_HOME/rustc" std
  ARM64_RUSTC="$ARM64_HOME/bin/rustc"
  if [ ! -x "$ARM64_RUSTC" ] || ! "$ARM64_RUSTC" --print target-libdir --target aarch64-unknown-linux-gnu >/dev/null 2>&1; then
    std="$(_arm64_std_package)"
    [ -n "$std" ] || { echo "arm64: no libstd-rust-web-dev in apt's lists (apt-get update?)" >&2; return 1; }
    echo "== unpacking Debian's rustc-web with the amd64 and arm64 standard libraries into $root"
    rm -rf "$root"
    _arm64_unpack "$root" rustc-web "$std" libstd-rust-web-dev libstd-rust-web-dev:arm64
    # rustc finds its sysroot next to itself (root/usr/lib/rustlib/{x86_64,aarch64}-*), and
    # its driver library through this path: the package has no RUNPATH, it expects /usr/lib.
    mkdir -p "$ARM64_HOME/bin"
    printf '#!/bin/sh\nLD_LIBRARY_PATH="%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "%s" "$@"\n' \
      "$root/usr/lib/$(gcc -print-multiarch)" "$root/usr/bin/rustc" >"$ARM64_RUSTC"
    chmod +x "$ARM64_RUSTC"
  fi
  "$ARM64_RUSTC" --print target-libdir --target aarch64-unknown-linux-gnu >/dev/null \
    || { echo "arm64: $ARM64_RUSTC has no aarch64 standard library" >&2; return 1; }
  export ARM64_RUSTC
}

arm64_userland() {
  ARM64_ROOT="$ARM64_HOME/userland"
  if [ ! -x "$ARM64_ROOT/usr/bin/node" ] || [ ! -x "$ARM64_ROOT/usr/bin/python3.11" ]; then
    echo "== unpacking Debian's arm64 python3.11 and nodejs into $ARM64_ROOT"
    rm -rf "$ARM64_ROOT"
    # The interpreters and what they load at start; nodejs also reads the JavaScript of three
    # of its built-in modules from Debian's node-* packages.
    _arm64_unpack "$ARM64_ROOT" libc6:arm64 libgcc-s1:arm64 libstdc++6:arm64 zlib1g:arm64 \
      libexpat1:arm64 libffi8:arm64 libssl3:arm64 python3.11-minimal:arm64 \
      libpython3.11-minimal:arm64 libpython3.11-stdlib:arm64 libuv1:arm64 libbrotli1:arm64 \
      libc-ares2:arm64 libnghttp2-14:arm64 libicu72:arm64 libnode108:arm64 nodejs:arm64 \
      node-cjs-module-lexer node-acorn node-undici
  fi
  export ARM64_ROOT
}
