//! A calibration read back from its JSON file ([`Calibration::to_json`]) and fitted
//! again by this build ([`Calibration::refit`]): the device's measurements — the grid,
//! the write-buffer bursts and the validation jobs' real rounds — are what the file
//! holds; the model, the profile and the simulated side of the validation are made
//! anew. So a model change can be judged on the measurements an earlier run made, with
//! the device's state held fixed (on a shared disk a new run measures another device).

use std::path::PathBuf;

use serde_json::Value;

use super::{Calibration, Provenance, TargetFacts};
use crate::buffer::{self, BufferProbe, Burst};
use crate::validate::JOBS;
use crate::{CalibrateError, Plan, Point, PointSpec, Role, Window};

/// What a saved calibration holds of the device.
#[derive(Clone, Debug)]
pub struct Saved {
    /// The grid's plan.
    pub plan: Plan,
    /// The measured points.
    pub points: Vec<Point>,
    /// The write-buffer probe (its verdict made anew from the bursts).
    pub probe: BufferProbe,
    /// The file measured.
    pub target: TargetFacts,
    /// The validation jobs' real rounds, by job of [`JOBS`] (empty: none saved).
    pub rounds: Vec<Vec<Window>>,
    /// Where the rounds ran in the grid ([`Calibration::validate_at`]; empty in files
    /// saved before it was recorded).
    pub validate_at: Vec<usize>,
    /// Where and when it was measured (files written before it was saved: `None`).
    pub provenance: Option<Provenance>,
}

/// A reader of one JSON file whose errors name the file and the value's path.
struct Reader<'a> {
    origin: &'a str,
}

impl Reader<'_> {
    fn err(&self, at: &str, what: &str) -> CalibrateError {
        CalibrateError::BadInput(format!(
            "{}: {at}: {what} (is it a file written by `sluice calibrate --json`?)",
            self.origin
        ))
    }

    fn get<'v>(&self, v: &'v Value, at: &str, key: &str) -> Result<&'v Value, CalibrateError> {
        v.get(key)
            .filter(|x| !x.is_null())
            .ok_or_else(|| self.err(&format!("{at}.{key}"), "missing"))
    }

    fn f64(&self, v: &Value, at: &str, key: &str) -> Result<f64, CalibrateError> {
        self.get(v, at, key)?
            .as_f64()
            .filter(|x| x.is_finite())
            .ok_or_else(|| self.err(&format!("{at}.{key}"), "not a number"))
    }

    fn u64(&self, v: &Value, at: &str, key: &str) -> Result<u64, CalibrateError> {
        self.get(v, at, key)?
            .as_u64()
            .ok_or_else(|| self.err(&format!("{at}.{key}"), "not a whole number"))
    }

    fn u32(&self, v: &Value, at: &str, key: &str) -> Result<u32, CalibrateError> {
        u32::try_from(self.u64(v, at, key)?)
            .map_err(|_| self.err(&format!("{at}.{key}"), "too large"))
    }

    fn array<'v>(&self, v: &'v Value, at: &str, key: &str) -> Result<&'v [Value], CalibrateError> {
        self.get(v, at, key)?
            .as_array()
            .map(|a| a.as_slice())
            .ok_or_else(|| self.err(&format!("{at}.{key}"), "not a list"))
    }

    fn u32s(&self, v: &Value, at: &str, key: &str) -> Result<Vec<u32>, CalibrateError> {
        self.array(v, at, key)?
            .iter()
            .enumerate()
            .map(|(i, x)| {
                x.as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| self.err(&format!("{at}.{key}[{i}]"), "not a whole number"))
            })
            .collect()
    }

    fn str<'v>(&self, v: &'v Value, at: &str, key: &str) -> Result<&'v str, CalibrateError> {
        self.get(v, at, key)?
            .as_str()
            .ok_or_else(|| self.err(&format!("{at}.{key}"), "not a string"))
    }

    fn window(&self, v: &Value, at: &str) -> Result<Window, CalibrateError> {
        Ok(Window {
            iops: self.f64(v, at, "iops")?,
            bw_bytes: self.f64(v, at, "bw_bytes")?,
            lat_mean_ns: self.f64(v, at, "lat_mean_ns")?,
            lat_p50_ns: self.f64(v, at, "lat_p50_ns")?,
            lat_p99_ns: self.f64(v, at, "lat_p99_ns")?,
            // Not saved per round; no figure of the validation uses them.
            read_lat_mean_ns: 0.0,
            write_lat_mean_ns: 0.0,
            reads: 0,
            writes: 0,
        })
    }

    fn point(&self, v: &Value, at: &str) -> Result<Point, CalibrateError> {
        let role = self.str(v, at, "role")?;
        let role = Role::ALL
            .into_iter()
            .find(|r| r.name() == role)
            .ok_or_else(|| self.err(&format!("{at}.role"), &format!("unknown role '{role}'")))?;
        let read_pct = self.u64(v, at, "read_pct")?;
        if read_pct > 100 {
            return Err(self.err(&format!("{at}.read_pct"), "above 100"));
        }
        Ok(Point {
            spec: PointSpec {
                read_pct: read_pct as u8,
                bs: self.u32(v, at, "bs")?,
                qd: self.u32(v, at, "qd")?,
            },
            role,
            iops: self.f64(v, at, "iops")?,
            bw_bytes: self.f64(v, at, "bw_bytes")?,
            lat_mean_ns: self.f64(v, at, "lat_mean_ns")?,
            lat_p50_ns: self.f64(v, at, "lat_p50_ns")?,
            lat_p99_ns: self.f64(v, at, "lat_p99_ns")?,
            lat_p99_pooled_ns: self.f64(v, at, "lat_p99_pooled_ns")?,
            read_lat_mean_ns: self.f64(v, at, "read_lat_mean_ns")?,
            write_lat_mean_ns: self.f64(v, at, "write_lat_mean_ns")?,
            window_iops: self
                .array(v, at, "window_iops")?
                .iter()
                .map(|x| x.as_f64().unwrap_or(0.0))
                .collect(),
            steady: self
                .get(v, at, "steady")?
                .as_bool()
                .ok_or_else(|| self.err(&format!("{at}.steady"), "not true or false"))?,
            spread: self.f64(v, at, "spread")?,
            wall_ns: self.u64(v, at, "wall_ns")?,
        })
    }
}

/// Read a saved calibration from `text` (the JSON `sluice calibrate --json` writes);
/// `origin` names it in errors.
pub fn read(text: &str, origin: &str) -> Result<Saved, CalibrateError> {
    let r = Reader { origin };
    let v: Value = serde_json::from_str(text)
        .map_err(|e| CalibrateError::BadInput(format!("{origin}: not JSON: {e}")))?;
    let t = r.get(&v, "$", "target")?;
    let target = TargetFacts {
        path: PathBuf::from(r.str(t, "target", "path")?),
        size_bytes: r.u64(t, "target", "size_bytes")?,
        align: r.u32(t, "target", "align")?,
    };
    let p = r.get(&v, "$", "plan")?;
    let quick = Plan::quick();
    let window_ns = r.u64(p, "plan", "window_ns")?;
    let mut plan = Plan {
        qds: r.u32s(p, "plan", "qds")?,
        sizes: r.u32s(p, "plan", "sizes")?,
        small_sizes: r.u32s(p, "plan", "small_sizes")?,
        // Files written before the middle-depth sizes: none measured.
        mid_sizes: match p.get("mid_sizes") {
            Some(_) => r.u32s(p, "plan", "mid_sizes")?,
            None => Vec::new(),
        },
        mixes: r
            .u32s(p, "plan", "mixes")?
            .into_iter()
            .map(|m| m.min(100) as u8)
            .collect(),
        // Files written before the repeated sweeps: one pass.
        repeat_sweeps: match p.get("repeat_sweeps") {
            None => false,
            Some(b) => b
                .as_bool()
                .ok_or_else(|| r.err("plan.repeat_sweeps", "not true or false"))?,
        },
        size_bytes: target.size_bytes,
        warmup_ns: r.u64(p, "plan", "warmup_ns")?,
        window_ns,
        cap_ns: r.u64(p, "plan", "cap_ns")?,
        agree: r.u64(p, "plan", "agree")? as usize,
        tolerance: r.f64(p, "plan", "tolerance")?,
        validate_ns: r.u64(p, "plan", "validate_ns")?,
        validate_rounds: r.u64(p, "plan", "validate_rounds")? as usize,
        // Files written before the pause was saved: the pause of the grid they match.
        burst_pause_ns: if window_ns == quick.window_ns {
            quick.burst_pause_ns
        } else {
            Plan::full().burst_pause_ns
        },
        fit_ios: r.u64(p, "plan", "fit_ios")?,
    };
    if let Some(ns) = p.get("burst_pause_ns").and_then(Value::as_u64) {
        plan.burst_pause_ns = ns;
    }
    plan.check()
        .map_err(|e| CalibrateError::BadInput(format!("{origin}: plan: {e}")))?;
    let points = r
        .array(&v, "$", "points")?
        .iter()
        .enumerate()
        .map(|(i, x)| r.point(x, &format!("points[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    let wb = r.get(&v, "$", "write_buffer")?;
    let bursts = r
        .array(wb, "write_buffer", "bursts")?
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let at = format!("write_buffer.bursts[{i}]");
            Ok(Burst {
                bytes: r.u64(b, &at, "bytes")?,
                iops: r.f64(b, &at, "iops")?,
                lat_mean_ns: r.f64(b, &at, "lat_mean_ns")?,
                lat_p99_ns: r.f64(b, &at, "lat_p99_ns")?,
            })
        })
        .collect::<Result<Vec<_>, CalibrateError>>()?;
    let (size_bytes, verdict) = buffer::analyse(&bursts);
    let probe = BufferProbe {
        bursts,
        size_bytes,
        verdict,
    };
    let mut rounds = Vec::new();
    if let Some(checks) = v.get("validation").and_then(Value::as_array) {
        for (i, c) in checks.iter().enumerate() {
            let at = format!("validation[{i}]");
            let job = r.str(c, &at, "job")?;
            if JOBS.get(i).map(|j| j.label()).as_deref() != Some(job) {
                return Err(r.err(
                    &format!("{at}.job"),
                    &format!("'{job}' is not this build's validation job {}", i + 1),
                ));
            }
            let w = r
                .array(c, &at, "real_rounds")?
                .iter()
                .enumerate()
                .map(|(k, x)| r.window(x, &format!("{at}.real_rounds[{k}]")))
                .collect::<Result<Vec<_>, _>>()?;
            if w.is_empty() {
                return Err(r.err(&format!("{at}.real_rounds"), "empty"));
            }
            rounds.push(w);
        }
    }
    let validate_at = match v.get("validation_at") {
        None | Some(Value::Null) => Vec::new(),
        Some(a) => a
            .as_array()
            .and_then(|a| {
                a.iter()
                    .map(|x| x.as_u64().map(|k| k as usize))
                    .collect::<Option<Vec<_>>>()
            })
            .ok_or_else(|| r.err("validation_at", "not an array of grid positions"))?,
    };
    let provenance = match v.get("provenance") {
        Some(pv) if !pv.is_null() => {
            let s = |k| r.str(pv, "provenance", k).map(str::to_string);
            Some(Provenance {
                when: s("when")?,
                host: s("host")?,
                kernel: s("kernel")?,
                path: s("path")?,
                in_directory: pv
                    .get("in_directory")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                device: s("device")?,
                command: s("command")?,
            })
        }
        _ => None,
    };
    Ok(Saved {
        plan,
        points,
        probe,
        target,
        rounds,
        validate_at,
        provenance,
    })
}

impl Calibration {
    /// Fit `saved` again with this build: the model and the profile named `name` from
    /// its points and bursts ([`Calibration::derive`] with `seed`), and, when it holds
    /// the validation's real rounds, the simulated side of the validation run anew on
    /// the new profile.
    pub fn refit(saved: Saved, name: &str, seed: u64) -> Result<Calibration, CalibrateError> {
        let mut cal = Calibration::derive(
            saved.plan,
            saved.points,
            saved.probe,
            name,
            saved.target,
            seed,
        )?;
        cal.set_validation(saved.rounds, saved.validate_at, seed)?;
        Ok(cal)
    }
}
