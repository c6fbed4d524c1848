#!/usr/bin/env bash
# check-shared-build.sh MARKER DIR...: fails if a crate (one version of it) was compiled more
# than once since the file MARKER was made, in the release target directories DIR
# (scripts/lib/package-tools.sh's release_build). The artefacts of a set share their
# dependencies' builds only while they ask for the same features of them; when a dependency
# changes what it asks for, every crate above it is compiled once per artefact, and the release
# build takes minutes longer.
#   check-shared-build.sh --selftest: shows that the check fails on a crate built twice and
#   passes on two versions of one crate (the test command runs it).
set -euo pipefail
if [ "${1:-}" = --selftest ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  touch -d "1 minute ago" "$tmp/marker" # older than every file below, whatever the clock's grain
  deps="$tmp/set/x86_64-unknown-linux-gnu/release/deps"
  mkdir -p "$deps"
  crate() { # crate HASH SOURCE-FOLDER
    touch "$deps/libsyn-$1.rlib"
    echo "$deps/syn-$1.d: $2/src/lib.rs $2/src/expr.rs" >"$deps/syn-$1.d"
  }
  crate 0123456789abcdef /registry/src/index/syn-2.0.119
  crate 1123456789abcdef /registry/src/index/syn-3.0.9
  bash "$0" "$tmp/marker" "$tmp/set" || { echo "selftest: two versions of syn taken for one built twice" >&2; exit 1; }
  crate 2123456789abcdef /registry/src/index/syn-3.0.9
  if bash "$0" "$tmp/marker" "$tmp/set" 2>/dev/null; then
    echo "selftest: syn 3.0.9 built twice, and the check passed" >&2; exit 1
  fi
  echo "check-shared-build.sh selftest: passed"
  exit 0
fi
marker="$1"
shift
exec python3 - "$marker" "$@" <<'PY'
import collections, os, re, sys

marker = os.stat(sys.argv[1]).st_mtime_ns
status = 0
for top in sys.argv[2:]:
    seen = collections.defaultdict(list)
    for deps, _, files in os.walk(top):
        if not deps.endswith("/release/deps"):
            continue
        for name in files:
            m = re.fullmatch(r"lib(.+)-([0-9a-f]{16})\.rlib", name)
            if not m or os.stat(os.path.join(deps, name)).st_mtime_ns < marker:
                continue
            # The crate's own source folder (registry name-version, or a workspace path), from
            # the first source file of its dep-info.
            with open(os.path.join(deps, f"{m[1]}-{m[2]}.d")) as info:
                source = info.readline().split(": ", 1)[1].split()[0]
            package = os.path.dirname(source)
            if os.path.basename(package) == "src":
                package = os.path.dirname(package)
            seen[(deps, package)].append(m[2])
    twice = sorted(key for key, hashes in seen.items() if len(hashes) > 1)
    if twice:
        status = 1
        print(f"check-shared-build.sh: compiled more than once in {top} (their users ask for "
              "different features of them):", file=sys.stderr)
        for deps, package in twice:
            print(f"   {package} ({os.path.relpath(deps, top)})", file=sys.stderr)
        print("   Compare each artefact's features per crate, e.g. with `cargo +nightly build --release\n"
              "   -p CRATE --unit-graph -Z unstable-options`, and ask for the missing ones in the other\n"
              "   crates of the set, as bindings/Cargo.toml does for futures and syn.", file=sys.stderr)
sys.exit(status)
PY
