//! Judging goals over seeds: each goal on the median of its value over the seeds, with
//! the spread (min–max) shown. A goal passes when its median meets the line and no more
//! than one seed in five misses (`misses × 5 ≤ seeds`; with fewer than five seeds, none
//! may miss).

use std::fmt::Write as _;

use crate::Goal;

/// The line a goal's value must meet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Line {
    /// `value ≥ x`.
    AtLeast(f64),
    /// `value > x`.
    Above(f64),
    /// `value ≤ x`.
    AtMost(f64),
    /// `value < x`.
    Below(f64),
    /// `|value − target| ≤ tol`.
    Within {
        /// The target.
        target: f64,
        /// The tolerance.
        tol: f64,
    },
    /// `|value − target| > tol` (a baseline that must show the problem).
    Outside {
        /// The target.
        target: f64,
        /// The tolerance.
        tol: f64,
    },
    /// A condition: the value is 1 when it holds, 0 when not; over seeds, the median
    /// holds when more than half of the seeds hold.
    Holds,
}

impl Line {
    /// Whether `v` meets the line.
    pub fn meets(&self, v: f64) -> bool {
        match *self {
            Line::AtLeast(x) => v >= x,
            Line::Above(x) => v > x,
            Line::AtMost(x) => v <= x,
            Line::Below(x) => v < x,
            Line::Within { target, tol } => (v - target).abs() <= tol,
            Line::Outside { target, tol } => (v - target).abs() > tol,
            Line::Holds => v > 0.5,
        }
    }

    /// The line in symbols ("≥ 1.15", "1 ± 0.05", "holds").
    pub fn describe(&self) -> String {
        match *self {
            Line::AtLeast(x) => format!("≥ {}", num(x)),
            Line::Above(x) => format!("> {}", num(x)),
            Line::AtMost(x) => format!("≤ {}", num(x)),
            Line::Below(x) => format!("< {}", num(x)),
            Line::Within { target, tol } => format!("{} ± {}", num(target), num(tol)),
            Line::Outside { target, tol } => format!("outside {} ± {}", num(target), num(tol)),
            Line::Holds => "holds".into(),
        }
    }
}

/// A number with three or four significant figures.
pub(crate) fn num(x: f64) -> String {
    let a = x.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else if a >= 0.01 {
        format!("{x:.3}")
    } else {
        format!("{x:.2e}")
    }
}

/// One goal judged over seeds.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// The suite (set by [`crate::runner::run`]; empty from [`judge`] alone).
    pub suite: String,
    /// Experiment id.
    pub experiment: String,
    /// The goal in words.
    pub goal: String,
    /// The line.
    pub line: Line,
    /// The seeds, in order.
    pub seeds: Vec<u64>,
    /// The goal's value at each seed, in the seeds' order.
    pub values: Vec<f64>,
    /// Median of `values` (the mean of the two middle ones for an even count).
    pub median: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Seeds at which the goal missed its line.
    pub misses: usize,
    /// Whether the goal passes: the median meets the line and `misses × 5 ≤ seeds`.
    pub pass: bool,
    /// The measured text of the seed whose value is nearest the median.
    pub measured: String,
    /// That seed.
    pub measured_seed: u64,
}

/// Median of `v` (not empty).
fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// Judge the goals of one list of experiments run at each of `seeds`: `runs[i]` holds
/// the goals at `seeds[i]`, all in the same order (the same experiments give the same
/// goals at every seed). Returns one verdict per goal, in order; an error names the
/// first goal whose place differs between seeds (a bug in an experiment).
pub fn judge(seeds: &[u64], runs: &[Vec<Goal>]) -> Result<Vec<Verdict>, String> {
    let Some(first) = runs.first() else {
        return Ok(Vec::new());
    };
    if seeds.len() != runs.len() {
        return Err(format!(
            "{} seeds but {} runs to judge",
            seeds.len(),
            runs.len()
        ));
    }
    for (seed, run) in seeds.iter().zip(runs) {
        if run.len() != first.len() {
            return Err(format!(
                "seed {seed} gave {} goals, seed {} gave {}: an experiment's goals must not \
                 depend on the seed",
                run.len(),
                seeds[0],
                first.len()
            ));
        }
    }
    let mut out = Vec::with_capacity(first.len());
    for (i, g0) in first.iter().enumerate() {
        let mut values = Vec::with_capacity(runs.len());
        for (seed, run) in seeds.iter().zip(runs) {
            let g = &run[i];
            if g.experiment != g0.experiment || g.goal != g0.goal || g.line != g0.line {
                return Err(format!(
                    "goal {} of the list is '{} — {}' at seed {} but '{} — {}' at seed {seed}: \
                     an experiment's goals must not depend on the seed",
                    i + 1,
                    g0.experiment,
                    g0.goal,
                    seeds[0],
                    g.experiment,
                    g.goal
                ));
            }
            values.push(g.value);
        }
        let med = median(&values);
        let misses = runs.iter().filter(|r| !r[i].pass).count();
        let nearest = (0..values.len())
            .min_by(|&a, &b| (values[a] - med).abs().total_cmp(&(values[b] - med).abs()))
            .expect("at least one seed");
        out.push(Verdict {
            suite: String::new(),
            experiment: g0.experiment.clone(),
            goal: g0.goal.clone(),
            line: g0.line,
            seeds: seeds.to_vec(),
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            pass: g0.line.meets(med) && misses * 5 <= runs.len(),
            median: med,
            values,
            misses,
            measured: runs[nearest][i].measured.clone(),
            measured_seed: seeds[nearest],
        });
    }
    Ok(out)
}

/// The seeds in words: "seed 3", "seeds 1–5", "seeds 1, 4, 9".
fn seeds_text(seeds: &[u64]) -> String {
    match seeds {
        [s] => format!("seed {s}"),
        [a, .., b] if seeds.windows(2).all(|w| w[1] == w[0] + 1) => format!("seeds {a}–{b}"),
        _ => format!(
            "seeds {}",
            seeds
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The median and spread of a verdict: "1.27 (1.20–1.31)", or "4/5 seeds" for a
/// condition.
fn spread(v: &Verdict) -> String {
    if v.line == Line::Holds {
        let held = v.values.iter().filter(|&&x| x > 0.5).count();
        return format!("holds at {held}/{}", v.values.len());
    }
    if v.values.len() == 1 {
        return num(v.median);
    }
    format!("{} ({}–{})", num(v.median), num(v.min), num(v.max))
}

/// Format verdicts as an aligned table — suite, experiment, pass, goal, line, median
/// (min–max), seeds missed, what was measured at the seed nearest the median; the goal
/// and the measurement wrapped at [`crate::DETAIL_WIDTH`] (continuation lines leave the
/// other cells empty), a rule between experiments — and a closing note that lists every
/// failed goal with its figures.
pub fn format_verdicts(verdicts: &[Verdict]) -> String {
    let seeds = verdicts.first().map_or(&[][..], |v| &v.seeds[..]);
    let mut t = sluice_metrics::Table::new(
        &[
            ("suite", false),
            ("experiment", false),
            ("pass", false),
            ("goal", false),
            ("line", false),
            ("median (min–max)", false),
            ("missed", false),
            ("measured (seed nearest the median)", false),
        ],
        true,
    );
    let mut last: Option<(&str, &str)> = None;
    for v in verdicts {
        if last != Some((v.suite.as_str(), v.experiment.as_str())) {
            t.rule();
            last = Some((v.suite.as_str(), v.experiment.as_str()));
        }
        let goal = crate::wrap(&v.goal, crate::DETAIL_WIDTH);
        let measured = crate::wrap(
            &format!("seed {}: {}", v.measured_seed, v.measured),
            crate::DETAIL_WIDTH,
        );
        for i in 0..goal.len().max(measured.len()) {
            let first = i == 0;
            let cell = |s: String| if first { s } else { String::new() };
            t.row(vec![
                cell(v.suite.clone()),
                cell(v.experiment.clone()),
                cell(if v.pass { "PASS" } else { "FAIL" }.into()),
                goal.get(i).cloned().unwrap_or_default(),
                cell(v.line.describe()),
                cell(spread(v)),
                cell(format!("{}/{}", v.misses, v.values.len())),
                measured.get(i).cloned().unwrap_or_default(),
            ]);
        }
    }
    let mut out = Vec::new();
    t.write(&mut out).expect("writing to memory");
    let mut s = String::from_utf8(out).expect("cells are text");
    let passed = verdicts.iter().filter(|v| v.pass).count();
    let _ = writeln!(
        s,
        "{} passed, {} failed ({}; a goal passes when its median over the seeds meets its \
         line and at most one seed in five misses it)",
        passed,
        verdicts.len() - passed,
        seeds_text(seeds)
    );
    let failed: Vec<&Verdict> = verdicts.iter().filter(|v| !v.pass).collect();
    if !failed.is_empty() {
        let _ = writeln!(s, "failed:");
        for v in failed {
            let why = if v.line.meets(v.median) {
                format!("median meets the line but {} seeds miss it", v.misses)
            } else {
                "the median misses the line".to_string()
            };
            // The suite too: two suites may have a figure of the same number.
            let at = if v.suite.is_empty() {
                v.experiment.clone()
            } else {
                format!("{} {}", v.suite, v.experiment)
            };
            let _ = writeln!(
                s,
                "  {} — {}: {} against {} ({why}; values {})",
                at,
                v.goal,
                spread(v),
                v.line.describe(),
                v.values
                    .iter()
                    .map(|x| num(*x))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(value: f64, line: Line) -> Goal {
        Goal::new("e", "goal", value, line, format!("v {value}"))
    }

    #[test]
    fn median_and_one_miss_in_five() {
        let line = Line::AtLeast(1.0);
        let runs: Vec<Vec<Goal>> = [1.2, 0.9, 1.1, 1.3, 1.05]
            .iter()
            .map(|&v| vec![g(v, line)])
            .collect();
        let v = judge(&[1, 2, 3, 4, 5], &runs).unwrap();
        assert_eq!(v[0].median, 1.1);
        assert_eq!((v[0].min, v[0].max, v[0].misses), (0.9, 1.3, 1));
        assert!(v[0].pass);
        assert_eq!(v[0].measured_seed, 3);
        // Two misses in five fail although the median passes.
        let runs: Vec<Vec<Goal>> = [1.2, 0.9, 1.1, 1.3, 0.8]
            .iter()
            .map(|&v| vec![g(v, line)])
            .collect();
        let v = judge(&[1, 2, 3, 4, 5], &runs).unwrap();
        assert!(!v[0].pass);
        let t = format_verdicts(&v);
        assert!(t.contains("0 passed, 1 failed (seeds 1–5"), "{t}");
        assert!(t.contains("2 seeds miss it"), "{t}");
        // With three seeds, none may miss.
        let runs: Vec<Vec<Goal>> = [1.2, 0.9, 1.1].iter().map(|&v| vec![g(v, line)]).collect();
        assert!(!judge(&[1, 2, 3], &runs).unwrap()[0].pass);
    }

    #[test]
    fn even_count_median_and_conditions() {
        let runs: Vec<Vec<Goal>> = [1.0, 3.0, 2.0, 4.0]
            .iter()
            .map(|&v| vec![g(v, Line::AtMost(2.4))])
            .collect();
        let v = judge(&[1, 2, 3, 4], &runs).unwrap();
        assert_eq!(v[0].median, 2.5);
        assert!(!v[0].pass);
        let runs: Vec<Vec<Goal>> = [true, true, false, true, true]
            .iter()
            .map(|&h| vec![Goal::holds("e", "trend", h, "")])
            .collect();
        let v = judge(&[1, 2, 3, 4, 5], &runs).unwrap();
        assert!(v[0].pass);
        assert!(format_verdicts(&v).contains("holds at 4/5"));
    }

    #[test]
    fn goals_that_differ_between_seeds_are_an_error() {
        let a = vec![g(1.0, Line::AtLeast(1.0))];
        let b = vec![Goal::new("e", "other", 1.0, Line::AtLeast(1.0), "")];
        let e = judge(&[1, 2], &[a.clone(), b]).unwrap_err();
        assert!(e.contains("must not depend on the seed"), "{e}");
        let e = judge(&[1, 2], &[a, vec![]]).unwrap_err();
        assert!(e.contains("gave 0 goals"), "{e}");
    }
}
