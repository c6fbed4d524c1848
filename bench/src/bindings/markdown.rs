//! `bindings.md`: the bindings run as Markdown tables (throughput and median latency per cell
//! and flavour, the ratios the targets use, the boundary, memory, batch and idle tests), then
//! the unavailable flavours and the failed items.

use std::fmt::Write as _;

use super::result::{BindingResult, Probe};
use super::{Flavour, Test};
use crate::scenario::{size_label, Broker, Op};

/// The Markdown tables: throughput (median latency) per cell and flavour, then the boundary,
/// memory and unavailable flavours.
pub fn render(probes: &[Probe], results: &[BindingResult]) -> String {
    let mut out = String::new();
    let flavours: Vec<Flavour> = Flavour::ALL
        .into_iter()
        .filter(|f| results.iter().any(|r| r.flavour == *f))
        .collect();
    let mut cells: Vec<Test> = Vec::new();
    for r in results.iter().filter(|r| r.is_throughput()) {
        if !cells.contains(&r.item().test) {
            cells.push(r.item().test);
        }
    }
    throughput_table(&mut out, results, &flavours, &cells);
    ratio_tables(&mut out, results, &flavours, &cells);
    switches_table(&mut out, results, &flavours, &cells);
    boundary_table(&mut out, results);
    memory_table(&mut out, results);
    batch_table(&mut out, results);
    idle_table(&mut out, results);
    let unavailable = probes
        .iter()
        .filter_map(|p| Some((p.flavour.to_string(), p.unavailable.as_deref()?)));
    list(&mut out, "Unavailable flavours", unavailable);
    let failed = results.iter().filter(|r| r.failed_run()).map(|r| {
        let error = r.outcome.error.as_deref();
        (r.name.clone(), error.unwrap_or("operations failed"))
    });
    list(&mut out, "Failed items", failed);
    out
}

/// `- name: text` lines under `title`, if there is any.
fn list<'a>(out: &mut String, title: &str, items: impl Iterator<Item = (String, &'a str)>) {
    let mut items = items.peekable();
    if items.peek().is_none() {
        return;
    }
    let _ = writeln!(out, "\n{title}:\n");
    for (name, text) in items {
        let _ = writeln!(out, "- {name}: {text}");
    }
}

/// A header row and the separator under it.
fn header(out: &mut String, columns: impl IntoIterator<Item = String>) {
    let mut separator = String::from("|");
    out.push('|');
    for column in columns {
        let _ = write!(out, " {column} |");
        separator.push_str("---|");
    }
    let _ = writeln!(out, "\n{separator}");
}

/// A row.
fn row(out: &mut String, cells: impl IntoIterator<Item = String>) {
    out.push('|');
    for cell in cells {
        let _ = write!(out, " {cell} |");
    }
    out.push('\n');
}

/// The names of the columns that say which cell a row is about, then one column per flavour.
fn columns<'a>(fixed: &'a [&str], flavours: &'a [Flavour]) -> impl Iterator<Item = String> + 'a {
    let fixed = fixed.iter().map(|c| (*c).to_owned());
    fixed.chain(flavours.iter().map(Flavour::to_string))
}

/// The first cells of a row: which broker, operation and size it is about.
fn cell_of(broker: Broker, op: Op, value_size: usize) -> [String; 3] {
    [
        broker.label().to_owned(),
        op.label().to_uppercase(),
        size_label(value_size),
    ]
}

fn throughput_table(
    out: &mut String,
    results: &[BindingResult],
    flavours: &[Flavour],
    cells: &[Test],
) {
    if cells.is_empty() {
        return;
    }
    let find = |f: Flavour, t: Test| {
        results
            .iter()
            .find(|r| r.flavour == f && r.item().test == t)
    };
    let _ = writeln!(
        out,
        "Operations per second (median latency, µs); `-` unavailable, `FAIL` failed:\n"
    );
    header(
        out,
        columns(&["broker", "op", "size", "in flight"], flavours),
    );
    for test in cells {
        let Test::Throughput {
            op,
            value_size,
            in_flight,
            broker,
        } = *test
        else {
            continue;
        };
        let figures = flavours.iter().map(|&f| match find(f, *test) {
            Some(r) if r.ok() => format!("{:.0} ({:.0})", r.figures.ops_per_sec, r.figures.p50_us),
            Some(r) if r.unavailable.is_some() => "-".to_owned(),
            Some(_) => "FAIL".to_owned(),
            None => String::new(),
        });
        let first = cell_of(broker, op, value_size).into_iter();
        row(out, first.chain([in_flight.to_string()]).chain(figures));
    }
}

/// The two views the targets use: throughput at the deepest depth relative to rust-async
/// (and to the by-hand baseline), and the median at 1 in flight above the Rust client of the
/// same kind.
fn ratio_tables(out: &mut String, results: &[BindingResult], flavours: &[Flavour], cells: &[Test]) {
    let deepest = cells
        .iter()
        .filter_map(|t| match t {
            Test::Throughput { in_flight, .. } => Some(*in_flight),
            _ => None,
        })
        .max();
    let find = |f: Flavour, t: &Test| {
        results
            .iter()
            .find(|r| r.flavour == f && r.item().test == *t && r.ok())
    };
    let others: Vec<Flavour> = flavours
        .iter()
        .copied()
        .filter(|f| *f != Flavour::RustAsync)
        .collect();
    for (depth, title) in [
        (
            deepest,
            "Throughput relative to rust-async (and to the by-hand baseline of the language)",
        ),
        (
            Some(1),
            "Median latency above the Rust client of the same kind (async or blocking), µs",
        ),
    ] {
        let Some(depth) = depth else { continue };
        depth_table(out, title, cells, depth, &others, |f, test| {
            match find(f, test) {
                Some(r) if depth == 1 => r
                    .p50_delta_rust_us
                    .map(|d| format!("{d:+.0}"))
                    .unwrap_or_default(),
                Some(r) => match (r.ratio_to_rust_async, r.ratio_to_baseline) {
                    (Some(a), Some(b)) => format!("{a:.2} ({b:.1} x)"),
                    (Some(a), None) => format!("{a:.2}"),
                    _ => String::new(),
                },
                None => "-".to_owned(),
            }
        });
    }
}

/// A table of the throughput cells at `depth` in flight under `title`: a row per broker, op
/// and size, a column per flavour, each cell `cell(flavour, test)`; nothing without such cells.
fn depth_table(
    out: &mut String,
    title: &str,
    cells: &[Test],
    depth: usize,
    flavours: &[Flavour],
    cell: impl Fn(Flavour, &Test) -> String,
) {
    let rows: Vec<&Test> = cells
        .iter()
        .filter(|t| matches!(t, Test::Throughput { in_flight, .. } if *in_flight == depth))
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{title}, {depth} in flight:\n");
    header(out, columns(&["broker", "op", "size"], flavours));
    for test in rows {
        let Test::Throughput {
            op,
            value_size,
            broker,
            ..
        } = *test
        else {
            continue;
        };
        let figures = flavours.iter().map(|&f| cell(f, test));
        row(
            out,
            cell_of(broker, op, value_size).into_iter().chain(figures),
        );
    }
}

/// Context switches of the driver process per operation at 1 in flight: the wake-ups a caller
/// that waits for each answer pays.
fn switches_table(
    out: &mut String,
    results: &[BindingResult],
    flavours: &[Flavour],
    cells: &[Test],
) {
    let title = "Context switches per operation (driver process)";
    depth_table(out, title, cells, 1, flavours, |f, test| {
        results
            .iter()
            .find(|r| r.flavour == f && r.item().test == *test && r.ok())
            .and_then(|r| r.figures.ctx_switches_per_op)
            .map_or_else(|| "-".to_owned(), |n| format!("{n:.1}"))
    });
}

/// One row per flavour that ran a `kind` test, under `title`: the boundary, memory, batch and
/// idle tests have no cell but the flavour (a batch row per op and delay).
fn per_flavour_table(
    out: &mut String,
    results: &[BindingResult],
    (kind, title): (&str, &str),
    names: &[&str],
    cells: impl Fn(&BindingResult) -> Option<Vec<String>>,
) {
    let ran: Vec<&BindingResult> = results
        .iter()
        .filter(|r| r.kind == kind && r.ok())
        .collect();
    if ran.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{title}:\n");
    header(out, names.iter().map(|n| (*n).to_owned()));
    for r in ran {
        if let Some(cells) = cells(r) {
            row(out, [r.flavour.to_string()].into_iter().chain(cells));
        }
    }
}

fn boundary_table(out: &mut String, results: &[BindingResult]) {
    let title = "Boundary (a call rejected before any I/O), ns per call";
    per_flavour_table(
        out,
        results,
        ("boundary", title),
        &["flavour", "ns/call"],
        |r| Some(vec![format!("{:.0}", r.ns_per_call.unwrap_or(0.0))]),
    );
}

fn memory_table(out: &mut String, results: &[BindingResult]) {
    let title =
        "Memory (resident MiB after the warm-up -> at the end; growth over the second half; \
         for Node, V8's heap over the same half)";
    let names = [
        "flavour",
        "operations",
        "in flight",
        "ops/s",
        "start",
        "end",
        "second half",
        "runtime heap, second half: reserved / used (used at the end)",
    ];
    per_flavour_table(out, results, ("memory", title), &names, |r| {
        let m = r.memory.as_ref()?;
        Some(vec![
            r.outcome.ops.to_string(),
            r.in_flight.unwrap_or(0).to_string(),
            format!("{:.0}", r.figures.ops_per_sec),
            format!("{:.1}", m.start_mb),
            format!("{:.1}", m.end_mb),
            format!("{:+.2}", m.second_half_growth_mb),
            m.runtime_heap.as_ref().map_or("-".to_owned(), |h| {
                format!(
                    "{:+.2} / {:+.2} ({:.1})",
                    h.reserved_growth_mb, h.used_growth_mb, h.used_end_mb
                )
            }),
        ])
    });
}

fn batch_table(out: &mut String, results: &[BindingResult]) {
    let title =
        "Batches (the same keys as a loop of awaited single calls, then as one batch call; \
                 delay: added each way by a proxy)";
    let names = [
        "flavour",
        "op",
        "delay",
        "keys",
        "loop (µs per key)",
        "batch (µs per key)",
        "batch x faster",
    ];
    per_flavour_table(out, results, ("batch", title), &names, |r| {
        let per_key = |s: Option<f64>| s.unwrap_or(0.0) * 1e6 / r.outcome.ops.max(1) as f64;
        Some(vec![
            r.op?.label().to_owned(),
            format!("{} ms", r.batch_delay_ms?),
            r.outcome.ops.to_string(),
            format!("{:.1}", per_key(r.loop_s)),
            format!("{:.1}", per_key(r.batch_s)),
            format!("{:.1}", r.batch_speedup?),
        ])
    });
}

fn idle_table(out: &mut String, results: &[BindingResult]) {
    let title = "Idle (a connected client with an open observation doing nothing, first while \
                 it settles, then measured; CPU and context switches of the whole driver \
                 process)";
    let names = [
        "flavour",
        "settling: CPU (ms)",
        "idle (s)",
        "CPU (ms)",
        "CPU per 20 s (ms)",
        "context switches",
    ];
    per_flavour_table(out, results, ("idle", title), &names, |r| {
        Some(vec![
            r.idle_settle_cpu_ms
                .map_or("-".to_owned(), |ms| format!("{ms:.1}")),
            format!("{:.1}", r.figures.elapsed_s),
            format!("{:.1}", r.idle_cpu_ms?),
            format!("{:.1}", r.idle_cpu_ms_per_20s()?),
            r.idle_ctx_switches?.to_string(),
        ])
    });
}
