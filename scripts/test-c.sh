#!/usr/bin/env bash
# The C ABI's tests, from a fresh clone: installs what it needs (pkg-config, cmake,
# valgrind, g++, libcjson-dev, libuv1-dev via apt; cbindgen 0.29 via cargo), checks that the committed
# header is what cbindgen generates and that each header compiles alone, installs the library
# into a temporary prefix with scripts/install-c.sh (as a user would), builds every C program
# of tests/c with -Wall -Wextra -Werror -std=c11 (C++: -std=c++17) linked dynamically through
# pkg-config and statically, and runs them against a real statestore-server: plain, static,
# under AddressSanitizer and under valgrind memcheck (with only the suppression file installed
# with the library); then the CMake package and the shared scenarios. Ends with "N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
export CARGO_TERM_COLOR=never

# --- tools
missing=()
command -v pkg-config >/dev/null || missing+=(pkg-config)
command -v cmake >/dev/null || missing+=(cmake)
command -v valgrind >/dev/null || missing+=(valgrind)
command -v g++ >/dev/null || missing+=(g++)
[ -f /usr/include/cjson/cJSON.h ] || missing+=(libcjson-dev)
[ -f /usr/include/uv.h ] || missing+=(libuv1-dev)
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ! cbindgen --version 2>/dev/null | grep -q '^cbindgen 0\.29\.'; then
  echo "== installing cbindgen 0.29"
  cargo install cbindgen --version '~0.29' --locked --quiet
fi

work="$(mktemp -d)"
server_pid=""
deb_installed=0
cleanup() {
  if [ "$deb_installed" = 1 ]; then dpkg -r libstatestore >/dev/null 2>&1 || true; fi
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

CHECK_LOGS="$work/logs"
source scripts/lib/checks.sh

# --- header: drift and self-containment
echo "== header"
run "header is what gen-header.sh generates" 120 bash -c "bash bindings/gen-header.sh '$work/statestore.h' && diff -u include/statestore.h '$work/statestore.h'"
cflags=(-std=c11 -Wall -Wextra -Werror -pedantic)
cxxflags=(-std=c++17 -Wall -Wextra -Werror -pedantic)
run "statestore.h alone in C" 30 gcc "${cflags[@]}" -fsyntax-only -I include -x c - <<<'#include "statestore.h"'
run "statestore.h alone in C++" 30 g++ "${cxxflags[@]}" -fsyntax-only -I include -x c++ - <<<'#include "statestore.h"'
run "statestore.hpp alone in C++" 60 g++ "${cxxflags[@]}" -fsyntax-only -I include -x c++ - <<<'#include "statestore.hpp"'

# --- install as a user would
echo "== install into a prefix"
prefix="$work/prefix"
bash scripts/install-c.sh "$prefix" >"$work/logs/install.log" 2>&1 || { cat "$work/logs/install.log"; exit 1; }
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
run "pkg-config finds statestore" 10 pkg-config --exists statestore statestore-static
libdir="$(pkg-config --variable=libdir statestore)"
run "soname is libstatestore.so.0" 10 bash -c "readelf -d '$libdir/libstatestore.so' | grep -q 'SONAME.*libstatestore.so.0'"

# --- the server: the test kit's (statestore-testkit serve), ending with this script
cargo build --quiet -p statestore-server -p statestore-testkit
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
source scripts/lib/testkit-serve.sh
testkit_serve embedded "$target_dir"
# test_connection starts its own server, which it stops and starts.
export STATESTORE_TESTKIT_BIN="${STATESTORE_TESTKIT_BIN:-$target_dir/debug/statestore-testkit}"
server_pid=$TESTKIT_SERVER_PID
port=$TESTKIT_PORT
export STATESTORE_TEST_PORT="$port"
echo "== the test kit's server on port $port"

# --- build the programs
echo "== build"
bin="$work/bin"
mkdir -p "$bin"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
dyn_flags=($(pkg-config --cflags statestore) -I tests/c -DSTATESTORE_TEST_CARGO_VERSION="\"$version\"")
dyn_libs=($(pkg-config --libs statestore) -Wl,-rpath,"$libdir" -lpthread)
static_libs=($(pkg-config --static --libs statestore-static) -lpthread)
programs=()
for src in tests/c/test_*.c; do
  name="$(basename "$src" .c)"
  programs+=("$name")
  run "build $name (dynamic)" 120 gcc "${cflags[@]}" "${dyn_flags[@]}" "$src" -o "$bin/$name" "${dyn_libs[@]}"
  run "build $name (static)" 120 gcc "${cflags[@]}" "${dyn_flags[@]}" "$src" -o "$bin/$name.static" "${static_libs[@]}"
  run "build $name (asan)" 120 gcc "${cflags[@]}" -g -fsanitize=address -fno-omit-frame-pointer "${dyn_flags[@]}" "$src" -o "$bin/$name.asan" "${dyn_libs[@]}"
done
run "build test_cpp (dynamic)" 180 g++ "${cxxflags[@]}" $(pkg-config --cflags statestore) tests/c/test_cpp.cpp -o "$bin/test_cpp" "${dyn_libs[@]}"
run "build test_cpp (static)" 180 g++ "${cxxflags[@]}" $(pkg-config --cflags statestore) tests/c/test_cpp.cpp -o "$bin/test_cpp.static" "${static_libs[@]}"
run "build test_cpp (asan)" 180 g++ "${cxxflags[@]}" -g -fsanitize=address -fno-omit-frame-pointer $(pkg-config --cflags statestore) tests/c/test_cpp.cpp -o "$bin/test_cpp.asan" "${dyn_libs[@]}"
run "static binaries do not load libstatestore.so" 10 bash -c "! ldd '$bin/test_basic.static' | grep -q libstatestore"
programs+=(test_cpp)

# --- run them
echo "== run"
# Only the suppressions installed with the library, as a user would run valgrind.
vg=(valgrind --quiet --error-exitcode=97 --leak-check=full --errors-for-leak-kinds=definite,indirect
    --suppressions="$(pkg-config --variable=valgrind_suppressions statestore)"
    --show-leak-kinds=definite,indirect --fair-sched=yes --child-silent-after-fork=yes)
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=98"
for name in "${programs[@]}"; do
  [ -x "$bin/$name" ] || continue
  run "$name" 120 "$bin/$name"
  [ -x "$bin/$name.static" ] && run "$name (static)" 120 "$bin/$name.static"
  [ -x "$bin/$name.asan" ] && run "$name (asan)" 180 "$bin/$name.asan"
  # 50 million calls would take hours under valgrind; the ASan run checks its memory.
  [ "$name" = test_handle_reuse ] && continue
  STATESTORE_TEST_SLOWDOWN=8 run "$name (valgrind)" 480 "${vg[@]}" "$bin/$name"
done

# --- CMake package
echo "== cmake"
cmake_dir="$work/cmake-app"
mkdir -p "$cmake_dir"
cat >"$cmake_dir/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(statestore_cmake_check C CXX)
find_package(statestore 0.1 CONFIG REQUIRED)
add_executable(app_shared app.c)
target_link_libraries(app_shared PRIVATE statestore::statestore)
add_executable(app_static app.c)
target_link_libraries(app_static PRIVATE statestore::statestore_static)
add_executable(app_cpp app.cpp)
set_target_properties(app_cpp PROPERTIES CXX_STANDARD 17)
target_link_libraries(app_cpp PRIVATE statestore::statestore)
CMAKE
cat >"$cmake_dir/app.c" <<'APP'
#include <statestore.h>
#include <stdio.h>
int main(void) {
    statestore_options *o = NULL;
    if (statestore_options_new(&o) != STATESTORE_OK) return 1;
    statestore_options_free(o);
    printf("libstatestore %s\n", statestore_version());
    return 0;
}
APP
printf '#include <statestore.hpp>\nint main() { statestore::Options o; o.port(1883); return 0; }\n' >"$cmake_dir/app.cpp"
run "cmake find_package(statestore) builds" 240 bash -c "cmake -S '$cmake_dir' -B '$cmake_dir/build' -DCMAKE_PREFIX_PATH='$prefix' >/dev/null && cmake --build '$cmake_dir/build' >/dev/null"
run "cmake app (shared) runs" 30 "$cmake_dir/build/app_shared"
run "cmake app (static) runs" 30 "$cmake_dir/build/app_static"
run "cmake app (C++) runs" 30 "$cmake_dir/build/app_cpp"

# --- every C and C++ block of the docs (the README, the package README and every guide in
# docs/), read from the docs themselves (so they cannot drift), compiled with the README's line
# and run against the local store: each must end by itself with status 0
source scripts/lib/readme-blocks.sh
examples=0
for readme in README.md bindings/README.md docs/*.md; do
  for lang in c cpp; do
    readme_blocks "$readme" "$lang" "$bin/readme-${readme//\//_}"
  done
done
for source in "$bin"/readme-*.c "$bin"/readme-*.cpp; do
  [ -f "$source" ] || continue
  examples=$((examples + 1))
  name="$(basename "$source")"
  case "$source" in
    *.c) compile=(cc "$source") ;;
    *) compile=(g++ -std=c++17 "$source") ;;
  esac
  run "$name builds" 120 bash -c "${compile[*]} -o '$bin/${name%.*}' \$(pkg-config --cflags --libs statestore) -Wl,-rpath,'$libdir'"
  run "$name runs and ends" 60 "$bin/${name%.*}" "$port"
done
# The README, bindings/README.md and docs/c.md hold a C program each, docs/c.md a C++ one too.
[ "$examples" -ge 4 ] && pass "docs examples found ($examples)" || fail "docs examples found ($examples, expected at least 4 C and C++ blocks)"

# --- the event-loop examples outside the docs (the epoll one is a block of docs/c.md)
for example in bindings/examples/*.c; do
  name="$(basename "$example" .c)"
  run "$name builds (with libuv)" 120 bash -c "gcc ${cflags[*]} '$example' -o '$bin/$name' \$(pkg-config --cflags --libs statestore libuv) -Wl,-rpath,'$libdir'"
  run "$name runs and ends" 60 "$bin/$name" "$port"
  STATESTORE_TEST_SLOWDOWN=8 run "$name (valgrind)" 240 "${vg[@]}" "$bin/$name" "$port"
done

# --- shared scenarios
if [ -f tests/c/scenarios.c ] && ls tests/scenarios/*.json >/dev/null 2>&1; then
  echo "== scenarios"
  run "build scenario runner" 120 gcc "${cflags[@]}" "${dyn_flags[@]}" tests/c/scenarios.c -o "$bin/scenarios" "${dyn_libs[@]}" -lcjson
  for flavour in blocking async; do
    run "scenarios ($flavour)" 900 "$bin/scenarios" "$flavour" tests/scenarios
  done
  # The runner's own check: a scenario with a deliberately wrong expectation must make it exit
  # non-zero, naming the scenario and the step (a runner that accepts anything would pass
  # every scenario above).
  selftest="$work/selftest-scenarios"
  mkdir -p "$selftest/selftest"
  cp tests/scenarios/ops.json "$selftest/"
  cat >"$selftest/selftest/wrong_value.json" <<'JSON'
{"name": "selftest/wrong_value", "description": "must fail", "clients": ["a"], "steps": [
  {"op": "set", "client": "a", "key": "k", "value": "v", "expect": {"applied": true}},
  {"op": "get", "client": "a", "key": "k", "expect": {"value": "w"}}]}
JSON
  cat >"$selftest/selftest/wrong_error.json" <<'JSON'
{"name": "selftest/wrong_error", "description": "must fail", "clients": ["a"], "steps": [
  {"op": "set", "client": "a", "key": "", "value": "v", "expect": {"error": "TIMEOUT"}}]}
JSON
  for flavour in blocking async; do
    run "scenario runner fails on a wrong expectation ($flavour)" 120 bash -c \
      "! '$bin/scenarios' $flavour '$selftest' >'$work/selftest-$flavour.out' 2>&1 \
        && grep -q 'FAIL selftest/wrong_value step 1' '$work/selftest-$flavour.out' \
        && grep -q 'FAIL selftest/wrong_error step 0' '$work/selftest-$flavour.out'"
  done
fi

# --- the prebuilt packages (scripts/package-c.sh), used with no Rust toolchain on PATH
echo "== prebuilt packages"
tarball="dist/libstatestore-$version-x86_64-linux-gnu.tar.gz"
debfile="dist/libstatestore_${version}_amd64.deb"
if [ ! -f "$tarball" ] || [ ! -f "$debfile" ]; then
  start=$SECONDS
  run "package-c.sh builds the packages" 2400 bash scripts/package-c.sh
  echo "   package step: $((SECONDS - start)) s"
else
  echo "   using the packages already in dist/"
fi
ls -l "$tarball" "$debfile" 2>/dev/null | awk '{print "   " $5 " bytes  " $NF}'
run "tarball is at most 5 MB" 5 test "$(stat -c %s "$tarball" 2>/dev/null || echo 99999999)" -le 5000000
no_rust_path="$(tr ':' '\n' <<<"$PATH" | grep -vx -e "$HOME/.cargo/bin" -e "${CARGO_HOME:-$HOME/.cargo}/bin" | paste -sd:)"
# A user's shell: nothing of this script's environment (PKG_CONFIG_PATH points at the source
# install above), and no cargo or rustc.
as_user=(env -i HOME="$HOME" PATH="$no_rust_path" LANG=C.UTF-8)
run "no cargo or rustc on the user's PATH" 5 "${as_user[@]}" bash -c '! command -v cargo && ! command -v rustc'
unpacked="$work/unpacked/libstatestore-$version-x86_64-linux-gnu"
mkdir -p "$work/unpacked"
run "tarball unpacks into libstatestore-$version-x86_64-linux-gnu/" 30 bash -c "
  tar -xzf '$tarball' -C '$work/unpacked' && [ \"\$(ls '$work/unpacked')\" = libstatestore-$version-x86_64-linux-gnu ] &&
  cd '$unpacked' && test -f lib/libstatestore.so.$version -a -L lib/libstatestore.so.0 -a -L lib/libstatestore.so &&
  test -f lib/libstatestore.a -a -f include/statestore.h -a -f include/statestore.hpp &&
  test -f lib/pkgconfig/statestore.pc -a -f lib/pkgconfig/statestore-static.pc &&
  test -f share/statestore/valgrind.supp &&
  test -f lib/cmake/statestore/statestore-config.cmake -a -f lib/cmake/statestore/statestore-config-version.cmake"
so="$unpacked/lib/libstatestore.so.$version"
run "tarball: soname libstatestore.so.0" 10 bash -c "readelf -d '$so' | grep -q 'SONAME.*\[libstatestore.so.0\]'"
run "tarball: no debug info" 10 bash -c "! readelf -S '$so' '$unpacked/lib/libstatestore.a' | grep -q '\.debug_info'"
run "tarball: needs glibc 2.17 at most" 10 bash -c "
  newest=\$(objdump -T '$so' | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
  echo \"newest glibc symbol: \$newest\"; [ \"\$(printf '%s\n' \"\$newest\" 2.17 | sort -V | tail -1)\" = 2.17 ]"
run "tarball: the same headers as the repository" 10 diff -r include "$unpacked/include" -x README.md
tarball_env=(PKG_CONFIG_PATH="$unpacked/lib/pkgconfig" CMAKE_PREFIX_PATH="$unpacked" LD_LIBRARY_PATH="$unpacked/lib")
run "tarball: pkg-config builds (C, C++, static) run" 300 "${as_user[@]}" "${tarball_env[@]}" bash tests/c/package-smoke.sh pkg-config "$work/smoke/tar-pc" "$port" "$version"
run "tarball: CMake find_package builds run" 300 "${as_user[@]}" "${tarball_env[@]}" bash tests/c/package-smoke.sh cmake "$work/smoke/tar-cmake" "$port" "$version"
# The docs' C lines, as written, in a user's shell (HOME a folder of their own): the README's
# and docs/c.md's install, build and valgrind lines and docs/c.md's CMake lines, each
# document's in a folder with its C program as app.c and the downloaded packages, with a
# state store on localhost:1883 (in a network of their own, where that port is free).
source scripts/lib/readme-blocks.sh
prepare() {
  export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}" RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
  export HOME="$DOC_DIR/home"
  unset PKG_CONFIG_PATH LD_LIBRARY_PATH CMAKE_PREFIX_PATH
  ln -sf "$DOC_ROOT"/dist/* .
  # The README's tarball line says where pkg-config and the loader look.
  [ "$1" != README.md ] || export PKG_CONFIG_PATH="$PWD/libstatestore-$version-x86_64-linux-gnu/lib/pkgconfig" \
    LD_LIBRARY_PATH="$PWD/libstatestore-$version-x86_64-linux-gnu/lib"
  first_line "$STATESTORE_SERVER_BIN" --listen 127.0.0.1:1883 --log-level warn >/dev/null
}
run_cmake() { # the block in the CMakeLists.txt of a project of app.c, the prefix its comment names
  mkdir -p cmake-app
  { printf 'cmake_minimum_required(VERSION 3.16)\nproject(app C)\nadd_executable(app app.c)\n'; cat; } >cmake-app/CMakeLists.txt
  cp app.c cmake-app/
  cmake -S cmake-app -B cmake-app/build -DCMAKE_PREFIX_PATH="$HOME/.local" >/dev/null
  cmake --build cmake-app/build >/dev/null
  cmake-app/build/app
}
export -f prepare run_cmake run_doc_blocks
STATESTORE_SERVER_BIN="$target_dir/debug/statestore-server" version="$version" SHOW_TAIL=1 \
  run "the docs' C install and build lines run as written" 600 bash -c 'run_doc_blocks c --private-network'
run "deb: control fields" 10 bash -c "
  [ \"\$(dpkg-deb -f '$debfile' Package Version Architecture)\" = \"\$(printf 'Package: libstatestore\nVersion: $version\nArchitecture: amd64')\" ] &&
  dpkg-deb -f '$debfile' Depends | grep -q 'libc6 (>= 2.17)' && [ -n \"\$(dpkg-deb -f '$debfile' Maintainer)\" ]"
if [ "$(id -u)" != 0 ]; then
  echo "SKIP deb install checks: dpkg -i needs root"
elif dpkg -s libstatestore >/dev/null 2>&1; then
  echo "SKIP deb install checks: libstatestore is already installed on this machine"
else
  deb_installed=1
  run "deb: dpkg -i" 120 dpkg -i "$debfile"
  run "deb: ld.so knows libstatestore.so.0" 10 bash -c "ldconfig -p | grep -q 'libstatestore.so.0 '"
  run "deb: system pkg-config builds (C, C++, static) run" 300 "${as_user[@]}" bash tests/c/package-smoke.sh pkg-config "$work/smoke/deb-pc" "$port" "$version"
  run "deb: system CMake find_package builds run" 300 "${as_user[@]}" bash tests/c/package-smoke.sh cmake "$work/smoke/deb-cmake" "$port" "$version"
  run "deb: dpkg -r removes every file" 120 bash -c "
    dpkg -r libstatestore >/dev/null && ! dpkg -s libstatestore >/dev/null 2>&1 &&
    ! ls /usr/lib/x86_64-linux-gnu/libstatestore* /usr/include/statestore.h /usr/share/statestore 2>/dev/null &&
    ! ldconfig -p | grep -q libstatestore"
  deb_installed=0
fi

echo
summary
