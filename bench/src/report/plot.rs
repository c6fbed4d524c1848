//! The drawing both charts share (`latest.svg`, `bindings.svg`): a grid with one column per
//! value size and, per broker, one row per metric; each panel plots a figure against requests
//! in flight, both axes logarithmic (depths go 1 to 256 and figures span decades), one line
//! per series. The two chart modules only turn their results into [`Point`]s and name the
//! lines.

use std::path::Path;

use plotters::coord::combinators::LogCoord;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::scenario::{size_label, Broker};

/// What a chart looks like: its sizes, its metrics and its lines.
#[derive(Debug, Clone)]
pub struct Chart<'a> {
    /// Width and height of one panel, pixels.
    pub panel: (u32, u32),
    /// Font size of the chart's title.
    pub title_font: u32,
    /// The deepest requests in flight the x axis shows when a panel has no figure.
    pub empty_depth: usize,
    /// The y axis of each row of a broker's panels, in the order of [`Point::figures`].
    pub axes: [&'a str; 2],
    /// Legend and colour of each line, in the order [`Point::line`] counts them.
    pub lines: Vec<(&'a str, RGBColor)>,
}

/// One result as the chart sees it.
#[derive(Debug, Clone, Copy)]
pub struct Point {
    /// Its broker: the pair of rows it goes into.
    pub broker: Broker,
    /// Its value size: the column.
    pub value_size: usize,
    /// Its requests in flight: the x coordinate.
    pub in_flight: usize,
    /// The line it is drawn on, if any (a point on no line still sets the axes' ranges, so
    /// that the panels of one chart stay comparable whatever they draw).
    pub line: Option<usize>,
    /// Its figure for each of the [`Chart::axes`]; one that is not positive has no place on
    /// a log axis and is left out.
    pub figures: [f64; 2],
}

/// The values of `values`, sorted, each once.
pub fn distinct<T: Ord + Copy>(values: impl Iterator<Item = T>) -> Vec<T> {
    let mut values: Vec<T> = values.collect();
    values.sort();
    values.dedup();
    values
}

/// Draws `points` into an SVG file at `path`, with a column for each of `grid`'s sizes and a
/// pair of rows for each of its brokers; the legend goes into the first panel.
pub fn write(
    path: &Path,
    title: &str,
    chart: &Chart<'_>,
    grid: (&[Broker], &[usize]),
    points: &[Point],
) -> Result<(), String> {
    let (brokers, sizes) = grid;
    let columns = sizes.len().max(1);
    let rows = chart.axes.len() * brokers.len().max(1);
    let (width, height) = chart.panel;
    let root =
        SVGBackend::new(path, (width * columns as u32, height * rows as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let root = root
        .titled(title, ("sans-serif", chart.title_font))
        .map_err(|e| e.to_string())?;
    let areas = root.split_evenly((rows, columns));
    for (b, &broker) in brokers.iter().enumerate() {
        for (s, &size) in sizes.iter().enumerate() {
            let cell: Vec<&Point> = points
                .iter()
                .filter(|p| p.broker == broker && p.value_size == size)
                .collect();
            for m in 0..chart.axes.len() {
                let Some(area) = areas.get((chart.axes.len() * b + m) * columns + s) else {
                    continue;
                };
                let caption = format!("{}, {} values", broker.label(), size_label(size));
                let legend = b == 0 && s == 0 && m == 0;
                panel(area, &caption, chart, (&cell, m), legend)?;
            }
        }
    }
    root.present().map_err(|e| e.to_string())
}

type Coords = Cartesian2d<LogCoord<f64>, LogCoord<f64>>;

fn panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    caption: &str,
    chart: &Chart<'_>,
    (cell, metric): (&[&Point], usize),
    legend: bool,
) -> Result<(), String> {
    let values: Vec<f64> = cell
        .iter()
        .map(|p| p.figures[metric])
        .filter(|v| *v > 0.0)
        .collect();
    // A factor of 1.5 either way keeps the extreme points off the frame.
    let (low, high) = if values.is_empty() {
        (1.0, 10.0)
    } else {
        (
            values.iter().copied().fold(f64::INFINITY, f64::min) / 1.5,
            values.iter().copied().fold(0.0, f64::max) * 1.5,
        )
    };
    let deepest = cell
        .iter()
        .map(|p| p.in_flight)
        .max()
        .unwrap_or(chart.empty_depth)
        .max(2) as f64;
    let mut plot = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(
            (0.8f64..deepest * 1.25).log_scale(),
            (low..high).log_scale(),
        )
        .map_err(|e| e.to_string())?;
    plot.configure_mesh()
        .x_desc("requests in flight")
        .y_desc(chart.axes[metric])
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| compact(*y))
        .draw()
        .map_err(|e| e.to_string())?;
    for (line, &(name, colour)) in chart.lines.iter().enumerate() {
        let mut points: Vec<(f64, f64)> = cell
            .iter()
            .filter(|p| p.line == Some(line))
            .map(|p| (p.in_flight as f64, p.figures[metric]))
            .filter(|(_, v)| *v > 0.0)
            .collect();
        if points.is_empty() {
            continue;
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        series(&mut plot, points, name, colour)?;
    }
    if legend {
        plot.configure_series_labels()
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

/// 1500 -> "1.5k", 2000000 -> "2M": tick labels narrow enough for the y label area.
fn compact(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6).replace(".0M", "M")
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3).replace(".0k", "k")
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(broker: Broker, line: Option<usize>, in_flight: usize, ops: f64) -> Point {
        Point {
            broker,
            value_size: 16,
            in_flight,
            line,
            figures: [ops, 100.0],
        }
    }

    #[test]
    fn the_legend_names_each_drawn_line_once() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("chart.svg");
        let chart = Chart {
            panel: (300, 200),
            title_font: 12,
            empty_depth: 64,
            axes: ["ops/s", "p50"],
            lines: vec![("drawn-line", BLACK), ("empty-line", RED)],
        };
        let points = [
            point(Broker::Embedded, Some(0), 1, 1000.0),
            point(Broker::Embedded, Some(0), 64, 5000.0),
            point(Broker::Mosquitto, Some(0), 64, 4000.0),
            // On no line: only widens the axes.
            point(Broker::Mosquitto, None, 256, 9000.0),
        ];
        let brokers = [Broker::Embedded, Broker::Mosquitto];
        write(&path, "title", &chart, (&brokers, &[16]), &points).expect("written");
        let svg = std::fs::read_to_string(&path).expect("svg");
        assert_eq!(svg.matches("\ndrawn-line\n").count(), 1, "{svg}");
        assert!(
            !svg.contains("empty-line"),
            "a line without points has no legend"
        );
        assert_eq!(
            svg.matches("mosquitto, 16B values").count(),
            2,
            "two rows per broker"
        );
    }

    #[test]
    fn tick_labels_are_compact() {
        assert_eq!(compact(950.4), "950");
        assert_eq!(compact(1500.0), "1.5k");
        assert_eq!(compact(2000.0), "2k");
        assert_eq!(compact(2_000_000.0), "2M");
        assert_eq!(compact(1_260_000.0), "1.3M");
    }
}
