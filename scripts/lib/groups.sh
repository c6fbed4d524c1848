# Sourced by test-all.sh and package.sh: parts of a run side by side, to use both cores where a
# part leaves one idle (valgrind runs a program on one core, tests wait for the network, a
# fat-LTO link is single-threaded).
#
# in_groups KIND GROUP...: each GROUP is a space-separated list of parts, run one after another
# as `bash scripts/KIND-PART.sh`; the groups run at the same time. A group's output goes to a
# log, printed whole when the group ends (the groups' lines never interleave); the start and end
# of each part are printed as they happen. A failed part ends its group, the other groups run
# on. Returns 1 if a part failed. Appends "part N s" for each part that ended to GROUP_TIMES.
# shellcheck shell=bash
GROUP_TIMES=()

in_groups() {
  local kind="$1"
  shift
  local dir pid status=0 group
  dir="$(mktemp -d)"
  local -A parts_of=()
  for group in "$@"; do
    (
      set +e
      for part in $group; do
        start=$SECONDS
        echo "== $kind $part: started" >&3
        bash "scripts/$kind-$part.sh" >>"$dir/$part.log" 2>&1
        code=$?
        took="$part $((SECONDS - start)) s"
        echo "$took" >>"$dir/times"
        if [ "$code" -ne 0 ]; then
          echo "== $kind $part: FAILED (exit $code) after $((SECONDS - start)) s" >&3
          echo "$part (exit $code)" >>"$dir/failed"
          exit 1
        fi
        echo "== $kind $part: passed in $((SECONDS - start)) s" >&3
      done
    ) 3>&1 &
    parts_of[$!]="$group"
  done
  while [ ${#parts_of[@]} -gt 0 ]; do
    pid=""
    wait -n -p pid "${!parts_of[@]}" || status=1
    [ -n "$pid" ] || break
    for part in ${parts_of[$pid]}; do
      [ -f "$dir/$part.log" ] || continue
      echo "== output of $kind $part"
      cat "$dir/$part.log"
    done
    unset "parts_of[$pid]"
  done
  # Repeated last, so that the end of a long log says which part failed.
  [ ! -f "$dir/failed" ] || echo "== $kind: failed: $(paste -sd, "$dir/failed")" >&2
  [ -f "$dir/times" ] && mapfile -t -O "${#GROUP_TIMES[@]}" GROUP_TIMES <"$dir/times"
  rm -rf "$dir"
  return "$status"
}
