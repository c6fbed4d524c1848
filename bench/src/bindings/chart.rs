//! `bindings.svg`: SET throughput and median latency against requests in flight, one line
//! per flavour; one column per value size, one pair of rows per broker.

use std::path::Path;

use plotters::style::RGBColor;

use super::result::BindingResult;
use super::{Flavour, Test};
use crate::report::plot::{self, distinct, Chart, Point};
use crate::scenario::Op;

fn colour(flavour: Flavour) -> RGBColor {
    match flavour {
        Flavour::RustAsync => RGBColor(0, 0, 0),
        Flavour::RustBlocking => RGBColor(110, 110, 110),
        Flavour::CAsync => RGBColor(31, 119, 180),
        Flavour::CBlocking => RGBColor(23, 190, 207),
        Flavour::CDispatch => RGBColor(148, 103, 189),
        Flavour::PythonAsync => RGBColor(44, 160, 44),
        Flavour::PythonSync => RGBColor(188, 189, 34),
        Flavour::PythonPaho => RGBColor(140, 86, 75),
        Flavour::NodePromise => RGBColor(214, 39, 40),
        Flavour::NodeSync => RGBColor(255, 127, 14),
        Flavour::NodeMqttjs => RGBColor(227, 119, 194),
    }
}

/// Draws the chart of `results` into an SVG file at `path`.
pub fn write(path: &Path, results: &[BindingResult], title: &str) -> Result<(), String> {
    let points: Vec<Point> = results
        .iter()
        .filter(|r| r.ok())
        .filter_map(|r| match r.item().test {
            Test::Throughput {
                op: Op::Set,
                value_size,
                in_flight,
                broker,
            } => Some(Point {
                broker,
                value_size,
                in_flight,
                line: Flavour::ALL.iter().position(|f| *f == r.flavour),
                figures: [r.figures.ops_per_sec, r.figures.p50_us],
            }),
            _ => None,
        })
        .collect();
    let sizes = distinct(points.iter().map(|p| p.value_size));
    let brokers = distinct(points.iter().map(|p| p.broker));
    // Ten lines need wider panels and a smaller title than latest.svg's six.
    let chart = Chart {
        panel: (520, 360),
        title_font: 20,
        empty_depth: 64,
        axes: ["SET operations/s", "SET median latency (µs)"],
        lines: Flavour::ALL
            .into_iter()
            .map(|f| (f.label(), colour(f)))
            .collect(),
    };
    plot::write(path, title, &chart, (&brokers, &sizes), &points)
}
