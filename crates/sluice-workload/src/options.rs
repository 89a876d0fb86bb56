//! The table of every fio option sluice knows: what it does in sluice, or why it has
//! no effect, or why it is refused. The options sluice acts on are rows of
//! `parse/rows.rs`, each with the setter that reads its value into the section's
//! draft; the others are rows here. The parser applies every option through its row,
//! and `docs/workloads.md`'s option list is generated from the table
//! ([`options_markdown`]; a test keeps the two equal).

/// How sluice treats an option.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Support {
    /// sluice acts on it.
    Yes,
    /// Accepted, with one warning per option and file saying it has no effect in sluice
    /// (it concerns fio's own bookkeeping, output or host set-up, not the I/O stream).
    NoEffect,
    /// Syncing options sluice does not act on yet: accepted with a warning (the job
    /// runs without them). Values in [`OptionInfo::quiet`] ask for nothing unsupported
    /// and pass silently.
    NotYet,
    /// It changes what the job does in a way sluice cannot reproduce: an error naming
    /// file, line, option and value (a warning with `--ignore-unknown`). Values in
    /// [`OptionInfo::quiet`] (e.g. `verify=0`) are accepted silently.
    Refused,
}

impl Support {
    /// The heading of the group in the documentation.
    pub fn heading(self) -> &'static str {
        match self {
            Support::Yes => "Options sluice acts on",
            Support::NoEffect => "Accepted, with no effect (one warning per option)",
            Support::NotYet => {
                "Not supported yet: other syncing options (a warning; the job runs without them)"
            }
            Support::Refused => "Refused (an error; a warning with `--ignore-unknown`)",
        }
    }
}

/// One option of the table.
#[derive(Clone, Copy, Debug)]
pub struct OptionInfo {
    /// fio's name.
    pub name: &'static str,
    /// Other names fio accepts for it.
    pub aliases: &'static [&'static str],
    /// What sluice does with it.
    pub support: Support,
    /// Values (lower case) that ask for nothing sluice lacks: a `NotYet` or `Refused`
    /// option with one of these passes silently (`direct=1`, `verify=0`, …).
    pub quiet: &'static [&'static str],
    /// An example of its use (the bare name for flags).
    pub example: &'static str,
    /// What it means in sluice, or why it has no effect or is refused (one sentence).
    pub note: &'static str,
    /// For an option sluice acts on: how its value is read and where it lands in the
    /// section's draft (`None` for the rest, and for the `include` directive).
    pub(crate) set: Option<Setter>,
}

impl PartialEq for OptionInfo {
    /// Rows are equal when they say the same; the setter is not compared (a function's
    /// address is not a meaning).
    fn eq(&self, o: &Self) -> bool {
        (
            self.name,
            self.aliases,
            self.support,
            self.quiet,
            self.example,
            self.note,
        ) == (o.name, o.aliases, o.support, o.quiet, o.example, o.note)
    }
}

impl Eq for OptionInfo {}

impl OptionInfo {
    /// Whether `key` is this option's name or one of its aliases.
    pub fn is(&self, key: &str) -> bool {
        self.name == key || self.aliases.contains(&key)
    }

    /// Whether `value` (as written; `None` for a bare flag) asks for nothing sluice
    /// lacks.
    pub fn quiet_for(&self, value: Option<&str>) -> bool {
        let v = value.unwrap_or("1").trim().to_ascii_lowercase();
        self.quiet.contains(&v.as_str())
    }
}

use std::sync::OnceLock;

use crate::parse::{Setter, ACTED};
use Support::{NoEffect, NotYet, Refused, Yes};

const fn o(
    name: &'static str,
    aliases: &'static [&'static str],
    support: Support,
    example: &'static str,
    note: &'static str,
) -> OptionInfo {
    OptionInfo {
        name,
        aliases,
        support,
        quiet: &[],
        example,
        note,
        set: None,
    }
}

const fn q(
    name: &'static str,
    aliases: &'static [&'static str],
    support: Support,
    quiet: &'static [&'static str],
    example: &'static str,
    note: &'static str,
) -> OptionInfo {
    OptionInfo {
        name,
        aliases,
        support,
        quiet,
        example,
        note,
        set: None,
    }
}

const OFF: &[&str] = &["0", "false", "no", "off"];

const REPORT: &str =
    "sluice measures every I/O and reports per job and per flow itself (--json, --plot)";
const HOST: &str = "host set-up of fio's own threads; sluice's simulator has no host, and `sluice run` places its workers itself";
const ENGINE_OPT: &str =
    "a tuning knob of fio's engine; sluice submits through its own simulator or io_uring engine";
const DATA: &str = "the contents of write buffers; the simulator carries no data and `sluice run` writes pseudo-random data";
const SYNC: &str = "not acted on yet (sluice's page cache does fsync, fdatasync, end_fsync and fsync_on_close); the job runs without it";

/// The options sluice does not act on; those it acts on, each with its setter, are
/// [`crate::parse::ACTED`].
static OTHERS: &[OptionInfo] = &[
    // ------------------------------------------------------------- no effect
    o("thread", &[], NoEffect, "thread", "fio's threads-or-processes choice; sluice's jobs are its own threads"),
    o("threads", &[], NoEffect, "threads=1", "not an option of fio itself (fio's examples use it for `thread`); taken as `thread`"),
    o("unified_rw_reporting", &[], NoEffect, "unified_rw_reporting=1", REPORT),
    o("stats", &[], NoEffect, "stats=1", REPORT),
    o("gtod_reduce", &[], NoEffect, "gtod_reduce=1", "the simulator's clock is free and exact; the engine times every I/O"),
    o("gtod_cpu", &[], NoEffect, "gtod_cpu=0", HOST),
    o("clocksource", &[], NoEffect, "clocksource=cpu", "sluice keeps its own clock"),
    o("disable_lat", &[], NoEffect, "disable_lat=1", REPORT),
    o("disable_clat", &[], NoEffect, "disable_clat=1", REPORT),
    o("disable_slat", &[], NoEffect, "disable_slat=1", REPORT),
    o("disable_bw_measurement", &["disable_bw"], NoEffect, "disable_bw_measurement=1", REPORT),
    o("clat_percentiles", &[], NoEffect, "clat_percentiles=1", "sluice always reports fio's completion-latency percentile list"),
    o("lat_percentiles", &[], NoEffect, "lat_percentiles=1", REPORT),
    o("slat_percentiles", &[], NoEffect, "slat_percentiles=1", REPORT),
    o("percentile_list", &[], NoEffect, "percentile_list=99:99.9", "sluice reports fio's default percentile list"),
    o("significant_figures", &[], NoEffect, "significant_figures=4", REPORT),
    o("write_hist_log", &[], NoEffect, "write_hist_log=hist", "sluice writes no fio log files; --json and --plot give latencies and bandwidth over time"),
    o("log_hist_msec", &[], NoEffect, "log_hist_msec=1000", REPORT),
    o("log_max_value", &[], NoEffect, "log_max_value=1", REPORT),
    o("log_offset", &[], NoEffect, "log_offset=1", "sluice's log files have fio's default columns (time, value, direction, block size, priority), without the offset"),
    o("log_prio", &[], NoEffect, "log_prio=1", REPORT),
    o("log_compression", &[], NoEffect, "log_compression=1m", REPORT),
    o("log_unix_epoch", &[], NoEffect, "log_unix_epoch=1", REPORT),
    o("invalidate", &[], NoEffect, "invalidate=1", "sluice's page cache starts empty at every run (buffered jobs read from the file on first touch), as after fio's invalidate=1; there is nothing else to drop"),
    o("softrandommap", &[], NoEffect, "softrandommap", "fio's fallback when its random map cannot be allocated; sluice's map (one bit per block) is always allocated"),
    o("randrepeat", &[], NoEffect, "randrepeat=1", "sluice's streams always repeat for the same --seed and randseed"),
    o("allrandrepeat", &[], NoEffect, "allrandrepeat=1", "sluice's streams always repeat for the same --seed and randseed"),
    o("random_generator", &[], NoEffect, "random_generator=tausworthe64", "sluice uses its own seeded generator (xoshiro256++); with `lfsr` fio keeps no random map, sluice keeps it unless `norandommap`"),
    o("iodepth_batch_submit", &["iodepth_batch"], NoEffect, "iodepth_batch_submit=8", ENGINE_OPT),
    o("iodepth_batch_complete_min", &["iodepth_batch_complete"], NoEffect, "iodepth_batch_complete_min=1", ENGINE_OPT),
    o("iodepth_batch_complete_max", &[], NoEffect, "iodepth_batch_complete_max=8", ENGINE_OPT),
    o("iodepth_low", &[], NoEffect, "iodepth_low=1", ENGINE_OPT),
    o("io_submit_mode", &[], NoEffect, "io_submit_mode=inline", ENGINE_OPT),
    o("userspace_reap", &[], NoEffect, "userspace_reap", ENGINE_OPT),
    o("hipri", &[], NoEffect, "hipri", ENGINE_OPT),
    o("fixedbufs", &[], NoEffect, "fixedbufs", ENGINE_OPT),
    o("registerfiles", &[], NoEffect, "registerfiles", ENGINE_OPT),
    o("sqthread_poll", &[], NoEffect, "sqthread_poll=1", ENGINE_OPT),
    o("sqthread_poll_cpu", &[], NoEffect, "sqthread_poll_cpu=0", ENGINE_OPT),
    o("nonvectored", &[], NoEffect, "nonvectored=1", ENGINE_OPT),
    o("force_async", &[], NoEffect, "force_async=4", ENGINE_OPT),
    o("nowait", &[], NoEffect, "nowait=1", ENGINE_OPT),
    o("uncached", &[], NoEffect, "uncached=1", ENGINE_OPT),
    o("cpus_allowed", &["cpumask"], NoEffect, "cpus_allowed=0-3", HOST),
    o("cpus_allowed_policy", &[], NoEffect, "cpus_allowed_policy=split", HOST),
    o("numa_cpu_nodes", &[], NoEffect, "numa_cpu_nodes=0", HOST),
    o("numa_mem_policy", &[], NoEffect, "numa_mem_policy=local", HOST),
    o("nice", &[], NoEffect, "nice=0", HOST),
    o("ioscheduler", &[], NoEffect, "ioscheduler=none", "sluice's --policy is the I/O scheduler"),
    o("mem", &["iomem"], NoEffect, "mem=malloc", "I/O buffers: the simulator needs none, `sluice run` uses its own fixed buffers"),
    o("iomem_align", &["mem_align"], NoEffect, "iomem_align=4k", "I/O buffers: the simulator needs none, `sluice run` uses its own fixed buffers"),
    o("lockmem", &[], NoEffect, "lockmem=1g", HOST),
    o("unlink", &[], NoEffect, "unlink=1", "`sluice run` removes the files it created unless --keep-files"),
    o("unlink_each_loop", &[], NoEffect, "unlink_each_loop=1", "`sluice run` removes the files it created unless --keep-files"),
    o("allow_file_create", &[], NoEffect, "allow_file_create=1", "`sluice run` creates missing files in --directory and removes them after"),
    o("overwrite", &[], NoEffect, "overwrite=1", "`sluice run` always lays out (pre-fills) the files it creates"),
    o("fallocate", &[], NoEffect, "fallocate=none", "`sluice run` lays out files by writing them"),
    o("create_serialize", &[], NoEffect, "create_serialize=0", "`sluice run` lays out files before the run"),
    o("openfiles", &[], NoEffect, "openfiles=1", "the simulator has no open files; `sluice run` opens each file once"),
    o("refill_buffers", &[], NoEffect, "refill_buffers", DATA),
    o("scramble_buffers", &[], NoEffect, "scramble_buffers=1", DATA),
    o("zero_buffers", &[], NoEffect, "zero_buffers", DATA),
    o("buffer_pattern", &[], NoEffect, "buffer_pattern=0xdeadface", DATA),
    o("buffer_compress_percentage", &[], NoEffect, "buffer_compress_percentage=50", DATA),
    o("buffer_compress_chunk", &[], NoEffect, "buffer_compress_chunk=4k", DATA),
    o("dedupe_percentage", &[], NoEffect, "dedupe_percentage=10", DATA),
    o("dedupe_mode", &[], NoEffect, "dedupe_mode=repeat", DATA),
    o("dedupe_global", &[], NoEffect, "dedupe_global=1", DATA),
    o("dedupe_working_set_percentage", &[], NoEffect, "dedupe_working_set_percentage=50", DATA),
    o("buffer_compress_chunk_size", &[], NoEffect, "buffer_compress_chunk_size=4k", DATA),
    o("verify_dump", &[], NoEffect, "verify_dump=1", "sluice reports the first failed block (offset, what differs) in its output and writes no dump files"),
    o("ignore_error", &[], NoEffect, "ignore_error=EIO", "sluice's failed I/Os carry no errno (each counts as EIO): continue_on_error alone decides"),
    o("error_dump", &[], NoEffect, "error_dump=1", REPORT),
    o("rate_min", &["ratemin"], NoEffect, "rate_min=1m", "sluice never ends a job for running below a rate; compare the reported bandwidth with it"),
    o("rate_iops_min", &[], NoEffect, "rate_iops_min=100", "sluice never ends a job for running below a rate; compare the reported IOPS with it"),
    o("rate_cycle", &["ratecycle"], NoEffect, "rate_cycle=1000", "the averaging window of rate_min, which has no effect"),
    o("unit_base", &[], NoEffect, "unit_base=8", REPORT),
    o("fadvise_hint", &[], NoEffect, "fadvise_hint=0", "sluice's page cache takes no access hints (its read-ahead is none, its eviction a clock over all pages)"),
    o("filetype", &[], NoEffect, "filetype=file", "sluice inspects its files itself"),
    o("lockfile", &[], NoEffect, "lockfile=none", "sluice does no file locking"),
    o("cgroup", &[], NoEffect, "cgroup=fio", HOST),
    o("uid", &[], NoEffect, "uid=1000", HOST),
    o("gid", &[], NoEffect, "gid=1000", HOST),
    // ------------------------------------------------------------- not yet
    q("create_fsync", &[], NotYet, OFF, "create_fsync=1", SYNC),
    q("sync", &[], NotYet, &["0", "none", "false", "no", "off"], "sync=1", SYNC),
    q("write_barrier", &[], NotYet, &["0"], "write_barrier=16", SYNC),
    q("sync_file_range", &[], NotYet, &[], "sync_file_range=wait_before:8", SYNC),
    q("pre_read", &[], NotYet, OFF, "pre_read=1", SYNC),
    // ------------------------------------------------------------- refused
    o("verify_async", &[], NoEffect, "verify_async=4", "which threads compute the checks: sluice checks each block as its read completes, in its own workers; the results are the same"),
    o("verify_only", &[], Refused, "verify_only", "not supported: sluice checks each whole block (verify, verify_pattern, do_verify, verify_backlog, verify_fatal)"),
    o("verify_state_save", &[], Refused, "verify_state_save=0", "not supported: sluice checks each whole block (verify, verify_pattern, do_verify, verify_backlog, verify_fatal)"),
    q("verify_write_sequence", &[], Refused, OFF, "verify_write_sequence=1", "sluice's verify header carries the write sequence number but does not check it (as fio with verify_write_sequence=0)"),
    o("dp_scheme", &[], Refused, "dp_scheme=/path/scheme", "placement IDs by offset range from a scheme file (plid_select=scheme) are not supported; use plids with plid_select=roundrobin or random"),
    o("ramp_size", &[], Refused, "ramp_size=1g", "not supported yet: use ramp_time"),
    o("thinktime_blocks", &[], Refused, "thinktime_blocks=8", "not supported yet: sluice thinks after every I/O"),
    o("thinktime_spin", &[], Refused, "thinktime_spin=10us", "not supported yet: sluice's thinktime is idle time"),
    o("thinktime_iotime", &[], Refused, "thinktime_iotime=1s", "not supported yet: sluice thinks after every I/O"),
    o("file_append", &[], Refused, "file_append=1", "not supported: give offset instead"),
    o("exec_prerun", &[], Refused, "exec_prerun=cmd", "sluice runs no commands from a job file"),
    o("exec_postrun", &[], Refused, "exec_postrun=cmd", "sluice runs no commands from a job file"),
    o("trim_percentage", &[], Refused, "trim_percentage=10", "verify-related (trims of written blocks, then a verify of the trimmed ranges); sluice does not verify trims"),
    o("trim_verify_zero", &[], Refused, "trim_verify_zero=1", "verify-related (trims of written blocks, then a verify of the trimmed ranges); sluice does not verify trims"),
    o("trim_backlog", &[], Refused, "trim_backlog=8", "verify-related (trims of written blocks, then a verify of the trimmed ranges); sluice does not verify trims"),
    q("kb_base", &[], Refused, &["1024"], "kb_base=1000", "sluice's sizes are always powers of 1024; kb_base=1000 would change every size"),
    o("blocksize_unaligned", &["bs_unaligned"], Refused, "blocksize_unaligned", "sluice's sizes are multiples of the smallest block size"),
    o("bs_is_seq_rand", &[], Refused, "bs_is_seq_rand=1", "not supported: give bs=read,write"),
];

/// Every option sluice knows, in the documentation's order: those it acts on, then the
/// others.
pub fn option_table() -> &'static [OptionInfo] {
    static TABLE: OnceLock<Vec<OptionInfo>> = OnceLock::new();
    TABLE.get_or_init(|| ACTED.iter().chain(OTHERS).copied().collect())
}

/// The table entry of `key` (by name or alias).
pub fn lookup(key: &str) -> Option<&'static OptionInfo> {
    option_table().iter().find(|o| o.is(key))
}

/// How sluice treats an `ioengine`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineClass {
    /// Local file or block I/O: sluice runs the job with its own engine.
    Local,
    /// Not local block I/O: the reason.
    Refused(&'static str),
}

/// Engines that do local file or block I/O, which sluice replaces by its simulator or
/// its io_uring engine.
pub const LOCAL_ENGINES: &[&str] = &[
    "sync",
    "psync",
    "vsync",
    "pvsync",
    "pvsync2",
    "libaio",
    "io_uring",
    "posixaio",
    "solarisaio",
    "windowsaio",
    "mmap",
    "splice",
    "null",
    "cpp_null",
];

/// Classify an `ioengine` value (the part before any `:` argument).
pub fn engine_class(value: &str) -> EngineClass {
    let name = value.trim().to_ascii_lowercase();
    let name = name.split(':').next().unwrap_or("");
    if LOCAL_ENGINES.contains(&name) {
        return EngineClass::Local;
    }
    EngineClass::Refused(match name {
        "net" | "netsplice" | "rdma" | "http" | "nbd" | "libiscsi" | "nfs" | "rbd" | "rados"
        | "gfapi" | "gfapi_async" | "dfs" | "libhdfs" | "ime_psync" | "ime_psyncv"
        | "ime_aio" | "librpma_apm_client" | "librpma_apm_server" | "librpma_gpspm_client"
        | "librpma_gpspm_server" => {
            "it does network or distributed-storage I/O; sluice schedules local block I/O only"
        }
        "io_uring_cmd" | "sg" | "xnvme" | "libblkio" | "spdk" | "libzbc" | "nvme" => {
            "it passes commands through to the device (NVMe/SCSI passthrough or zoned commands), which sluice does not model"
        }
        "cpuio" | "exec" | "e4defrag" | "falloc" | "ftruncate" | "filecreate" | "filestat"
        | "filedelete" | "dircreate" | "dirstat" | "dirdelete" | "page_fault" => {
            "it does not do block I/O (CPU load, commands or file-system metadata)"
        }
        "mtd" | "dev-dax" | "libpmem" | "pmemblk" | "libcufile" | "libhipfile" | "guasi"
        | "binject" => "it drives a device type sluice does not model (flash MTD, persistent memory, GPU direct)",
        n if n.starts_with("external") => "it loads an external engine",
        _ => "it is not an engine sluice knows",
    })
}

/// The generated option list of `docs/workloads.md`: one table per [`Support`] group.
pub fn options_markdown() -> String {
    let mut s = String::new();
    for group in [Yes, NoEffect, NotYet, Refused] {
        s.push_str(&format!("#### {}\n\n", group.heading()));
        s.push_str("| option | example | ");
        s.push_str(match group {
            Yes => "in sluice",
            NoEffect => "why it has no effect",
            NotYet | Refused => "why",
        });
        s.push_str(" |\n|---|---|---|\n");
        for e in option_table().iter().filter(|e| e.support == group) {
            let mut names = format!("`{}`", e.name);
            for a in e.aliases {
                names.push_str(&format!(", `{a}`"));
            }
            let mut note = e.note.replace('|', "\\|");
            if !e.quiet.is_empty() && group != Yes {
                note.push_str(&format!(
                    " (accepted silently: {})",
                    e.quiet
                        .iter()
                        .map(|v| format!("`{}={v}`", e.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            s.push_str(&format!(
                "| {names} | `{}` | {note} |\n",
                e.example.replace('|', "\\|")
            ));
        }
        s.push('\n');
    }
    s.push_str(&format!(
        "Local engines, accepted silently (sluice runs its own engine): {}. Any other `ioengine` is refused with the reason (network, passthrough/zoned, not block I/O, other device types).\n",
        LOCAL_ENGINES
            .iter()
            .map(|e| format!("`{e}`"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        let mut all: Vec<&str> = option_table()
            .iter()
            .flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied()))
            .collect();
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n, "an option name appears twice in the table");
    }

    #[test]
    fn rows_acted_on_have_setters() {
        for o in option_table() {
            let acted = o.support == Yes && o.name != "include";
            assert_eq!(
                o.set.is_some(),
                acted,
                "option '{}': a setter exactly when sluice acts on it",
                o.name
            );
        }
    }

    #[test]
    fn engines() {
        assert_eq!(engine_class("libaio"), EngineClass::Local);
        assert_eq!(engine_class(" IO_URING "), EngineClass::Local);
        assert!(matches!(engine_class("net"), EngineClass::Refused(r) if r.contains("network")));
        assert!(
            matches!(engine_class("io_uring_cmd"), EngineClass::Refused(r) if r.contains("passthrough"))
        );
        assert!(matches!(
            engine_class("external:/x.so"),
            EngineClass::Refused(_)
        ));
        assert!(
            matches!(engine_class("frob"), EngineClass::Refused(r) if r.contains("not an engine"))
        );
    }
}
