#!/usr/bin/env bash
# Smoke test of the bindings benchmark: runs `scripts/bench-bindings.sh --quick`
# into a temporary folder (it installs what it needs: the venv, the Node folder, libstatestore
# and the C driver, under target/bench-bindings/) and checks the results. No timing is
# asserted: only that every flavour produced numbers (throughput and latency of each cell,
# ns per boundary call, a memory trace, the loop and batch times of the batch items, on
# loopback and through the delaying proxy) or was reported unavailable with a reason, that no
# item failed, and that bindings.json, bindings.svg and bindings.md were written.
#
# BENCH_REQUIRE=c,python,node (optional) also fails when one of those languages is
# unavailable. BENCH_PROFILE=smoke runs the smoke profile instead of --quick.
# Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
profile="${BENCH_PROFILE:-quick}"

# The smoke profile checks that every flavour runs and counts, not how fast: its harness is a
# debug build, which reuses the test run's compiled dependencies (a release build costs minutes).
[ "$profile" != smoke ] || export BENCH_CARGO_PROFILE="${BENCH_CARGO_PROFILE:-dev}"
echo "== scripts/bench-bindings.sh --$profile (results in $out)"
timeout 1800 bash scripts/bench-bindings.sh "--$profile" --out "$out" >"$out/stdout.txt" 2>"$out/stderr.txt"
status=$?
tail -n 60 "$out/stdout.txt"

python3 - "$out" "$status" "${BENCH_REQUIRE:-}" <<'PY'
import json, os, sys

out, status, require = sys.argv[1], int(sys.argv[2]), [r for r in sys.argv[3].split(",") if r]
passed = failed = 0

def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name}{': ' + detail if detail else ''}")

check("bench-bindings.sh exits 0", status == 0, f"exit status {status}; stderr tail:\n" + "".join(open(os.path.join(out, "stderr.txt")).readlines()[-20:]))
path = os.path.join(out, "bindings.json")
if not os.path.exists(path):
    check("bindings.json written", False)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1)
doc = json.load(open(path))
check("bindings.json has a profile and targets", bool(doc.get("profile")) and isinstance(doc.get("targets"), list))
svg = os.path.join(out, "bindings.svg")
check("bindings.svg written", os.path.exists(svg) and open(svg).read(4) == "<svg")
md = os.path.join(out, "bindings.md")
check("bindings.md has the table", os.path.exists(md) and "| broker | op | size | in flight |" in open(md).read())

flavours = {f["flavour"]: f for f in doc["flavours"]}
expected = ["rust-async", "rust-blocking", "c-async", "c-dispatch", "c-blocking", "python-async", "python-sync",
            "python-paho", "node-promise", "node-sync", "node-mqttjs"]
for name in expected:
    f = flavours.get(name)
    check(f"{name}: probed", f is not None and (bool(f.get("version")) or bool(f.get("unavailable"))),
          "neither a version nor a reason")
for name in ("rust-async", "rust-blocking"):
    check(f"{name}: available", flavours.get(name, {}).get("unavailable") is None)
language = {"c": ["c-async", "c-dispatch", "c-blocking"], "python": ["python-async", "python-sync"],
            "node": ["node-promise", "node-sync"]}
for lang in require:
    for name in language.get(lang, []):
        check(f"{name}: available (BENCH_REQUIRE)", flavours.get(name, {}).get("unavailable") is None,
              str(flavours.get(name, {}).get("unavailable")))

by_flavour = {}
for s in doc["scenarios"]:
    by_flavour.setdefault(s["flavour"], []).append(s)
for name in expected:
    items = by_flavour.get(name, [])
    bad = []
    measured = 0
    for s in items:
        if s.get("unavailable"):
            if not s["unavailable"].strip():
                bad.append(f"{s['name']}: unavailable without a reason")
            continue
        if s.get("error") or s.get("errors") or not s.get("ops"):
            bad.append(f"{s['name']}: {s.get('error') or 'no operations'}")
            continue
        if s["kind"] == "throughput":
            if not (s["ops_per_sec"] > 0 and s["p50_us"] > 0 and s["p99_us"] >= s["p50_us"]):
                bad.append(f"{s['name']}: figures {s['ops_per_sec']}, {s['p50_us']}, {s['p99_us']}")
            elif not isinstance(s.get("ctx_switches_per_op"), (int, float)):
                bad.append(f"{s['name']}: no ctx_switches_per_op")
        elif s["kind"] == "boundary":
            if not (s.get("ns_per_call") or 0) > 0:
                bad.append(f"{s['name']}: no ns per call")
        elif s["kind"] == "memory":
            m = s.get("memory") or {}
            if not m.get("samples") or "second_half_growth_mb" not in m:
                bad.append(f"{s['name']}: no memory trace")
        elif s["kind"] == "batch":
            if not all((s.get(f) or 0) > 0 for f in ("loop_s", "batch_s", "batch_speedup")):
                bad.append(f"{s['name']}: loop_s {s.get('loop_s')}, batch_s {s.get('batch_s')}, "
                           f"batch_speedup {s.get('batch_speedup')}")
        elif s["kind"] == "idle":
            if not (s.get("elapsed_s") or 0) > 0 or not isinstance(s.get("idle_cpu_ms"), (int, float)):
                bad.append(f"{s['name']}: idle window {s.get('elapsed_s')}, CPU {s.get('idle_cpu_ms')}")
        measured += 1
    available = flavours.get(name, {}).get("unavailable") is None
    if name not in ("python-paho", "node-mqttjs"):
        # Every profile runs get_many and set_many, on loopback and with 1 ms added each way
        # (the smoke profile each op once: get on loopback, set with the delay).
        batches = [s["name"].split("/")[2:4] for s in items if s.get("kind") == "batch"]
        missing = [want for want in ("get", "set", "0ms", "1ms") if not any(want in b for b in batches)]
        check(f"{name}: batch items, get and set, on loopback and with 1 ms added each way", not missing,
              "missing " + ", ".join(missing))
        check(f"{name}: an idle item", any(s.get("kind") == "idle" for s in items))
    check(f"{name}: every item measured or unavailable with a reason ({measured}/{len(items)} measured)",
          not bad and len(items) > 0 and (measured > 0 or not available), "; ".join(bad[:5]))
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
