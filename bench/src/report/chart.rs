//! `latest.svg`: throughput and p99 latency against requests in flight, floor and clients on
//! the same axes; one column per value size, one pair of rows per broker.

use std::path::Path;

use plotters::coord::combinators::LogCoord;
use plotters::prelude::*;

use super::ScenarioResult;
use crate::scenario::{size_label, Kind, Op};

/// The lines of every panel: (kind, op, legend, colour).
const SERIES: [(Kind, Op, &str, RGBColor); 6] = [
    (Kind::Floor, Op::Echo, "floor (echo)", BLACK),
    (
        Kind::Server,
        Op::Set,
        "server SET (raw requester)",
        RGBColor(150, 150, 150),
    ),
    (Kind::Async, Op::Set, "async SET", RGBColor(31, 119, 180)),
    (Kind::Async, Op::Get, "async GET", RGBColor(23, 190, 207)),
    (
        Kind::Blocking,
        Op::Set,
        "blocking SET",
        RGBColor(214, 39, 40),
    ),
    (
        Kind::Blocking,
        Op::Get,
        "blocking GET",
        RGBColor(255, 127, 14),
    ),
];

#[derive(Clone, Copy)]
enum Metric {
    Throughput,
    P99,
}

impl Metric {
    fn value(self, r: &ScenarioResult) -> f64 {
        match self {
            Metric::Throughput => r.ops_per_sec,
            Metric::P99 => r.p99_us,
        }
    }

    fn axis(self) -> &'static str {
        match self {
            Metric::Throughput => "operations/s",
            Metric::P99 => "p99 latency (µs)",
        }
    }
}

type Coords = Cartesian2d<LogCoord<f64>, LogCoord<f64>>;

/// Draws the chart of `results` into an SVG file at `path`.
pub fn write(path: &Path, results: &[ScenarioResult], title: &str) -> Result<(), String> {
    let sizes = distinct(
        results
            .iter()
            .filter(|r| r.broker.is_some())
            .map(|r| r.value_size),
    );
    let brokers = distinct(results.iter().filter_map(|r| r.broker));
    let columns = sizes.len().max(1);
    let rows = 2 * brokers.len().max(1);
    let root = SVGBackend::new(path, (460 * columns as u32, 340 * rows as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let root = root
        .titled(title, ("sans-serif", 22))
        .map_err(|e| e.to_string())?;
    let panels = root.split_evenly((rows, columns));
    for (b, broker) in brokers.iter().enumerate() {
        for (s, size) in sizes.iter().enumerate() {
            for (m, metric) in [Metric::Throughput, Metric::P99].into_iter().enumerate() {
                let Some(area) = panels.get((2 * b + m) * columns + s) else {
                    continue;
                };
                let cell: Vec<&ScenarioResult> = results
                    .iter()
                    .filter(|r| r.broker == Some(*broker) && r.value_size == *size && r.ok())
                    .collect();
                let caption = format!("{}, {} values", broker.label(), size_label(*size));
                panel(area, &caption, metric, &cell, b == 0 && s == 0 && m == 0)?;
            }
        }
    }
    root.present().map_err(|e| e.to_string())
}

fn distinct<T: Ord + Copy>(values: impl Iterator<Item = T>) -> Vec<T> {
    let mut values: Vec<T> = values.collect();
    values.sort();
    values.dedup();
    values
}

fn panel(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    caption: &str,
    metric: Metric,
    cell: &[&ScenarioResult],
    legend: bool,
) -> Result<(), String> {
    let values: Vec<f64> = cell
        .iter()
        .map(|r| metric.value(r))
        .filter(|v| *v > 0.0)
        .collect();
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(0.0, f64::max);
    let (low, high) = if values.is_empty() {
        (1.0, 10.0)
    } else {
        (low / 1.5, high * 1.5)
    };
    let max_in_flight = cell.iter().map(|r| r.in_flight).max().unwrap_or(256).max(2) as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(
            (0.8f64..max_in_flight * 1.25).log_scale(),
            (low..high).log_scale(),
        )
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("requests in flight")
        .y_desc(metric.axis())
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| compact(*y))
        .draw()
        .map_err(|e| e.to_string())?;
    for (kind, op, name, colour) in SERIES {
        let mut points: Vec<(f64, f64)> = cell
            .iter()
            .filter(|r| r.kind == kind && r.op == op)
            .map(|r| (r.in_flight as f64, metric.value(r)))
            .filter(|(_, v)| *v > 0.0)
            .collect();
        if points.is_empty() {
            continue;
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        series(&mut chart, points, name, colour)?;
    }
    if legend {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn series(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Coords>,
    points: Vec<(f64, f64)>,
    name: &str,
    colour: RGBColor,
) -> Result<(), String> {
    chart
        .draw_series(points.iter().map(|p| Circle::new(*p, 3, colour.filled())))
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(LineSeries::new(points, colour.stroke_width(2)))
        .map_err(|e| e.to_string())?
        .label(name)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2)));
    Ok(())
}

/// 1500 -> "1.5k", 2000000 -> "2M".
fn compact(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6).replace(".0M", "M")
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3).replace(".0k", "k")
    } else {
        format!("{v:.0}")
    }
}
