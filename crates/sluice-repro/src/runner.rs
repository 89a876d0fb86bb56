//! Running a list of experiments over seeds on several threads, with the results of a
//! serial run.
//!
//! Each (experiment, seed) pair is one task; the goals of every seed are judged
//! together ([`crate::judge`]): each on its median over the seeds, with the spread.
//!
//! Every simulation is single-threaded and deterministic, and experiments share no
//! state, so they can run side by side. What must not change is what the user sees:
//! the goals come back in the order of the list whatever order the experiments finish
//! in, and the first error *in list order* is the one returned — as a serial run, which
//! stops at its first error, would report.
//!
//! Scheduling: a pool of `jobs` threads; experiments start in list order (each task
//! takes the next index from one counter), so the long experiments early in the list
//! start first and the short ones fill the gaps. Inside an experiment, [`Ctx::sim_each`]
//! runs its independent simulations on the same pool, so one long experiment (D2FQ's
//! Fig. 15: three 2.7 s simulations) does not hold the whole run back. With `jobs = 1`
//! everything runs on one thread in list order, exactly as before.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use crate::{judge, Ctx, Experiment, Goal, ReproError, Suite, Verdict};

/// One experiment picked for a run, with the name of its suite.
#[derive(Clone, Copy, Debug)]
pub struct Picked {
    /// The suite's name.
    pub suite: &'static str,
    /// The experiment.
    pub experiment: Experiment,
}

/// The experiments of `suites` in order, keeping those whose id contains `only`.
pub fn pick(suites: &[Suite], only: Option<&str>) -> Vec<Picked> {
    suites
        .iter()
        .flat_map(|s| {
            s.experiments.iter().map(|e| Picked {
                suite: s.name,
                experiment: *e,
            })
        })
        .filter(|p| only.is_none_or(|o| p.experiment.id.contains(o)))
        .collect()
}

/// What a run reports while it goes (for a progress display; never part of the results).
#[derive(Clone, Copy, Debug)]
pub enum Progress<'a> {
    /// Experiment `index` of the list starts at `seed`.
    Start {
        /// Its place in the list.
        index: usize,
        /// The seed.
        seed: u64,
        /// The experiment.
        picked: &'a Picked,
    },
    /// A simulation of experiment `index` starts (`label`: "POLICY on DEVICE").
    Sim {
        /// Its place in the list.
        index: usize,
        /// The seed.
        seed: u64,
        /// The experiment.
        picked: &'a Picked,
        /// What runs.
        label: &'a str,
    },
    /// Experiment `index` reports a line of detail beside its goals.
    Note {
        /// Its place in the list.
        index: usize,
        /// The seed.
        seed: u64,
        /// The experiment.
        picked: &'a Picked,
        /// The line.
        line: &'a str,
    },
    /// Experiment `index` at `seed` ended (with its goals or an error) after `secs` of
    /// wall time; `done` (experiment, seed) runs of `total` have ended so far.
    Done {
        /// Its place in the list.
        index: usize,
        /// The seed.
        seed: u64,
        /// The experiment.
        picked: &'a Picked,
        /// Wall-clock seconds it took.
        secs: f64,
        /// How many have ended, this one included.
        done: usize,
        /// How many the run has.
        total: usize,
    },
}

/// The settings of a run of experiments.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The seeds every experiment runs at (at least one).
    pub seeds: Vec<u64>,
    /// Where experiments write their figures; `None`: no figures.
    pub plot_dir: Option<PathBuf>,
    /// Threads (at least 1; 1 = one after another on the calling thread's pool).
    pub jobs: usize,
}

/// The number of threads to use when none is asked for: the machine's available
/// parallelism (1 when it cannot be told).
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A pool of `jobs` threads (at least one) with the main thread's stack size, for
/// running simulations side by side.
pub fn pool(jobs: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .stack_size(8 << 20)
        .thread_name(|i| format!("sluice-sim-{i}"))
        .build()
        .expect("a thread pool can be made")
}

/// `f(0)`, …, `f(n − 1)` on a pool of `jobs` threads; their values in index order, or
/// the error of the lowest index that failed — what a serial loop that stops at its
/// first error returns.
///
/// Indices start in increasing order (each task takes the next one from a counter).
/// Once one fails, those not yet started are skipped: they all come after it, so the
/// answer is unchanged. (Ones already running finish, and whatever they write — figures
/// — is written although a serial loop would not have got to them.)
pub fn run_ordered<T: Send, E: Send>(
    n: usize,
    jobs: usize,
    f: &(dyn Fn(usize) -> Result<T, E> + Sync),
) -> Result<Vec<T>, E> {
    let results: Vec<Mutex<Option<Result<T, E>>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let one = || {
        let index = next.fetch_add(1, Ordering::SeqCst);
        if index >= n || failed.load(Ordering::SeqCst) {
            return;
        }
        let r = f(index);
        if r.is_err() {
            failed.store(true, Ordering::SeqCst);
        }
        *results[index].lock().expect("no panic while held") = Some(r);
    };
    pool(jobs).scope(|s| {
        for _ in 0..n {
            s.spawn(|_| one());
        }
    });
    let mut out = Vec::with_capacity(n);
    for r in results {
        match r.into_inner().expect("no panic while held") {
            Some(Ok(v)) => out.push(v),
            Some(Err(e)) => return Err(e),
            None => unreachable!("an index was skipped although none before it failed"),
        }
    }
    Ok(out)
}

/// Run `picked` at every seed of `opts.seeds` on `opts.jobs` threads and judge their
/// goals over the seeds: the verdicts in list order — the same, in the same order, as
/// a serial run — or the first error in (experiment, seed) order. `progress` is called
/// from the worker threads.
pub fn run(
    picked: &[Picked],
    opts: &RunOptions,
    progress: &(dyn Fn(Progress<'_>) + Sync),
) -> Result<Vec<Verdict>, ReproError> {
    let (per_seed, counts) = run_seeds(picked, opts, progress)?;
    let mut verdicts = judge(&opts.seeds, &per_seed).map_err(|message| ReproError::App {
        what: "judging the goals over seeds".into(),
        message,
    })?;
    // Each verdict's suite: the experiments' goals come in list order.
    let suites = picked
        .iter()
        .zip(&counts)
        .flat_map(|(p, &n)| std::iter::repeat_n(p.suite, n));
    for (v, suite) in verdicts.iter_mut().zip(suites) {
        v.suite = suite.to_string();
    }
    Ok(verdicts)
}

/// Run `picked` at every seed of `opts.seeds` on `opts.jobs` threads: per seed (in the
/// order of `opts.seeds`), the goals of every experiment in list order; and how many
/// goals each experiment gave at the first seed.
///
/// Tasks are (experiment, seed) pairs, experiment-major, so an experiment's seeds
/// start together and the long experiments early in the list start first.
pub fn run_seeds(
    picked: &[Picked],
    opts: &RunOptions,
    progress: &(dyn Fn(Progress<'_>) + Sync),
) -> Result<(Vec<Vec<Goal>>, Vec<usize>), ReproError> {
    let n_seeds = opts.seeds.len().max(1);
    let total = picked.len() * opts.seeds.len();
    let done = AtomicUsize::new(0);
    let one = |task: usize| {
        let (index, seed) = (task / n_seeds, opts.seeds[task % n_seeds]);
        let p = &picked[index];
        progress(Progress::Start {
            index,
            seed,
            picked: p,
        });
        let started = Instant::now();
        let on_run = |label: &str| {
            progress(Progress::Sim {
                index,
                seed,
                picked: p,
                label,
            })
        };
        let on_note = |line: &str| {
            progress(Progress::Note {
                index,
                seed,
                picked: p,
                line,
            })
        };
        let ctx = Ctx {
            seed,
            on_run: &on_run,
            on_note: &on_note,
            // Figures are drawn from the first seed's run only (one file per figure).
            plot_dir: if seed == opts.seeds[0] {
                opts.plot_dir.clone()
            } else {
                None
            },
        };
        let r = (p.experiment.run)(&ctx);
        progress(Progress::Done {
            index,
            seed,
            picked: p,
            secs: started.elapsed().as_secs_f64(),
            done: done.fetch_add(1, Ordering::SeqCst) + 1,
            total,
        });
        r
    };
    let goals = run_ordered(total, opts.jobs, &one)?;
    let counts = (0..picked.len())
        .map(|i| goals[i * n_seeds].len())
        .collect();
    let mut per_seed: Vec<Vec<Goal>> = vec![Vec::new(); opts.seeds.len()];
    for (task, g) in goals.into_iter().enumerate() {
        per_seed[task % n_seeds].extend(g);
    }
    Ok((per_seed, counts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_results_and_the_first_error_in_order() {
        let square = |i: usize| -> Result<usize, String> { Ok(i * i) };
        for jobs in [1, 2, 4] {
            assert_eq!(run_ordered(5, jobs, &square), Ok(vec![0, 1, 4, 9, 16]));
        }
        // Cells 3 and 6 fail; the later one may finish first on several threads, but
        // the answer is cell 3's error, as in a serial loop.
        let f = |i: usize| -> Result<usize, String> {
            if i == 6 {
                return Err("six".into());
            }
            if i == 3 {
                std::thread::sleep(std::time::Duration::from_millis(50));
                return Err("three".into());
            }
            Ok(i)
        };
        for jobs in [1, 2, 4] {
            assert_eq!(run_ordered(10, jobs, &f), Err("three".to_string()));
        }
        assert_eq!(run_ordered(0, 2, &square), Ok(vec![]));
    }
}
