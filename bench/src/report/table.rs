//! The stdout table.

use std::fmt::Write;

use super::ScenarioResult;

/// One line per scenario, aligned, with the comparison to the floor.
pub fn render(results: &[ScenarioResult]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<34} {:>9} {:>8} {:>8} {:>7} {:>7} {:>6} {:>6} {:>8} {:>6} {:>8}  note",
        "scenario",
        "ops/s",
        "p50 µs",
        "p99 µs",
        "cpu µs",
        "svc µs",
        "rss MB",
        "xfloor",
        "Δp50 µs",
        "xraw",
        "Δraw µs"
    );
    for r in results {
        let opt = |v: Option<f64>, precision: usize| {
            v.map(|v| format!("{v:.precision$}"))
                .unwrap_or_else(|| "-".to_owned())
        };
        let note = match (&r.outcome.error, r.outcome.errors) {
            (Some(error), n) => format!("FAILED ({n} errors): {error}"),
            (None, 0) => String::new(),
            (None, n) => format!("{n} errors"),
        };
        let _ = writeln!(
            out,
            "{:<34} {:>9.0} {:>8.1} {:>8.1} {:>7.1} {:>7} {:>6} {:>6} {:>8} {:>6} {:>8}  {}",
            r.name,
            r.figures.ops_per_sec,
            r.figures.p50_us,
            r.figures.p99_us,
            r.figures.cpu_us_per_op,
            opt(r.figures.service_cpu_us_per_op, 1),
            opt(r.figures.peak_rss_mb, 1),
            opt(r.ratio_to_floor, 2),
            opt(r.p50_delta_us, 0),
            opt(r.ratio_to_raw, 2),
            opt(r.p50_delta_raw_us, 0),
            note
        );
        if let Some(memory) = &r.memory {
            let _ = writeln!(
                out,
                "{:<34} resident {:.1} MB -> {:.1} MB over {} ops ({:+.2} MB; {:+.2} MB over the second half)",
                "",
                memory.start_mb,
                memory.end_mb,
                r.outcome.ops,
                memory.growth_mb,
                memory.second_half_growth_mb
            );
        }
    }
    out
}
