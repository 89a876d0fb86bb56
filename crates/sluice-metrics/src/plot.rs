//! SVG plots: latency CCDFs per job and bandwidth over time per run.

use crate::report::RunReport;
use crate::MetricsError;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

const SIZE: (u32, u32) = (960, 600);

/// A file-name-safe version of `name`.
fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with('.') {
        format!("_{s}")
    } else {
        s
    }
}

/// `base.svg`, or `base_2.svg`, … if that name was already handed out.
fn unique_name(base: String, used: &mut Vec<String>) -> String {
    let mut name = format!("{base}.svg");
    let mut i = 2;
    while used.contains(&name) {
        name = format!("{base}_{i}.svg");
        i += 1;
    }
    used.push(name.clone());
    name
}

fn plot_err(path: &Path) -> impl Fn(String) -> MetricsError + '_ {
    move |message| MetricsError::Plot {
        path: path.to_path_buf(),
        message,
    }
}

/// Draw the latency CCDFs (log-log) of `series` (label, points in (ns, fraction slower)).
fn ccdf_svg(title: &str, series: &[(String, &[(u64, f64)])]) -> Result<String, String> {
    let pts = || series.iter().flat_map(|(_, p)| p.iter());
    let x_us = |ns: u64| (ns.max(1) as f64) / 1e3;
    let xmin = pts().map(|p| x_us(p.0)).fold(f64::INFINITY, f64::min);
    let mut xmax = pts().map(|p| x_us(p.0)).fold(0.0, f64::max);
    if xmax <= xmin {
        xmax = xmin * 2.0;
    }
    let min_pos = pts().map(|p| p.1).filter(|&y| y > 0.0).fold(1.0, f64::min);
    let ymin = 10f64.powf(min_pos.log10().floor().min(-1.0));
    let (xlo, xhi) = (
        10f64.powf(xmin.log10().floor()),
        10f64.powf(xmax.log10().ceil()),
    );

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(15)
            // Room for the last x tick label, centred on the plot's right edge.
            .margin_right(40)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d((xlo..xhi).log_scale(), (ymin..1.0).log_scale())
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("latency, submit to reaped (µs)")
            .y_desc("fraction of I/Os slower (1 - CDF)")
            .y_label_formatter(&|v| format!("{v:.0e}"))
            .draw()
            .map_err(|e| e.to_string())?;
        for (i, (label, points)) in series.iter().enumerate() {
            let color = series_colour(i);
            chart
                .draw_series(LineSeries::new(
                    points
                        .iter()
                        .filter(|p| p.1 > 0.0)
                        .map(|&(ns, y)| (x_us(ns), y)),
                    color.stroke_width(2),
                ))
                .map_err(|e| e.to_string())?
                .label(label.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// Draw one run's bandwidth per flow over time.
fn bw_svg(run: &RunReport) -> Result<String, String> {
    let s = &run.bw_series;
    let interval_s = s.interval_ns as f64 / 1e9;
    let nbins = s.flows.iter().map(|f| f.bw_bytes.len()).max().unwrap_or(0);
    let tmax = (nbins as f64 * interval_s).max(interval_s);
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let ymax = s
        .flows
        .iter()
        .flat_map(|f| f.bw_bytes.iter())
        .map(|&b| mib(b))
        .fold(0.0, f64::max);
    let ymax = if ymax > 0.0 { ymax * 1.25 } else { 1.0 };

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("bandwidth per flow — {}", run.policy),
                ("sans-serif", 22),
            )
            .margin(15)
            // Room for the last x tick label, centred on the plot's right edge.
            .margin_right(40)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..tmax, 0.0..ymax)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("time since window start (s)")
            .y_desc("MiB/s")
            .draw()
            .map_err(|e| e.to_string())?;
        for (i, f) in s.flows.iter().enumerate() {
            let color = series_colour(i);
            // One point per bin at its middle.
            let points = f
                .bw_bytes
                .iter()
                .enumerate()
                .map(|(b, &v)| ((b as f64 + 0.5) * interval_s, mib(v)));
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(f.name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// One named line of an [`plot_xy`] figure.
#[derive(Clone, Debug, PartialEq)]
pub struct XySeries {
    /// Legend label.
    pub name: String,
    /// Points in drawing order.
    pub points: Vec<(f64, f64)>,
}

/// Write a line chart of `series` to `path` (its directory is created if needed): the
/// figures of a sweep, e.g. critical latency against LD's tokens. `log_x` draws the x
/// axis on a log scale (for sweeps over powers of two).
pub fn plot_xy(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[XySeries],
    log_x: bool,
) -> Result<(), MetricsError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| MetricsError::CreateDir {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    let svg = xy_svg(title, x_desc, y_desc, series, log_x).map_err(plot_err(path))?;
    write_file(path, &svg)
}

fn xy_svg(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[XySeries],
    log_x: bool,
) -> Result<String, String> {
    let pts = || series.iter().flat_map(|s| s.points.iter());
    let mut xmin = pts().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let mut xmax = pts().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    if !xmin.is_finite() {
        (xmin, xmax) = (1.0, 2.0);
    }
    if xmax <= xmin {
        xmax = xmin + 1.0;
    }
    let ymax = pts().map(|p| p.1).fold(0.0, f64::max);
    let ymax = if ymax > 0.0 { ymax * 1.15 } else { 1.0 };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut builder = ChartBuilder::on(&root);
        builder
            .caption(title, ("sans-serif", 22))
            .margin(15)
            // Room for the last x tick label, centred on the plot's right edge.
            .margin_right(40)
            .x_label_area_size(45)
            .y_label_area_size(70);
        macro_rules! draw {
            ($chart:expr) => {{
                let mut chart = $chart.map_err(|e| e.to_string())?;
                chart
                    .configure_mesh()
                    .x_desc(x_desc)
                    .y_desc(y_desc)
                    .draw()
                    .map_err(|e| e.to_string())?;
                for (i, s) in series.iter().enumerate() {
                    let color = series_colour(i);
                    chart
                        .draw_series(LineSeries::new(
                            s.points.iter().copied(),
                            color.stroke_width(2),
                        ))
                        .map_err(|e| e.to_string())?
                        .label(s.name.as_str())
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
                    chart
                        .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled())))
                        .map_err(|e| e.to_string())?;
                }
                chart
                    .configure_series_labels()
                    .position(SeriesLabelPosition::UpperLeft)
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK)
                    .draw()
                    .map_err(|e| e.to_string())?;
            }};
        }
        if log_x {
            draw!(builder.build_cartesian_2d((xmin..xmax).log_scale(), 0.0..ymax));
        } else {
            draw!(builder.build_cartesian_2d(xmin..xmax, 0.0..ymax));
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

fn write_file(path: &Path, text: &str) -> Result<(), MetricsError> {
    std::fs::write(path, text).map_err(|source| MetricsError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Write SVG plots into `dir` (created if needed) and return their paths:
///
/// * `lat_ccdf_<job>.svg` per job: the completion-latency CCDF (fraction of I/Os slower
///   than x, log scale, against latency in µs, log scale), one line per run (policy) and
///   direction with I/O. Jobs are matched across runs by name; a job without any I/O gets
///   no file.
/// * `bw_<policy>.svg` per run: each flow's bandwidth (MiB/s) over time.
///
/// Names are made file-system safe; repeated names get `_2`, `_3`, … suffixes.
pub fn plot(runs: &[RunReport], dir: &Path) -> Result<Vec<PathBuf>, MetricsError> {
    std::fs::create_dir_all(dir).map_err(|source| MetricsError::CreateDir {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut used = Vec::new();
    let mut written = Vec::new();
    let multi = runs.len() > 1;

    let mut names: Vec<&str> = Vec::new();
    for r in runs {
        for j in &r.jobs {
            if !names.contains(&j.jobname.as_str()) {
                names.push(&j.jobname);
            }
        }
    }
    for name in names {
        let mut series: Vec<(String, &[(u64, f64)])> = Vec::new();
        for r in runs {
            let Some(job) = r.jobs.iter().find(|j| j.jobname == name) else {
                continue;
            };
            let dirs_used = job.dirs().iter().filter(|d| d.1.total_ios > 0).count();
            for (dname, d) in job.dirs() {
                if d.total_ios == 0 || d.lat_ccdf.is_empty() {
                    continue;
                }
                let label = match (multi, dirs_used > 1) {
                    (true, true) => format!("{} {dname}", r.policy),
                    (true, false) => r.policy.clone(),
                    (false, _) => dname.to_string(),
                };
                series.push((label, &d.lat_ccdf));
            }
        }
        if series.is_empty() {
            continue;
        }
        let path = dir.join(unique_name(
            format!("lat_ccdf_{}", sanitize(name)),
            &mut used,
        ));
        let svg = ccdf_svg(&format!("latency CCDF — {name}"), &series).map_err(plot_err(&path))?;
        write_file(&path, &svg)?;
        written.push(path);
    }

    for r in runs {
        let path = dir.join(unique_name(
            format!("bw_{}", sanitize(&r.policy)),
            &mut used,
        ));
        let svg = bw_svg(r).map_err(plot_err(&path))?;
        write_file(&path, &svg)?;
        written.push(path);
    }
    Ok(written)
}

/// Line colours that read on white (no light yellow or cyan): the Okabe–Ito colours
/// without their yellow and sky blue, then dark tones; each has a contrast ratio of at
/// least 3:1 against white (WCAG's minimum for graphics).
const COLOURS: [(u8, u8, u8); 8] = [
    (0x00, 0x72, 0xB2), // blue
    (0xD5, 0x5E, 0x00), // vermillion
    (0x00, 0x9E, 0x73), // bluish green
    (0xB8, 0x4A, 0x8E), // reddish purple, darkened
    (0x00, 0x00, 0x00), // black
    (0x8C, 0x56, 0x4B), // brown
    (0x6A, 0x3D, 0x9A), // purple
    (0x5F, 0x5F, 0x5F), // grey
];

/// The colour of series `i` (the palette repeats after eight).
fn series_colour(i: usize) -> RGBAColor {
    let (r, g, b) = COLOURS[i % COLOURS.len()];
    RGBColor(r, g, b).to_rgba()
}

#[cfg(test)]
mod colour_tests {
    use super::COLOURS;

    /// WCAG's relative luminance of an sRGB colour.
    fn luminance((r, g, b): (u8, u8, u8)) -> f64 {
        let lin = |c: u8| {
            let c = c as f64 / 255.0;
            if c <= 0.03928 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        };
        0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)
    }

    #[test]
    fn every_colour_reads_on_white() {
        for c in COLOURS {
            let ratio = 1.05 / (luminance(c) + 0.05);
            assert!(ratio >= 3.0, "{c:?}: contrast {ratio:.2} against white");
        }
    }
}
