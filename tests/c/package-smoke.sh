#!/usr/bin/env bash
# Builds tests/c/package_smoke.c and package_smoke.cpp against an installed libstatestore the
# way its README tells users to, and runs them against a state store: scripts/test-c.sh runs it
# on the prebuilt packages (tarball, .deb) with no Rust toolchain on PATH, and (pkg-config mode)
# the C program under valgrind without suppressions. Where
# pkg-config and CMake look is the caller's environment (PKG_CONFIG_PATH, CMAKE_PREFIX_PATH, or
# nothing).
# Usage: package-smoke.sh pkg-config|cmake OUT PORT VERSION   (from the repository root)
set -euo pipefail
mode="$1" out="$2" port="$3" version="$4"
src="$PWD/tests/c"
mkdir -p "$out"
case "$mode" in
  pkg-config)
    gcc -std=c11 -Wall -Wextra -Werror "$src/package_smoke.c" -o "$out/smoke_c" \
      $(pkg-config --cflags --libs statestore)
    g++ -std=c++17 -Wall -Wextra -Werror "$src/package_smoke.cpp" -o "$out/smoke_cpp" \
      $(pkg-config --cflags --libs statestore)
    gcc -std=c11 -Wall -Wextra -Werror "$src/package_smoke.c" -o "$out/smoke_static" \
      $(pkg-config --static --cflags --libs statestore-static)
    if ldd "$out/smoke_static" | grep -q libstatestore; then
      echo "smoke_static loads libstatestore.so" >&2
      exit 1
    fi
    programs=("$out/smoke_c" "$out/smoke_cpp" "$out/smoke_static")
    ;;
  cmake)
    cp "$src/package_smoke.c" "$src/package_smoke.cpp" "$out/"
    cat >"$out/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.16)
project(statestore_package_smoke C CXX)
find_package(statestore $version EXACT CONFIG REQUIRED)
add_executable(smoke_c package_smoke.c)
set_target_properties(smoke_c PROPERTIES C_STANDARD 11 C_EXTENSIONS OFF)
target_compile_options(smoke_c PRIVATE -Wall -Wextra -Werror)
target_link_libraries(smoke_c PRIVATE statestore::statestore)
add_executable(smoke_cpp package_smoke.cpp)
set_target_properties(smoke_cpp PROPERTIES CXX_STANDARD 17)
target_compile_options(smoke_cpp PRIVATE -Wall -Wextra -Werror)
target_link_libraries(smoke_cpp PRIVATE statestore::statestore)
CMAKE
    cmake -S "$out" -B "$out/build" >/dev/null
    cmake --build "$out/build" >/dev/null
    programs=("$out/build/smoke_c" "$out/build/smoke_cpp")
    ;;
  *) echo "usage: package-smoke.sh pkg-config|cmake OUT PORT VERSION" >&2; exit 2 ;;
esac
for program in "${programs[@]}"; do
  "$program" "$port" "$version"
done
if [ "$mode" = pkg-config ]; then
  # A user's leak check of a program that frees everything and calls statestore_shutdown(): no
  # suppressions at all, and nothing definitely or possibly lost. The suppression file installed
  # with the library (for programs that exit while the library works) must exist and load.
  vg=(valgrind --quiet --leak-check=full --errors-for-leak-kinds=definite,possible --error-exitcode=1)
  "${vg[@]}" "$out/smoke_c" "$port" "$version"
  supp="$(pkg-config --variable=valgrind_suppressions statestore)"
  test -f "$supp"
  "${vg[@]}" --suppressions="$supp" "$out/smoke_c" "$port" "$version"
fi
