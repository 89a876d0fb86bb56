//! Running a list of experiments on several threads, with the results of a serial run.
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

use crate::{Ctx, Experiment, Goal, ReproError, Suite};

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
    /// Experiment `index` of the list starts.
    Start {
        /// Its place in the list.
        index: usize,
        /// The experiment.
        picked: &'a Picked,
    },
    /// A simulation of experiment `index` starts (`label`: "POLICY on DEVICE").
    Sim {
        /// Its place in the list.
        index: usize,
        /// The experiment.
        picked: &'a Picked,
        /// What runs.
        label: &'a str,
    },
    /// Experiment `index` reports a line of detail beside its goals.
    Note {
        /// Its place in the list.
        index: usize,
        /// The experiment.
        picked: &'a Picked,
        /// The line.
        line: &'a str,
    },
    /// Experiment `index` ended (with its goals or an error) after `secs` of wall time;
    /// `done` experiments of `total` have ended so far.
    Done {
        /// Its place in the list.
        index: usize,
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
    /// Seed of every simulation.
    pub seed: u64,
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

/// Run `picked` on `opts.jobs` threads and return their goals in list order — the same
/// goals, in the same order, as a serial run — or the first error in list order.
/// `progress` is called from the worker threads.
pub fn run(
    picked: &[Picked],
    opts: &RunOptions,
    progress: &(dyn Fn(Progress<'_>) + Sync),
) -> Result<Vec<Goal>, ReproError> {
    Ok(run_per_experiment(picked, opts, progress)?
        .into_iter()
        .flatten()
        .collect())
}

/// [`run`], the goals of each picked experiment apart (in `picked`'s order), so a table
/// can name each goal's suite ([`crate::format_suite_table`]).
pub fn run_per_experiment(
    picked: &[Picked],
    opts: &RunOptions,
    progress: &(dyn Fn(Progress<'_>) + Sync),
) -> Result<Vec<Vec<Goal>>, ReproError> {
    let total = picked.len();
    let done = AtomicUsize::new(0);
    let one = |index: usize| {
        let p = &picked[index];
        progress(Progress::Start { index, picked: p });
        let started = Instant::now();
        let on_run = |label: &str| {
            progress(Progress::Sim {
                index,
                picked: p,
                label,
            })
        };
        let on_note = |line: &str| {
            progress(Progress::Note {
                index,
                picked: p,
                line,
            })
        };
        let ctx = Ctx {
            seed: opts.seed,
            on_run: &on_run,
            on_note: &on_note,
            plot_dir: opts.plot_dir.clone(),
        };
        let r = (p.experiment.run)(&ctx);
        progress(Progress::Done {
            index,
            picked: p,
            secs: started.elapsed().as_secs_f64(),
            done: done.fetch_add(1, Ordering::SeqCst) + 1,
            total,
        });
        r
    };
    run_ordered(total, opts.jobs, &one)
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
