#!/usr/bin/env bash
# check-shared-build.sh MARKER DIR...: fails if a crate was compiled twice since the file
# MARKER was made, in the release target directories DIR (scripts/lib/package-tools.sh's
# release_build). The artefacts of a set share their dependencies' builds only while they ask
# for the same features of them; when a dependency changes what it asks for, every crate above
# it is compiled once per artefact, and the release build takes minutes longer.
set -euo pipefail
marker="$1"
shift
status=0
for dir in "$@"; do
  [ -d "$dir" ] || continue
  # lib<crate>-<16 hex digits>.rlib: one per crate, features and target, in each deps folder.
  twice="$(find "$dir" -path '*/release/deps/lib*.rlib' -newer "$marker" -printf '%h %f\n' \
    | sed -E 's/-[0-9a-f]{16}\.rlib$//' | sort | uniq -d)"
  if [ -n "$twice" ]; then
    echo "check-shared-build.sh: compiled more than once in $dir (their users ask for different features):" >&2
    sed 's/^/   /' <<<"$twice" >&2
    echo "   Compare the features per crate of each artefact's build, e.g. with" >&2
    echo "   cargo +nightly build --release -p CRATE --unit-graph -Z unstable-options, and ask for the" >&2
    echo "   missing ones in the other crates, as bindings/Cargo.toml does for futures and syn." >&2
    status=1
  fi
done
exit "$status"
