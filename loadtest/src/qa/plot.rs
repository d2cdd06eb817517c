//! SVG plots for the qa report (plotters, SVG backend, no system fonts needed: the SVG
//! names the font and the viewer draws the text).

use std::path::Path;

use plotters::prelude::*;

use super::QaError;

const WIDTH: u32 = 760;
const HEIGHT: u32 = 420;

/// The colors of the series, in order (server under test first).
const COLORS: [RGBColor; 4] = [
    RGBColor(0xd9, 0x5f, 0x02),
    RGBColor(0x1b, 0x9e, 0x77),
    RGBColor(0x75, 0x70, 0xb3),
    RGBColor(0xe7, 0x29, 0x8a),
];

fn color(i: usize) -> RGBColor {
    COLORS[i % COLORS.len()]
}

/// Halfway to white.
fn lighten(c: RGBColor) -> RGBColor {
    let l = |v: u8| ((u16::from(v) + 255) / 2) as u8;
    RGBColor(l(c.0), l(c.1), l(c.2))
}

fn plot_error(path: &Path, e: impl std::fmt::Display) -> QaError {
    QaError::Plot(format!("{}: {e}", path.display()))
}

/// One measured matrix point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MatrixPoint {
    pub throughput: f64,
    pub p99_ms: f64,
    pub users: usize,
    /// Per user; 0 = closed loop.
    pub rate: f64,
}

/// One server's saturation matrix.
#[derive(Debug, Clone)]
pub struct CurveSeries {
    pub label: String,
    pub points: Vec<MatrixPoint>,
}

/// p99 against throughput: per server (one color) a line per user count through its
/// rates in rising order (closed loop last), labelled with the user count; and a
/// dashed vertical line at the operating point's offered load.
pub fn saturation(
    path: &Path,
    title: &str,
    series: &[CurveSeries],
    operating_load: Option<f64>,
) -> Result<(), QaError> {
    let finite = |p: &&MatrixPoint| p.throughput.is_finite() && p.p99_ms.is_finite();
    let xmax = series
        .iter()
        .flat_map(|s| s.points.iter().filter(finite).map(|p| p.throughput))
        .chain(operating_load)
        .fold(1.0, f64::max)
        * 1.12;
    let ymax = series
        .iter()
        .flat_map(|s| s.points.iter().filter(finite).map(|p| p.p99_ms))
        .fold(1.0, f64::max)
        * 1.15;
    let root = SVGBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| plot_error(path, e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(56)
        .build_cartesian_2d(0f64..xmax, 0f64..ymax)
        .map_err(|e| plot_error(path, e))?;
    chart
        .configure_mesh()
        .light_line_style(WHITE.mix(0.0))
        .x_desc("throughput (requests/s)")
        .y_desc("p99 latency (ms)")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()
        .map_err(|e| plot_error(path, e))?;
    if let Some(load) = operating_load {
        let dashes: Vec<(f64, f64)> = (0..20)
            .map(|i| ymax * f64::from(i) / 20.0)
            .map(|y| (load, y))
            .collect();
        chart
            .draw_series(
                dashes
                    .chunks(2)
                    .map(|pair| PathElement::new(pair.to_vec(), BLACK.mix(0.5).stroke_width(1))),
            )
            .map_err(|e| plot_error(path, e))?
            .label("operating point")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK.mix(0.5)));
    }
    for (i, s) in series.iter().enumerate() {
        let c = color(i);
        let mut users: Vec<usize> = s.points.iter().map(|p| p.users).collect();
        users.sort_unstable();
        users.dedup();
        for (g, &u) in users.iter().enumerate() {
            let mut group: Vec<MatrixPoint> = s
                .points
                .iter()
                .filter(finite)
                .filter(|p| p.users == u)
                .copied()
                .collect();
            // Rising rate, the closed loop (0) last.
            group.sort_by(|a, b| {
                let key = |p: &MatrixPoint| if p.rate > 0.0 { p.rate } else { f64::INFINITY };
                key(a).total_cmp(&key(b))
            });
            let line: Vec<(f64, f64)> = group.iter().map(|p| (p.throughput, p.p99_ms)).collect();
            let drawn = chart
                .draw_series(LineSeries::new(line.clone(), c.stroke_width(2)))
                .map_err(|e| plot_error(path, e))?;
            if g == 0 {
                drawn.label(s.label.clone()).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2))
                });
            }
            chart
                .draw_series(line.iter().map(|&p| Circle::new(p, 4, c.filled())))
                .map_err(|e| plot_error(path, e))?;
            if let Some(&last) = line.last() {
                chart
                    .draw_series(std::iter::once(Text::new(
                        format!("{u} users"),
                        last,
                        ("sans-serif", 11).into_font().color(&c),
                    )))
                    .map_err(|e| plot_error(path, e))?;
            }
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .draw()
        .map_err(|e| plot_error(path, e))?;
    root.present().map_err(|e| plot_error(path, e))
}

/// Grouped bars: one group per category, one bar per series; `None` leaves a gap.
/// `reference` draws a horizontal line (e.g. 1.0 for ratios). `paired`: the series
/// come in pairs of one color (e.g. p50 and p99 of one server), the first lighter.
pub fn bars(
    path: &Path,
    title: &str,
    y_desc: &str,
    categories: &[String],
    series: &[(String, Vec<Option<f64>>)],
    reference: Option<f64>,
    paired: bool,
) -> Result<(), QaError> {
    let ymax = series
        .iter()
        .flat_map(|s| s.1.iter().flatten().copied())
        .filter(|v| v.is_finite())
        .chain(reference)
        .fold(0.0, f64::max)
        .max(1e-9)
        * 1.2;
    let n = categories.len().max(1) as f64;
    let root = SVGBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| plot_error(path, e))?;
    let labels: Vec<String> = categories.to_vec();
    let formatter = move |x: &f64| -> String {
        let i = x.floor();
        if (x - i - 0.5).abs() < 1e-6 && i >= 0.0 {
            labels.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(0f64..n, 0f64..ymax)
        .map_err(|e| plot_error(path, e))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(WHITE.mix(0.0))
        .x_labels(categories.len() * 2 + 1)
        .x_label_formatter(&formatter)
        .y_desc(y_desc)
        .draw()
        .map_err(|e| plot_error(path, e))?;
    let k = series.len().max(1) as f64;
    let width = 0.8 / k;
    for (j, (label, values)) in series.iter().enumerate() {
        let c = if paired {
            let base = color(j / 2);
            if j % 2 == 0 {
                lighten(base)
            } else {
                base
            }
        } else {
            color(j)
        };
        let rects: Vec<Rectangle<(f64, f64)>> = values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let v = (*v)?;
                v.is_finite().then(|| {
                    let x0 = i as f64 + 0.1 + width * j as f64;
                    Rectangle::new([(x0, 0.0), (x0 + width * 0.92, v)], c.filled())
                })
            })
            .collect();
        chart
            .draw_series(rects)
            .map_err(|e| plot_error(path, e))?
            .label(label.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
    }
    if let Some(r) = reference {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(0.0, r), (n, r)],
                BLACK.stroke_width(1),
            )))
            .map_err(|e| plot_error(path, e))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .draw()
        .map_err(|e| plot_error(path, e))?;
    root.present().map_err(|e| plot_error(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mp(throughput: f64, p99_ms: f64, users: usize, rate: f64) -> MatrixPoint {
        MatrixPoint {
            throughput,
            p99_ms,
            users,
            rate,
        }
    }

    #[test]
    fn writes_svg_files() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("sat.svg");
        saturation(
            &a,
            "set, 1 node",
            &[
                CurveSeries {
                    label: "tacos".into(),
                    points: vec![
                        mp(100.0, 1.0, 4, 25.0),
                        mp(900.0, 2.0, 4, 0.0),
                        mp(1000.0, 40.0, 16, 0.0),
                    ],
                },
                CurveSeries {
                    label: "r-nacos".into(),
                    points: vec![mp(100.0, 1.5, 4, 25.0), mp(700.0, 30.0, 4, 0.0)],
                },
            ],
            Some(800.0),
        )
        .unwrap();
        let svg = std::fs::read_to_string(&a).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("tacos") && svg.contains("r-nacos"));
        assert!(svg.contains("16 users"));
        let b = dir.path().join("bars.svg");
        bars(
            &b,
            "ratios",
            "server / baseline",
            &["set".into(), "query".into()],
            &[
                ("throughput".into(), vec![Some(1.2), Some(0.9)]),
                ("p99".into(), vec![None, Some(1.1)]),
            ],
            Some(1.0),
            true,
        )
        .unwrap();
        let svg = std::fs::read_to_string(&b).unwrap();
        assert!(svg.contains("query") && svg.contains("<rect"));
    }
}
