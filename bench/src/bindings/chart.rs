//! `bindings.svg`: SET throughput and median latency against requests in flight, one line
//! per flavour; one column per value size, one pair of rows per broker.

use std::path::Path;

use plotters::coord::combinators::LogCoord;
use plotters::prelude::*;

use super::report::BindingResult;
use super::{Flavour, Test};
use crate::scenario::{size_label, Broker, Op};

fn colour(flavour: Flavour) -> RGBColor {
    match flavour {
        Flavour::RustAsync => RGBColor(0, 0, 0),
        Flavour::RustBlocking => RGBColor(110, 110, 110),
        Flavour::CAsync => RGBColor(31, 119, 180),
        Flavour::CBlocking => RGBColor(23, 190, 207),
        Flavour::PythonAsync => RGBColor(44, 160, 44),
        Flavour::PythonSync => RGBColor(188, 189, 34),
        Flavour::PythonPaho => RGBColor(140, 86, 75),
        Flavour::NodePromise => RGBColor(214, 39, 40),
        Flavour::NodeSync => RGBColor(255, 127, 14),
        Flavour::NodeMqttjs => RGBColor(227, 119, 194),
    }
}

#[derive(Clone, Copy)]
enum Metric {
    Throughput,
    P50,
}

impl Metric {
    fn value(self, r: &BindingResult) -> f64 {
        match self {
            Metric::Throughput => r.ops_per_sec,
            Metric::P50 => r.p50_us,
        }
    }

    fn axis(self) -> &'static str {
        match self {
            Metric::Throughput => "SET operations/s",
            Metric::P50 => "SET median latency (µs)",
        }
    }
}

type Coords = Cartesian2d<LogCoord<f64>, LogCoord<f64>>;

/// Draws the chart of `results` into an SVG file at `path`.
pub fn write(path: &Path, results: &[BindingResult], title: &str) -> Result<(), String> {
    let set: Vec<(&BindingResult, usize, usize, Broker)> = results
        .iter()
        .filter(|r| r.ok())
        .filter_map(|r| match r.item().test {
            Test::Throughput {
                op: Op::Set,
                value_size,
                in_flight,
                broker,
            } => Some((r, value_size, in_flight, broker)),
            _ => None,
        })
        .collect();
    let mut sizes: Vec<usize> = set.iter().map(|c| c.1).collect();
    sizes.sort();
    sizes.dedup();
    let mut brokers: Vec<Broker> = set.iter().map(|c| c.3).collect();
    brokers.sort();
    brokers.dedup();
    let columns = sizes.len().max(1);
    let rows = 2 * brokers.len().max(1);
    let root = SVGBackend::new(path, (520 * columns as u32, 360 * rows as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let root = root
        .titled(title, ("sans-serif", 20))
        .map_err(|e| e.to_string())?;
    let panels = root.split_evenly((rows, columns));
    for (b, broker) in brokers.iter().enumerate() {
        for (s, size) in sizes.iter().enumerate() {
            for (m, metric) in [Metric::Throughput, Metric::P50].into_iter().enumerate() {
                let Some(area) = panels.get((2 * b + m) * columns + s) else {
                    continue;
                };
                let cell: Vec<(&BindingResult, usize)> = set
                    .iter()
                    .filter(|c| c.3 == *broker && c.1 == *size)
                    .map(|c| (c.0, c.2))
                    .collect();
                let caption = format!("{}, {} values", broker.label(), size_label(*size));
                panel(area, &caption, metric, &cell, b == 0 && s == 0 && m == 0)?;
            }
        }
    }
    root.present().map_err(|e| e.to_string())
}

fn panel(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    caption: &str,
    metric: Metric,
    cell: &[(&BindingResult, usize)],
    legend: bool,
) -> Result<(), String> {
    let values: Vec<f64> = cell
        .iter()
        .map(|(r, _)| metric.value(r))
        .filter(|v| *v > 0.0)
        .collect();
    let (low, high) = if values.is_empty() {
        (1.0, 10.0)
    } else {
        (
            values.iter().copied().fold(f64::INFINITY, f64::min) / 1.5,
            values.iter().copied().fold(0.0, f64::max) * 1.5,
        )
    };
    let max_in_flight = cell.iter().map(|c| c.1).max().unwrap_or(64).max(2) as f64;
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
    for flavour in Flavour::ALL {
        let mut points: Vec<(f64, f64)> = cell
            .iter()
            .filter(|(r, _)| r.flavour == flavour)
            .map(|(r, in_flight)| (*in_flight as f64, metric.value(r)))
            .filter(|(_, v)| *v > 0.0)
            .collect();
        if points.is_empty() {
            continue;
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        series(&mut chart, points, flavour.label(), colour(flavour))?;
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

/// 1500 -> "1.5k".
fn compact(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6).replace(".0M", "M")
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3).replace(".0k", "k")
    } else {
        format!("{v:.0}")
    }
}
