//! The checker: reads `run.json` and the writers' logs of a run directory and judges every
//! promise (see `tests/chaos/README.md`, "What is checked").

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde_json::{json, Value};

/// A call may overrun its timeout by this much (scheduling on a loaded machine) before it
/// counts as a hang.
pub const HANG_SLACK_MS: u64 = 2000;
/// A writer's resident memory may grow by this much between the second quarter of the run
/// and the last one.
pub const MEMORY_GROWTH_KIB: u64 = 12 * 1024;

/// What went wrong, per check; empty lists everywhere means the run kept every promise.
#[derive(Debug, Default)]
pub struct Verdict {
    pub figures: BTreeMap<String, u64>,
    pub failures: BTreeMap<&'static str, Vec<String>>,
    pub notes: Vec<String>,
}

impl Verdict {
    fn fail(&mut self, check: &'static str, what: String) {
        self.failures.entry(check).or_default().push(what);
    }

    fn add(&mut self, figure: &str, n: u64) {
        *self.figures.entry(figure.to_string()).or_default() += n;
    }

    fn touch(&mut self, check: &'static str) {
        self.failures.entry(check).or_default();
    }

    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.failures.values().all(Vec::is_empty)
    }
}

/// The parts of a fencing token that order it: wall clock, then counter, then node.
fn token_key(token: &str) -> (u64, u64, String) {
    let mut parts = token.splitn(3, ':');
    let wall = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let counter = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    (wall, counter, parts.next().unwrap_or("").to_string())
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// Codes that are not a clear answer to a fault: a bug somewhere.
const UNCLEAR: &[&str] = &[
    "INTERNAL",
    "RUNTIME",
    "UNEXPECTED_PAYLOAD",
    "UNKNOWN_SERVICE_ERROR",
];

/// One SET of a writer's own key.
struct Write {
    value: String,
    /// acked: applied and acknowledged; maybe: outcome unknown; failed: definitely not applied.
    status: &'static str,
}

/// Judges one writer's own keys against `finals` (the ring's final state): every acknowledged
/// write is present unless a later write (acknowledged or maybe) replaced it, every read saw
/// the last acknowledged write or a later one, nothing else ever appears.
fn check_own_keys(who: &str, records: &[Value], finals: &Value, verdict: &mut Verdict) {
    let mut writes: HashMap<String, Vec<Write>> = HashMap::new();
    for record in records.iter().filter(|r| r["t"] == "op") {
        let key = record["key"].as_str().unwrap_or("").to_string();
        match record["op"].as_str() {
            Some("set") => {
                let status = if record["ok"] == true && record["applied"] == true {
                    "acked"
                } else if record["unknown"] == true {
                    "maybe"
                } else {
                    "failed"
                };
                verdict.add(&format!("writes_{status}"), 1);
                let history = writes.entry(key).or_default();
                // What came before an acknowledged write can no longer be the key's value:
                // keep the history from the last acknowledged write on (bounded memory).
                if status == "acked" {
                    let keep_from = history.len().saturating_sub(3);
                    history.drain(..keep_from);
                    history.retain(|w| w.status != "maybe");
                }
                history.push(Write {
                    value: record["value"].as_str().unwrap_or("").to_string(),
                    status,
                });
            }
            Some("get") if record["ok"] == true => {
                let history = writes.get(&key).map(Vec::as_slice).unwrap_or(&[]);
                if !allowed(history, record["value"].as_str()) {
                    verdict.fail(
                        "reads_see_acknowledged_writes",
                        format!(
                            "{who}: read of {key} returned {} after writes {}",
                            record["value"],
                            describe(history)
                        ),
                    );
                }
            }
            _ => {}
        }
    }
    for (key, history) in &writes {
        let last = finals.get(key).and_then(Value::as_str);
        if !allowed(history, last) {
            verdict.fail(
                "acknowledged_writes_present",
                format!(
                    "{who}: {key} ends as {last:?} after writes {}",
                    describe(history)
                ),
            );
        }
    }
}

/// Whether `value` may be the key's state after `history` (in order): the last acknowledged
/// write's value or that of a later write whose outcome is unknown; with no acknowledged
/// write, absent or any write whose outcome is unknown.
fn allowed(history: &[Write], value: Option<&str>) -> bool {
    let last_acked = history.iter().rposition(|w| w.status == "acked");
    let later = &history[last_acked.map_or(0, |i| i + 1)..];
    let maybe = |v: &str| later.iter().any(|w| w.status == "maybe" && w.value == v);
    match (last_acked, value) {
        (None, None) => true,
        (Some(_), None) => false,
        (Some(i), Some(v)) => history[i].value == v || maybe(v),
        (None, Some(v)) => maybe(v),
    }
}

fn describe(history: &[Write]) -> String {
    let tail: Vec<String> = history
        .iter()
        .rev()
        .take(4)
        .map(|w| format!("{}({})", w.value, w.status))
        .collect();
    format!(
        "[... {}]",
        tail.into_iter().rev().collect::<Vec<_>>().join(", ")
    )
}

/// Every call ended within its bound, with success or a clear error.
fn check_calls(who: &str, records: &[Value], verdict: &mut Verdict) {
    for record in records.iter().filter(|r| r["t"] == "op") {
        verdict.add("operations", 1);
        let took = u(&record["end"]).saturating_sub(u(&record["start"]));
        let bound = u(&record["timeout_ms"]);
        verdict.add("max_overrun_ms", 0);
        let overrun = took.saturating_sub(bound);
        let figure = verdict.figures.entry("max_overrun_ms".into()).or_default();
        *figure = (*figure).max(overrun);
        if took > bound + HANG_SLACK_MS {
            verdict.fail(
                "calls_end_within_timeout",
                format!(
                    "{who}: {} {} took {took} ms (bound {bound} ms)",
                    record["op"], record["key"]
                ),
            );
        }
        if let Some(code) = record["code"].as_str() {
            if code != "OK" {
                verdict.add(&format!("errors_{code}"), 1);
            }
            if UNCLEAR.contains(&code) {
                verdict.fail(
                    "errors_are_clear",
                    format!(
                        "{who}: {} ended with {code}: {}",
                        record["op"], record["message"]
                    ),
                );
            }
        }
    }
}

/// One lock holding: token, acquired, ended, who, how it ended.
type Hold = ((u64, u64, String), u64, u64, String, String);

/// The fenced counter and the lock holdings of one ring.
/// What the lock check needs from every writer of a ring, gathered one log at a time.
#[derive(Default)]
struct LockRecords {
    /// Acknowledged increments: token, value written, writer.
    acked: Vec<((u64, u64, String), u64, String)>,
    unknown: u64,
    holds: Vec<Hold>,
}

impl LockRecords {
    fn collect(&mut self, who: &str, records: &[Value], verdict: &mut Verdict) {
        for record in records {
            match record["t"].as_str() {
                Some("incr") => match record["outcome"].as_str() {
                    Some("ok") => self.acked.push((
                        token_key(record["token"].as_str().unwrap_or("")),
                        u(&record["new"]),
                        who.to_string(),
                    )),
                    Some("unknown") => self.unknown += 1,
                    _ => verdict.add("increments_refused", 1),
                },
                Some("hold") => self.holds.push((
                    token_key(record["token"].as_str().unwrap_or("")),
                    u(&record["acq"]),
                    u(&record["end"]),
                    who.to_string(),
                    record["end_how"].as_str().unwrap_or("").to_string(),
                )),
                _ => {}
            }
        }
    }
}

fn check_lock(
    ring: &str,
    records: LockRecords,
    finals: &Value,
    faults: &[Value],
    verdict: &mut Verdict,
) {
    let LockRecords {
        mut acked,
        unknown,
        mut holds,
    } = records;
    let a = acked.len() as u64;
    verdict.add("increments_acked", a);
    verdict.add("increments_unknown", unknown);
    verdict.add("lock_holdings", holds.len() as u64);
    let final_text = finals.get("chaos/counter").and_then(Value::as_str);
    let counter: Option<u64> = match final_text {
        None => Some(0),
        Some(text) => text.parse().ok(),
    };
    verdict.touch("fenced_counter");
    match counter {
        Some(f) if a <= f && f <= a + unknown => {}
        _ => verdict.fail(
            "fenced_counter",
            format!("{ring}: counter ends at {final_text:?} with {a} acknowledged and {unknown} unknown increments"),
        ),
    }
    // Fencing: the service accepts a fenced write only with a token no older than the key's,
    // so acknowledged increments in token order wrote strictly increasing values. A repeat
    // is a lost update (two holders read the same value), a decrease a stale holder's write.
    acked.sort();
    verdict.touch("no_overlapping_holders");
    for pair in acked.windows(2) {
        let ((t1, v1, w1), (t2, v2, w2)) = (&pair[0], &pair[1]);
        if v2 <= v1 {
            verdict.fail(
                "no_overlapping_holders",
                format!("{ring}: {w1} wrote {v1} with token {t1:?}, then {w2} wrote {v2} with the later token {t2:?}"),
            );
        }
    }
    // Tokens: one per holding, and a holding that began after another ended has a larger one.
    holds.sort_by_key(|h| h.1);
    let mut seen: HashMap<(u64, u64, String), String> = HashMap::new();
    for hold in &holds {
        if let Some(other) = seen.insert(hold.0.clone(), hold.3.clone()) {
            verdict.fail(
                "fencing_tokens_unique_and_ordered",
                format!(
                    "{ring}: token {:?} handed to {other} and to {}",
                    hold.0, hold.3
                ),
            );
        }
    }
    verdict.touch("fencing_tokens_unique_and_ordered");
    // A holding that began after others ended has a larger token than all of them (a sweep
    // over the holdings in order of their end).
    let mut by_end: Vec<&Hold> = holds.iter().collect();
    by_end.sort_by_key(|h| h.2);
    let mut ended = 0;
    let mut newest_ended: Option<&Hold> = None;
    for hold in &holds {
        while ended < by_end.len() && by_end[ended].2 < hold.1 {
            if newest_ended.is_none_or(|n| by_end[ended].0 > n.0) {
                newest_ended = Some(by_end[ended]);
            }
            ended += 1;
        }
        if let Some(earlier) = newest_ended.filter(|n| n.0 >= hold.0) {
            // The restarted server had no holder (see the README's results): a holding that
            // began before the restart may be acknowledged after a newer one.
            let restart = faults.iter().any(|f| {
                f["kind"] == "server_sigkill"
                    && u(&f["start"]) + 3000 >= hold.1.min(earlier.1)
                    && u(&f["start"]) <= hold.1.max(earlier.2)
            });
            if restart {
                verdict.add("token_order_after_server_restart", 1);
                verdict.notes.push(format!(
                    "{ring}: {} held from {} with token {:?} after {} held until {} with the larger token {:?}, around a server restart",
                    hold.3, hold.1, hold.0, earlier.3, earlier.2, earlier.0
                ));
                continue;
            }
            verdict.fail(
                "fencing_tokens_unique_and_ordered",
                format!(
                    "{ring}: {} held from {} with token {:?} after {} held until {} with the larger token {:?}",
                    hold.3, hold.1, hold.0, earlier.3, earlier.2, earlier.0
                ),
            );
        }
    }
    // Two holders at once. Right after a restart of the state store a new holder has been seen
    // to get the lock while the old one still held it (the README's results): counted apart,
    // since fencing keeps the writes exclusive. Around other faults a holder may learn of its
    // loss late. Outside any fault it is a failure.
    verdict.touch("lock_holders_disjoint_outside_faults");
    let mut interval_overlaps = 0;
    for (i, earlier) in holds.iter().enumerate() {
        // A holding that found the lock lost (or could not read) wrote nothing: its logged
        // end is when it noticed, not when it stopped holding.
        if earlier.4 != "released" {
            continue;
        }
        for later in holds[i + 1..]
            .iter()
            .take_while(|later| later.1 < earlier.2)
        {
            interval_overlaps += 1;
            // Any fault explains a holder that learned of its loss late (a delay starves its
            // renewals as surely as an outage).
            let near = |f: &&Value| u(&f["start"]) <= later.1 && u(&f["end"]) + 3000 >= earlier.1;
            let fault = faults.iter().find(near);
            let what = format!(
                "{ring}: holding of {} [{}..{}] ({}, token {:?}) overlapped that of {} from {} (token {:?})",
                earlier.3, earlier.1, earlier.2, earlier.4, earlier.0, later.3, later.1, later.0
            );
            match fault {
                Some(f) if f["kind"] == "server_sigkill" => {
                    verdict.add("interval_overlaps_after_server_restart", 1);
                    verdict.notes.push(format!("{what} after a server restart"));
                }
                Some(f) => verdict.notes.push(format!("{what} around a {}", f["kind"])),
                None => verdict.fail("lock_holders_disjoint_outside_faults", what),
            }
        }
    }
    verdict.add("interval_overlaps", interval_overlaps);
}

/// Each observation resynced after every disconnecting fault and saw the final counter.
fn check_observation(
    who: &str,
    records: &[Value],
    faults: &[Value],
    finals: &Value,
    verdict: &mut Verdict,
) {
    verdict.touch("observations_resync_after_each_outage");
    verdict.touch("observations_see_final_value");
    let observing_since = records
        .iter()
        .find(|r| r["t"] == "op" && r["op"] == "observe" && r["ok"] == true)
        .map(|r| u(&r["end"]));
    let quiet = records
        .iter()
        .find(|r| r["t"] == "quiet")
        .map(|r| u(&r["ts"]));
    let (Some(since), Some(quiet)) = (observing_since, quiet) else {
        verdict.fail(
            "observations_resync_after_each_outage",
            format!("{who}: never observed, or never finished writing"),
        );
        return;
    };
    let resyncs: Vec<u64> = records
        .iter()
        .filter(|r| r["t"] == "event" && r["kind"] == "resynced")
        .map(|r| u(&r["ts"]))
        .collect();
    let outages: Vec<&Value> = faults
        .iter()
        .filter(|f| f["disconnects"] == true && u(&f["start"]) > since && u(&f["end"]) < quiet)
        .collect();
    // Each outage needs a resync of its own at or after its start (a writer blocked in a
    // call may log it after the next fault began: the Sync flavours handle events between
    // calls).
    let mut unused = resyncs.clone();
    unused.sort_unstable();
    let mut next_unused = 0;
    for fault in &outages {
        let from = u(&fault["start"]);
        verdict.add("resyncs_expected", 1);
        while next_unused < unused.len() && unused[next_unused] < from {
            next_unused += 1;
        }
        if next_unused < unused.len() {
            next_unused += 1;
        } else {
            verdict.fail(
                "observations_resync_after_each_outage",
                format!(
                    "{who}: no resynced event after the {} at {from}",
                    fault["kind"]
                ),
            );
        }
    }
    verdict.add("resyncs_seen", resyncs.len() as u64);
    let counter = finals.get("chaos/counter").cloned().unwrap_or(Value::Null);
    // Nothing writes the counter once every writer is quiet: the last event is the final value.
    let last = records.iter().rev().find(|r| r["t"] == "event");
    if last.is_none_or(|r| r["value"] != counter) {
        verdict.fail(
            "observations_see_final_value",
            format!(
                "{who}: the last event shows {}, the final counter is {counter}",
                last.map_or(Value::Null, |r| r["value"].clone())
            ),
        );
    }
}

fn median(mut values: Vec<u64>) -> u64 {
    values.sort_unstable();
    values.get(values.len() / 2).copied().unwrap_or(0)
}

/// Memory: each writer's resident memory in the last quarter of its samples against the
/// second quarter (the first is start-up).
fn check_memory(run: &Value, verdict: &mut Verdict) {
    verdict.touch("memory_flat");
    let mut series: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for sample in run["memory"].as_array().into_iter().flatten() {
        series
            .entry(sample["who"].as_str().unwrap_or("").to_string())
            .or_default()
            .push(u(&sample["rss_kib"]));
    }
    for (who, samples) in series {
        let n = samples.len();
        if n < 8 {
            continue;
        }
        let early = median(samples[n / 4..n / 2].to_vec());
        let late = median(samples[3 * n / 4..].to_vec());
        let growth = late.saturating_sub(early);
        verdict
            .notes
            .push(format!("memory {who}: {early} KiB -> {late} KiB"));
        // The embedded server and Mosquitto restart during the run (their series restart with
        // them); the writers and the state store attached to Mosquitto live throughout.
        let restarts = who == "embedded-server" || who.ends_with("-mosquitto");
        if !restarts && growth > MEMORY_GROWTH_KIB {
            verdict.fail(
                "memory_flat",
                format!("{who}: resident memory grew from {early} KiB to {late} KiB"),
            );
        }
    }
}

/// Checks the run in `dir`; prints the verdict, writes `summary.json`, returns whether every
/// promise held.
pub fn check_dir(dir: &Path) -> Result<bool, String> {
    let run: Value = serde_json::from_slice(
        &std::fs::read(dir.join("run.json")).map_err(|e| format!("run.json: {e}"))?,
    )
    .map_err(|e| format!("run.json: {e}"))?;
    let mut verdict = Verdict::default();
    let faults: Vec<Value> = run["faults"].as_array().cloned().unwrap_or_default();
    for fault in &faults {
        verdict.add("faults", 1);
        verdict.add(
            &format!("fault_{}", fault["kind"].as_str().unwrap_or("?")),
            1,
        );
        verdict.touch("faults_injected");
        if !fault["error"].is_null() {
            verdict.fail(
                "faults_injected",
                format!(
                    "{}: {} failed: {}",
                    fault["ring"], fault["kind"], fault["error"]
                ),
            );
        }
    }
    // One writer's log at a time (a long run's logs do not all fit in memory as JSON values);
    // the lock check gathers what it needs from each.
    let mut locks: BTreeMap<String, LockRecords> = BTreeMap::new();
    for writer in run["writers"].as_array().into_iter().flatten() {
        let ring = writer["ring"].as_str().unwrap_or("").to_string();
        let who = format!("{ring}/{}", writer["flavour"].as_str().unwrap_or(""));
        let log = dir.join(writer["log"].as_str().unwrap_or(""));
        let records: Vec<Value> = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        verdict.touch("writers_end_cleanly");
        if writer["exit"] != 0
            || writer["hung_at_exit"] == true
            || !records.iter().any(|r| r["t"] == "end")
        {
            verdict.fail(
                "writers_end_cleanly",
                format!(
                    "{who}: exit {} (signal {}, hung: {}), end record: {}; see its .stderr",
                    writer["exit"],
                    writer["signal"],
                    writer["hung_at_exit"],
                    records.iter().any(|r| r["t"] == "end")
                ),
            );
        }
        let finals = &run["finals"][ring.as_str()];
        let ring_faults: Vec<Value> = faults
            .iter()
            .filter(|f| f["ring"] == ring.as_str())
            .cloned()
            .collect();
        verdict.touch("acknowledged_writes_present");
        verdict.touch("reads_see_acknowledged_writes");
        verdict.touch("calls_end_within_timeout");
        verdict.touch("errors_are_clear");
        check_own_keys(&who, &records, finals, &mut verdict);
        check_calls(&who, &records, &mut verdict);
        check_observation(&who, &records, &ring_faults, finals, &mut verdict);
        locks
            .entry(ring)
            .or_default()
            .collect(&who, &records, &mut verdict);
    }
    for (ring, records) in locks {
        let ring_faults: Vec<Value> = faults
            .iter()
            .filter(|f| f["ring"] == ring.as_str())
            .cloned()
            .collect();
        check_lock(
            &ring,
            records,
            &run["finals"][ring.as_str()],
            &ring_faults,
            &mut verdict,
        );
    }
    check_memory(&run, &mut verdict);

    let lost = verdict
        .failures
        .get("acknowledged_writes_present")
        .map_or(0, Vec::len)
        + verdict.failures.get("fenced_counter").map_or(0, Vec::len);
    let overlaps = verdict
        .failures
        .get("no_overlapping_holders")
        .map_or(0, Vec::len);
    let hangs = verdict
        .failures
        .get("calls_end_within_timeout")
        .map_or(0, Vec::len);
    verdict.add("writes_lost", lost as u64);
    verdict.add("overlaps", overlaps as u64);
    verdict.add("hangs", hangs as u64);

    for note in &verdict.notes {
        println!("note: {note}");
    }
    println!("figures:");
    for (name, n) in &verdict.figures {
        println!("  {name:<34} {n}");
    }
    for fault in run["skipped_faults"].as_array().into_iter().flatten() {
        println!(
            "SKIPPED fault {}: not injected in this run (--skip-faults)",
            fault.as_str().unwrap_or("?")
        );
    }
    if let Some(skipped) = run["skipped"].as_object() {
        for (flavour, reason) in skipped {
            println!("SKIPPED {flavour}: {}", reason.as_str().unwrap_or(""));
        }
    }
    let (mut passed, mut failed) = (0, 0);
    for (check, failures) in &verdict.failures {
        if failures.is_empty() {
            passed += 1;
            println!("PASS {check}");
        } else {
            failed += 1;
            println!("FAIL {check} ({} cases)", failures.len());
            for failure in failures.iter().take(10) {
                println!("    {failure}");
            }
        }
    }
    let summary = json!({
        "figures": verdict.figures,
        "failures": verdict.failures,
        "skipped": run["skipped"],
        "passed": verdict.passed(),
    });
    let _ = std::fs::write(
        dir.join("summary.json"),
        serde_json::to_vec_pretty(&summary).unwrap(),
    );
    println!("chaos: {passed} passed, {failed} failed");
    Ok(verdict.passed())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(value: &str, status: &'static str) -> Write {
        Write {
            value: value.into(),
            status,
        }
    }

    #[test]
    fn an_acknowledged_write_must_survive_unless_a_later_write_replaced_it() {
        let history = [
            w("a", "acked"),
            w("b", "maybe"),
            w("c", "acked"),
            w("d", "maybe"),
            w("e", "failed"),
        ];
        assert!(allowed(&history, Some("c")));
        assert!(
            allowed(&history, Some("d")),
            "a later write of unknown outcome"
        );
        assert!(
            !allowed(&history, Some("b")),
            "an older unknown write over an acknowledged one"
        );
        assert!(!allowed(&history, Some("a")), "lost acknowledged write");
        assert!(!allowed(&history, Some("e")), "a refused write appeared");
        assert!(!allowed(&history, None), "lost acknowledged write");
        assert!(allowed(&[w("x", "maybe")], None));
        assert!(allowed(&[w("x", "maybe")], Some("x")));
        assert!(!allowed(&[w("x", "failed")], Some("x")));
    }

    #[test]
    fn tokens_order_by_wall_clock_then_counter() {
        assert!(token_key("000000000000002:00000:n") > token_key("000000000000001:00009:n"));
        assert!(token_key("1:2:n") > token_key("1:1:n"));
    }

    fn lock_records(logs: &[(String, Vec<Value>)]) -> LockRecords {
        let mut records = LockRecords::default();
        for (who, log) in logs {
            records.collect(who, log, &mut Verdict::default());
        }
        records
    }

    fn incr(token: &str, new: u64, outcome: &str) -> Value {
        json!({"t": "incr", "token": token, "new": new, "outcome": outcome})
    }

    #[test]
    fn the_counter_check_allows_exactly_the_unknown_range() {
        for (final_value, ok) in [("2", true), ("3", true), ("1", false), ("4", false)] {
            let logs = vec![(
                "w".to_string(),
                vec![
                    incr("1:0:n", 1, "ok"),
                    incr("2:0:n", 2, "ok"),
                    incr("3:0:n", 3, "unknown"),
                ],
            )];
            let mut verdict = Verdict::default();
            check_lock(
                "r",
                lock_records(&logs),
                &json!({"chaos/counter": final_value}),
                &[],
                &mut verdict,
            );
            assert_eq!(
                verdict.passed(),
                ok,
                "final {final_value}: {:?}",
                verdict.failures
            );
        }
    }

    #[test]
    fn a_lost_update_between_two_holders_is_an_overlap() {
        let logs = vec![
            ("a".to_string(), vec![incr("1:0:n", 1, "ok")]),
            ("b".to_string(), vec![incr("2:0:n", 1, "ok")]),
        ];
        let mut verdict = Verdict::default();
        check_lock(
            "r",
            lock_records(&logs),
            &json!({"chaos/counter": "1"}),
            &[],
            &mut verdict,
        );
        assert_eq!(verdict.failures["no_overlapping_holders"].len(), 1);
    }

    #[test]
    fn a_later_holding_with_an_older_token_fails() {
        let hold = |token: &str, acq: u64, end: u64| json!({"t": "hold", "token": token, "acq": acq, "end": end, "end_how": "released"});
        let logs = vec![(
            "a".to_string(),
            vec![hold("5:0:n", 10, 20), hold("4:0:n", 30, 40)],
        )];
        let mut verdict = Verdict::default();
        check_lock("r", lock_records(&logs), &json!({}), &[], &mut verdict);
        assert_eq!(
            verdict.failures["fencing_tokens_unique_and_ordered"].len(),
            1
        );
    }

    #[test]
    fn overlapping_holders_fail_outside_faults_and_are_noted_after_a_restart() {
        let hold = |token: &str, acq: u64, end: u64| json!({"t": "hold", "token": token, "acq": acq, "end": end, "end_how": "released"});
        let logs = vec![
            ("a".to_string(), vec![hold("1:0:n", 10_000, 10_100)]),
            ("b".to_string(), vec![hold("2:0:n", 10_050, 10_200)]),
        ];
        let mut verdict = Verdict::default();
        check_lock("r", lock_records(&logs), &json!({}), &[], &mut verdict);
        assert_eq!(
            verdict.failures["lock_holders_disjoint_outside_faults"].len(),
            1
        );

        let restart =
            json!({"kind": "server_sigkill", "disconnects": true, "start": 10_000, "end": 10_030});
        let mut verdict = Verdict::default();
        check_lock(
            "r",
            lock_records(&logs),
            &json!({}),
            &[restart],
            &mut verdict,
        );
        assert!(verdict.passed(), "{:?}", verdict.failures);
        assert_eq!(verdict.figures["interval_overlaps_after_server_restart"], 1);
    }

    #[test]
    fn a_missing_resync_after_an_outage_and_a_stale_last_event_fail() {
        let observe = json!({"t": "op", "op": "observe", "ok": true, "start": 0, "end": 10});
        let quiet = json!({"t": "quiet", "ts": 10_000});
        let event = |kind: &str, value: &str, ts: u64| json!({"t": "event", "kind": kind, "value": value, "ts": ts});
        let faults = [
            json!({"kind": "cut", "disconnects": true, "start": 1000, "end": 1001}),
            json!({"kind": "delay", "disconnects": false, "start": 3000, "end": 4000}),
            json!({"kind": "outage", "disconnects": true, "start": 5000, "end": 7500}),
        ];
        let finals = json!({"chaos/counter": "7"});
        let good = vec![
            observe.clone(),
            event("resynced", "3", 1200),
            event("resynced", "6", 7700),
            event("set", "7", 8000),
            quiet.clone(),
        ];
        let mut verdict = Verdict::default();
        check_observation("w", &good, &faults, &finals, &mut verdict);
        assert!(verdict.passed(), "{:?}", verdict.failures);

        let missing = vec![
            observe.clone(),
            event("resynced", "3", 1200),
            event("set", "7", 8000),
            quiet.clone(),
        ];
        let mut verdict = Verdict::default();
        check_observation("w", &missing, &faults, &finals, &mut verdict);
        assert_eq!(
            verdict.failures["observations_resync_after_each_outage"].len(),
            1
        );

        let stale = vec![
            observe,
            event("resynced", "3", 1200),
            event("resynced", "6", 7700),
            quiet,
        ];
        let mut verdict = Verdict::default();
        check_observation("w", &stale, &faults, &finals, &mut verdict);
        assert_eq!(verdict.failures["observations_see_final_value"].len(), 1);
    }

    #[test]
    fn a_call_past_its_bound_is_a_hang_and_an_internal_error_is_unclear() {
        let op = |start: u64, end: u64, code: &str| json!({"t": "op", "op": "get", "key": "k", "start": start, "end": end, "timeout_ms": 2000, "code": code});
        let mut verdict = Verdict::default();
        check_calls(
            "w",
            &[op(0, 2100, "TIMEOUT"), op(0, 10, "OK")],
            &mut verdict,
        );
        assert!(verdict.passed(), "{:?}", verdict.failures);
        let mut verdict = Verdict::default();
        check_calls(
            "w",
            &[
                op(0, 2000 + HANG_SLACK_MS + 1, "TIMEOUT"),
                op(0, 10, "INTERNAL"),
            ],
            &mut verdict,
        );
        assert_eq!(verdict.failures["calls_end_within_timeout"].len(), 1);
        assert_eq!(verdict.failures["errors_are_clear"].len(), 1);
    }
}
