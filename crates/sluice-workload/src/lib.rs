//! # sluice-workload
//!
//! sluice's workload language — a well-defined subset of [fio] job files — and the
//! deterministic I/O generators and pacers that turn a job into a stream of requests.
//!
//! ```
//! use sluice_workload::{parse_str, IoGen, ParseOptions};
//!
//! let text = "[global]\nbs=4k\nsize=64m\n\n[reader]\nrw=randread\niodepth=8\n";
//! let parsed = parse_str(text, "example.fio", &ParseOptions::default()).unwrap();
//! let job = &parsed.jobs[0];
//! let mut gen = IoGen::new(job, 0, 0, 42);
//! let io = gen.next_io();
//! assert_eq!(io.len, 4096);
//! assert_eq!(io.offset % 4096, 0);
//! ```
//!
//! ## File format
//!
//! * Sections start with `[name]`. `[global]` sets defaults for the job sections that
//!   follow it; several `[global]` sections accumulate, each affecting only the jobs
//!   after it (as in fio). Every other section is a job; its options override the
//!   inherited ones. Options before the first section are an error.
//! * `key=value` (spaces around `=` allowed) or a bare flag (`time_based`,
//!   `stonewall`; flags also take `=0`/`=1`). A later assignment of an option wins.
//! * Comments: lines whose first non-blank character is `;` or `#`, and trailing
//!   comments starting with `;` or `#` after whitespace. Blank lines are ignored.
//! * Sizes: a whole number of bytes, optionally with a suffix `k`, `m`, `g`, `t`, `p`
//!   (any case, also `KiB`, `kb`, `KB`, …) — always powers of 1024, fio's default
//!   (`kb_base=1024`); `b` for bytes; `0x` hex. No decimals, no percentages.
//! * Times: a whole number with `ns`, `us`, `ms`, `s`, `m` (minutes), `h`, `d`; a bare
//!   number is seconds for `runtime`, `ramp_time` and `startdelay`, microseconds for
//!   `thinktime`, as in fio.
//!
//! ## Options
//!
//! | option | meaning | default |
//! |---|---|---|
//! | `name` | job name (overrides the section name) | section name |
//! | `rw`, `readwrite` | `read`, `write`, `randread`, `randwrite`, `rw`/`readwrite`, `randrw`, `trim`, `randtrim`, `trimwrite`, `randtrimwrite` (with `direct=1`); `:N` modifiers | `read` |
//! | `rwmixread`, `rwmixwrite` | percent of reads (writes) in mixed modes; the last one given wins | 50 |
//! | `bs`, `blocksize` | block size, or `read,write[,trim]` (an empty part keeps that direction's default; a value not ended by a comma applies to the later directions too, as fio) | 4k |
//! | `bssplit` | `4k/50:8k/30:64k/20`, optionally `reads,writes`; percentages (up to 4 decimals) must add up to 100, entries with an empty percentage (`64k/` or `64k`) share the rest equally; overrides `bs` | — |
//! | `size` | bytes of the region each thread works on | **1 GiB** in `sluice sim`; `sluice run`: the existing file's size, a new file needs one (as fio) |
//! | `offset` | start of the region | 0 |
//! | `iodepth` | I/Os in flight per thread (1–65535) | 1 |
//! | `numjobs` | threads of the job (1–65535) | 1 |
//! | `runtime` | time limit; 0 = none | none |
//! | `time_based` | keep going (wrapping around) until `runtime` | off |
//! | `ramp_time` | warm-up excluded from results | 0 |
//! | `startdelay` | delay before the job starts | 0 |
//! | `thinktime` | pause after each completion before the next I/O | 0 |
//! | `rate` | bytes/s cap; one value caps reads+writes together, `read,write` each direction; 0 = none | none |
//! | `rate_iops` | I/Os per second cap, same forms as `rate` | none |
//! | `randseed` | mixed into each thread's random stream | — |
//! | `prio` | I/O priority level 0 (highest) … 7 | 4 for weights |
//! | `prioclass` | 0 none, 1 real time, 2 best effort, 3 idle | — |
//! | `stonewall`, `wait_for_previous` | wait for all earlier jobs to finish first | off |
//! | `filename` | jobs with the same file share an address range | own range |
//! | `sluice_critical` | 1 = latency-critical ([`IoClass::Critical`]) | 0 |
//! | `sluice_weight` | flow weight (≥ 1), overrides the weight from `prio` | from prio |
//! | `sluice_flow` | flow name; jobs with the same name share one flow (and must agree on its weight) | job name |
//!
//! More of fio's options — files (`filesize`, `nrfiles`, `file_service_type`,
//! `directory`, `filename_format`), amounts (`io_size`, `loops`, `number_ios`),
//! `bsrange`, `random_distribution`, `percentage_random`, `rate_process`, `exitall`,
//! buffered I/O (`direct=0`, `buffered=1`) and syncs (`fsync`, `fdatasync`,
//! `end_fsync`, `fsync_on_close`) — and every option sluice accepts with no effect,
//! does not support yet (other syncing options: a warning, the job runs without them)
//! or refuses are listed, with what
//! each does in sluice, by [`option_table`]; `docs/workloads.md` holds the same list,
//! generated from it. Options accepted without action are recorded in
//! [`JobSpec::passthrough`]; each gives one warning per file saying why it has no
//! effect. `ioengine` must be a local engine (`sync`, `psync`, `libaio`, `io_uring`,
//! `posixaio`, `pvsync`, `pvsync2`, `mmap`, `null`, …; see [`engine_class`]); a network,
//! passthrough, zoned or non-I/O engine stops the parse on its line.
//!
//! Any other option is an error naming file, line and option (with a suggestion for
//! likely typos), unless [`ParseOptions::ignore_unknown`] turns it into a warning; the
//! same holds for refused options.
//!
//! ## fio's value syntax
//!
//! * `include FILE` lines read FILE's options into the section, relative to the
//!   including file; nested up to [`MAX_INCLUDE_DEPTH`]; a cycle is an error; an
//!   included file may not hold sections.
//! * `${VAR}` in a value is the environment variable ([`parse_str_with`] takes another
//!   source); an unset variable is an error (fio would substitute an empty string).
//!   `$pagesize` is 4096; `$ncpus` and `$mb_memory` are refused as machine-dependent.
//! * A size, time or count that starts with `(` is fio's arithmetic expression: `+ - *
//!   / % ^`, parentheses, unit suffixes on numbers; a bare number in a time expression
//!   is microseconds, as in fio.
//!
//! ## Classes and weights
//!
//! * Class: `sluice_critical=1` or `prioclass=1` (real time) → [`IoClass::Critical`];
//!   `prioclass=3` → [`IoClass::Idle`]; otherwise [`IoClass::Normal`]. Critical wins
//!   over `prioclass=3` (with a warning).
//! * Weight (D2FQ/BFQ style) when no `sluice_weight` is given: best effort 8 − `prio`
//!   (prio 0 → 8 … 7 → 1; prio 4, the kernel's default level, → 4); real time → 8
//!   whatever the level; idle → 1. See [`weight_from_prio`].
//!
//! ## Where sluice differs from fio
//!
//! * One job section is one flow by default, and its `numjobs` threads share that flow.
//! * `size` defaults to 1 GiB instead of being required.
//! * Random I/O keeps fio's random map, as fio does by default: a uniform random job
//!   does not repeat a block (of its smallest block size) until it has done every
//!   block of the file, a drawn block already done gives way to the next free one,
//!   and a block that would overlap done ones is cut to the free extent (so with
//!   `bssplit`/`bsrange` the mean block is below the table's). The map starts afresh
//!   at each loop and when every block is done (fio: when a time-based job's map is
//!   full; a size-based job there has issued its `size`, except with a larger
//!   `io_size`, where fio ends the file and sluice goes on with a fresh map). `norandommap`, a
//!   non-uniform `random_distribution`, a `blockalign` other than the smallest block
//!   size and `zonemode=strided` draw with replacement; `random_generator=lfsr`
//!   (fio: no map, each block once by the LFSR) keeps the map. A size-based job ends
//!   once it has issued at least `size` bytes; the last I/O may pass `size` by less
//!   than a block.
//! * Mixed modes choose each I/O's direction independently at random with the
//!   `rwmixread` probability; sequential mixed jobs keep one position per direction.
//! * Random offsets are aligned to the drawn block size (absolutely when the region
//!   holds such a block, otherwise relative to `offset`), i.e. fio's `blockalign` is
//!   always the block size.
//! * A single `rate`/`rate_iops` value caps the job's reads and writes together.
//!   Pacing is fio's default linear process (no `rate_process=poisson`), per thread.
//! * A `bs` (or any `bssplit` entry) larger than `size` is an error rather than a
//!   silent clamp.
//!
//! * `random_distribution` is computed as fio computes it (Zipf with fio's normalising
//!   sum capped at 10 million terms, Pareto, fio's approximate normal, zones), over
//!   blocks of the job's smallest block size, each drawn offset then aligned down to
//!   the drawn block size; the ranks are scattered with fio's golden-ratio hash.
//! * `nrfiles` files are laid side by side in one address space per thread (one real
//!   file per thread for `sluice run`).
//!
//! Zones: `zonemode=strided` windows are generated here; `zonemode=zbd` is parsed
//! here and carried out by the job runner on a zoned device (`sluice_fio::zbd`).
//!
//! Not supported: trim verification, per-I/O
//! priorities (`cmdprio*`), `rw=…:N` modifiers, file-size ranges, `sync=1`,
//! `sync_file_range`, `write_barrier` (see [`option_table`]).
//!
//! ## Generation
//!
//! [`IoGen`] produces one thread's I/Os deterministically from the run seed, the job's
//! `randseed`, the job index and the thread index ([`stream_seed`]). [`Pacer`] spaces
//! I/Os for `rate`/`rate_iops`. Both are allocation-free per call.
//!
//! [fio]: https://fio.readthedocs.io/en/latest/fio_doc.html
#![warn(missing_docs, missing_debug_implementations)]

mod atomic;
mod cmdprio;
mod error;
mod expr;
mod gen;
mod include;
mod job;
mod limits;
mod on_error;
mod options;
mod parse;
mod placement;
mod plan;
mod source;
mod steady;
pub mod units;
mod values;
mod verify;
mod zones;

pub use atomic::{atomic_write_sizes, check_job as check_atomic_job, AtomicLimits};
pub use cmdprio::{class_of_ioprio, CmdPrio, PrioDraw, PrioEntry};
pub use error::WorkloadError;
pub use gen::{stream_seed, IoGen, IoSpec, Pacer};
pub use include::MAX_INCLUDE_DEPTH;
pub use job::{
    weight_from_prio, BlockSize, BlockSizes, BsEntry, Distribution, FileService, JobSpec, LogSpec,
    RateProcess, RwMode, RwModifier, Zone,
};
pub use limits::{
    check_limits, read_text, LimitError, MAX_INFLIGHT, MAX_JOB_FILE_BYTES, MAX_STEADY_INTERVALS,
    MAX_THREADS,
};
pub use on_error::ContinueOn;
pub use options::{
    engine_class, option_table, options_markdown, EngineClass, OptionInfo, Support, LOCAL_ENGINES,
};
pub use parse::{
    buffered_note, parse_file, parse_str, parse_str_with, ParseOptions, Parsed, Warning,
};
pub use placement::{
    metadata_refusal, parse_pi_chk, parse_plid_select, parse_plids, PiSpec, PlacementDraw,
    PlacementSpec, PlidSelect,
};
pub use plan::{exit_targets, flows_of, report_groups, stonewall_groups, ExitWhat, FlowConflict};
pub use source::{IoSource, NextIo};
pub use steady::{Attained, SteadyMetric, SteadySpec, SteadyState, SteadyTrack};
pub use verify::{VerifyKind, VerifySpec};
pub use zones::{ZoneMode, ZoneSpec};

#[doc(no_inline)]
pub use sluice_core::IoClass;
