//! `latest.svg`: throughput and p99 latency against requests in flight, floor and clients on
//! the same axes; one column per value size, one pair of rows per broker.

use std::path::Path;

use plotters::style::{RGBColor, BLACK};

use super::plot::{self, distinct, Chart, Point};
use super::ScenarioResult;
use crate::scenario::{Kind, Op};

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

/// Draws the chart of `results` into an SVG file at `path`.
pub fn write(path: &Path, results: &[ScenarioResult], title: &str) -> Result<(), String> {
    // A size or broker whose scenarios all failed keeps its (empty) panels: the gap shows.
    let sizes = distinct(
        results
            .iter()
            .filter(|r| r.broker.is_some())
            .map(|r| r.value_size),
    );
    let brokers = distinct(results.iter().filter_map(|r| r.broker));
    let points: Vec<Point> = results
        .iter()
        .filter(|r| r.ok())
        .filter_map(|r| {
            Some(Point {
                broker: r.broker?,
                value_size: r.value_size,
                in_flight: r.in_flight,
                line: SERIES.iter().position(|s| s.0 == r.kind && s.1 == r.op),
                figures: [r.figures.ops_per_sec, r.figures.p99_us],
            })
        })
        .collect();
    let chart = Chart {
        panel: (460, 340),
        title_font: 22,
        empty_depth: 256,
        axes: ["operations/s", "p99 latency (µs)"],
        lines: SERIES.iter().map(|s| (s.2, s.3)).collect(),
    };
    plot::write(path, title, &chart, (&brokers, &sizes), &points)
}
