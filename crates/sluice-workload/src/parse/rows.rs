//! The options sluice acts on, one row each: name, aliases, example, what it does (the
//! documentation) and how its value is read and where it lands (the setter).
//!
//! A simple option's setter writes the [`JobSpec`] field itself (`d.job`); only options
//! whose meaning depends on others (`bs`/`bssplit`/`bsrange`, `size`/`filesize`/
//! `nrfiles`, `fsync`/`fdatasync`, verify, steady state, files, class and weight) land
//! in a draft slot that `finish` combines. Adding a simple option is one row here plus
//! its `JobSpec` field.

#[allow(unused_imports)]
use super::*;

/// A row of an option sluice acts on (`support` [`Support::Yes`]).
const fn y(
    name: &'static str,
    aliases: &'static [&'static str],
    example: &'static str,
    note: &'static str,
    set: Setter,
) -> OptionInfo {
    OptionInfo {
        name,
        aliases,
        support: Support::Yes,
        quiet: &[],
        example,
        note,
        set: Some(set),
    }
}

/// A row sluice acts on elsewhere (a directive read before options are applied).
const fn directive(name: &'static str, example: &'static str, note: &'static str) -> OptionInfo {
    OptionInfo {
        name,
        aliases: &[],
        support: Support::Yes,
        quiet: &[],
        example,
        note,
        set: None,
    }
}

/// `size`, `offset`, `io_size`: bytes, with a percentage refused (`what`: how the
/// message names the percentage).
fn no_percent(a: &Arg, what: &str, ex: &str) -> Result<(), String> {
    let v = a.need()?;
    if v.trim().ends_with('%') {
        return Err(format!(
            "'{v}': {what} is not supported; give bytes, e.g. {ex}"
        ));
    }
    Ok(())
}

/// `apptag`, `apptag_mask`: a 16-bit number (decimal, `0x` hexadecimal).
fn tag16(v: &str) -> Result<u16, String> {
    let n = num(v)?;
    u16::try_from(n).map_err(|_| format!("'{v}' is above 0xffff; a PI application tag has 16 bits"))
}

/// `write_bw_log`, `write_lat_log`, `write_iops_log`: a prefix, `None` when bare.
fn log_prefix(a: &Arg) -> Option<String> {
    match a.value.map(str::trim) {
        None | Some("") => None,
        Some(v) => Some(v.to_string()),
    }
}

/// `rate`, `rate_iops`: `[read, write]` caps (0: none) and whether one value was given.
fn rates(
    a: &Arg,
    parse: fn(&str) -> Result<u64, String>,
) -> Result<([Option<u64>; 2], bool), String> {
    let (parts, single) = a.dirs()?;
    let mut out = [None; 2];
    for (dir, part) in parts.iter().enumerate() {
        if let Some(p) = part {
            let n = parse(p)?;
            out[dir] = (n > 0).then_some(n);
        }
    }
    Ok((out, single))
}

/// `bssplit`, `bsrange`: a block-size table per direction.
fn bs_table(
    d: &mut Draft,
    a: &Arg,
    name: &'static str,
    parse: fn(&str) -> Result<Vec<BsEntry>, String>,
) -> Result<(), String> {
    let (parts, _) = a.dirs()?;
    for (dir, part) in parts.iter().enumerate() {
        if let Some(p) = part {
            d.bssplit[dir] = Some((parse(p)?, name, a.at.clone()));
        }
    }
    Ok(())
}

pub(crate) static ACTED: &[OptionInfo] = &[
    y("name", &[], "name=reader", "job name (overrides the section name)", |d, a| { d.name = Some(a.need()?.to_string()); Ok(()) }),
    y("description", &[], "description=some text", "free text, recorded", |d, a| { d.record(a.key, Some(a.need()?)); Ok(()) }),
    y("rw", &["readwrite"], "rw=randread", "read, write, randread, randwrite, rw/readwrite, randrw, trim, randtrim, trimwrite (a trim, then writes over the trimmed block), randtrimwrite (a random trim, then one write at its offset); fio's `:N` modifier: a sequential mode adds N bytes after each I/O (`write:112k` leaves holes, `read:-8k` goes backwards, wrapping as fio), a random one takes a new random offset every N I/Os (see rw_sequencer)", |d, a| { (d.job.rw, d.job.rw_modifier) = parse_rw(a.need()?)?; Ok(()) }),
    y("rw_sequencer", &[], "rw_sequencer=identical", "with `rw=randread:N`: between random offsets, sequential (default) continues from the last I/O, identical repeats its offset", |d, a| {
        d.job.rw_identical = match a.need()?.trim().to_ascii_lowercase().as_str() {
            "sequential" => false,
            "identical" => true,
            v => return Err(format!("cannot read '{v}'; use sequential or identical")),
        };
        Ok(())
    }),
    y("rwmixread", &[], "rwmixread=70", "percent of reads in mixed modes", |d, a| { d.job.rwmixread = a.uint("70", 0, 100)?; Ok(()) }),
    y("rwmixwrite", &[], "rwmixwrite=30", "percent of writes in mixed modes", |d, a| { d.job.rwmixread = 100 - a.uint::<u8>("30", 0, 100)?; Ok(()) }),
    y("bs", &["blocksize"], "bs=4k", "block size, or `read,write[,trim]` (a value not ended by a comma applies to the later directions too, as fio)", |d, a| {
        if let Some(t) = trim_part(a.need()?) {
            d.bs_trim = Some((parse_bs(&t)?, a.at.clone()));
        }
        let (parts, _) = a.dirs()?;
        for (dir, part) in parts.iter().enumerate() {
            if let Some(p) = part {
                d.bs[dir] = Some((parse_bs(p)?, a.at.clone()));
                // A later bs overrides an inherited bssplit/bsrange for that direction.
                d.bssplit[dir] = None;
            }
        }
        Ok(())
    }),
    y("blockalign", &["ba"], "blockalign=4k", "random offsets are multiples of this (`read,write`); default, as fio, the direction's smallest block size (`bssplit`/`bsrange`: a large block may start at any multiple of the smallest)", |d, a| {
        let (parts, _) = a.dirs()?;
        for (dir, part) in parts.iter().enumerate() {
            if let Some(p) = part {
                d.job.blockalign[dir] = parse_bs(p)?;
            }
        }
        Ok(())
    }),
    y("norandommap", &[], "norandommap", "random offsets drawn with replacement; without it (fio's default) a random job keeps fio's random map: no block repeats until all are done, a taken block gives way to the next free one, a block overlapping done ones is cut to the free extent", |d, a| { d.job.norandommap = a.flag()?; Ok(()) }),
    y("bssplit", &[], "bssplit=4k/50:64k/50", "block-size table, optionally `reads,writes`", |d, a| bs_table(d, a, "bssplit", parse_bssplit)),
    y("bsrange", &["blocksize_range"], "bsrange=4k-64k", "sizes drawn from MIN-MAX in multiples of MIN, with fio's probabilities, optionally `reads,writes`", |d, a| bs_table(d, a, "bsrange", parse_bsrange)),
    y("size", &[], "size=1g", "bytes of the region each thread works on (split over `nrfiles`), and the default `io_size`", |d, a| {
        no_percent(a, "a size in percent of the device", "size=1g")?;
        if let Some(n) = zone_count(a.need()?)? {
            d.nz.size = Some((n, a.at.clone()));
            d.size = Some((n.max(1), a.at.clone()));
            return Ok(());
        }
        d.nz.size = None;
        d.size = Some((parse_positive_size(a.need()?)?, a.at.clone()));
        Ok(())
    }),
    y("filesize", &[], "filesize=64m", "size of each of the thread's files (one size; ranges refused); `size` then only sets the default `io_size`", |d, a| {
        let v = a.need()?;
        if v.contains('-') || v.contains(':') {
            return Err(format!("'{v}': a range of file sizes is not supported; give one size, e.g. filesize=64m"));
        }
        d.filesize = Some((parse_positive_size(v)?, a.at.clone()));
        Ok(())
    }),
    y("nrfiles", &["nr_files"], "nrfiles=4", "files per thread, laid side by side in the thread's address space; I/Os never cross a file's end", |d, a| { d.nrfiles = Some((a.uint("4", 1, 1 << 20)?, a.at.clone())); Ok(()) }),
    y("file_service_type", &[], "file_service_type=roundrobin", "roundrobin[:N] (default), sequential or random: which file the next I/O goes to", |d, a| { d.job.file_service = parse_file_service(a.need()?)?; Ok(()) }),
    y("io_size", &["io_limit"], "io_size=10g", "bytes to transfer per thread and loop (default `size`); more than `size` wraps around", |d, a| {
        no_percent(a, "io_size in percent", "io_size=10g")?;
        if let Some(n) = zone_count(a.need()?)? {
            d.nz.io_size = Some((n, a.at.clone()));
            d.io_size = Some((n.max(1), a.at.clone()));
            return Ok(());
        }
        d.nz.io_size = None;
        d.io_size = Some((parse_positive_size(a.need()?)?, a.at.clone()));
        Ok(())
    }),
    y("fill_device", &["fill_fs"], "fill_device=1", "the job's file reaches to the end of the space there is (the simulated device's capacity; under `sluice run` the file system's free space, or a block device's size) and the job ends there, as fio's at ENOSPC, with no error; only sensible with sequential writes", |d, a| { d.job.fill_device = a.flag()?; Ok(()) }),
    y("loops", &[], "loops=3", "repeat the job's I/O this many times (each loop starts sequential positions afresh)", |d, a| { d.job.loops = a.uint("3", 1, u32::MAX as u64)?; Ok(()) }),
    y("number_ios", &[], "number_ios=100000", "stop a thread after this many I/Os (also when the size is not yet done)", |d, a| { d.job.number_ios = a.some_uint("100000")?; Ok(()) }),
    y("offset", &[], "offset=1g", "start of the region", |d, a| {
        no_percent(a, "an offset in percent of the device", "offset=1g")?;
        if let Some(n) = zone_count(a.need()?)? {
            d.nz.offset = Some((n, a.at.clone()));
            d.offset = Some((0, a.at.clone()));
            return Ok(());
        }
        d.nz.offset = None;
        d.offset = Some((parse_size(a.need()?)?, a.at.clone()));
        Ok(())
    }),
    y("offset_increment", &[], "offset_increment=1g", "thread t of the job (numjobs) starts at offset + t × this, as fio's sub-jobs", |d, a| {
        no_percent(a, "an offset increment in percent of the device", "offset_increment=1g")?;
        if let Some(n) = zone_count(a.need()?)? {
            d.nz.offset_increment = Some((n, a.at.clone()));
            return Ok(());
        }
        d.nz.offset_increment = None;
        d.job.offset_increment = parse_size(a.need()?)?;
        Ok(())
    }),
    y("iodepth", &[], "iodepth=32", "I/Os in flight per thread", |d, a| { d.job.iodepth = a.uint("32", 1, 65535)?; Ok(()) }),
    y("numjobs", &[], "numjobs=4", "threads of the job (one flow)", |d, a| { d.job.numjobs = a.uint("4", 1, 65535)?; Ok(()) }),
    y("runtime", &["timeout"], "runtime=30s", "time limit", |d, a| { d.job.runtime_ns = Some(a.time(TimeUnit::Seconds)?).filter(|&t| t > 0); Ok(()) }),
    y("time_based", &[], "time_based", "run for `runtime`, wrapping around; without a runtime it is ignored with a warning, as fio does (fio: \"time_based requires a runtime\"), and the job runs once over its size", |d, a| { d.job.time_based = a.flag()?; Ok(()) }),
    y("ramp_time", &[], "ramp_time=5s", "warm-up excluded from results; rate pacing starts afresh when it ends, as in fio", |d, a| { d.job.ramp_ns = a.time(TimeUnit::Seconds)?; Ok(()) }),
    y("startdelay", &[], "startdelay=1s", "delay before the job starts", |d, a| { d.job.startdelay_ns = a.time(TimeUnit::Seconds)?; Ok(()) }),
    y("thinktime", &[], "thinktime=100us", "pause after each completion", |d, a| { d.job.thinktime_ns = a.time(TimeUnit::Micros)?; Ok(()) }),
    y("rate", &[], "rate=4m", "bytes/s cap, total or `read,write`", |d, a| { (d.job.rate_bytes, d.job.rate_bytes_total) = rates(a, parse_size)?; Ok(()) }),
    y("rate_iops", &[], "rate_iops=1000", "I/Os per second cap, total or `read,write`", |d, a| { (d.job.rate_iops, d.job.rate_iops_total) = rates(a, |p| parse_uint(p, "1000"))?; Ok(()) }),
    y("rate_process", &[], "rate_process=poisson", "linear (default) or poisson: exponential gaps with the rate's mean, seeded like the job's stream", |d, a| {
        d.job.rate_process = match a.need()?.trim().to_ascii_lowercase().as_str() {
            "linear" => RateProcess::Linear,
            "poisson" => RateProcess::Poisson,
            v => return Err(format!("cannot read '{v}' as a rate process; use linear or poisson")),
        };
        Ok(())
    }),
    y("randseed", &[], "randseed=42", "mixed into each thread's random stream", |d, a| { d.job.randseed = Some(parse_uint(a.need()?, "42")?); Ok(()) }),
    y("random_distribution", &[], "random_distribution=zipf:1.2", "random (uniform), zipf:θ[:c], pareto:h[:c], normal:σ%[:c] (gauss), zoned:A/S%:…, zoned_abs:A/SIZE:…, sequence:I,J,… (block indices in the smallest block size, taken in turn; an index past the file is refused) — as fio computes them", |d, a| { d.distribution = Some((parse_distribution(a.need()?)?, a.at.clone())); Ok(()) }),
    y("random_sequence_stride", &[], "random_sequence_stride=1", "with random_distribution=sequence: each round of the sequence is shifted by its length (fio's strided block groups); default 0 repeats it", |d, a| { d.job.sequence_stride = a.flag()?; Ok(()) }),
    y("percentage_random", &[], "percentage_random=80", "percent of a random job's I/Os that are random, the rest continue sequentially; `read,write`", |d, a| {
        let (parts, _) = a.dirs()?;
        let mut p = d.percentage_random.as_ref().map_or([100, 100], |x| x.0);
        for (dir, part) in parts.iter().enumerate() {
            if let Some(v) = part {
                p[dir] = small_uint(v, "80", 0, 100)?;
            }
        }
        d.percentage_random = Some((p, a.at.clone()));
        Ok(())
    }),
    y("zonemode", &[], "zonemode=zbd", "none; strided: I/O stays in a window of `zonerange` bytes until `zonesize` bytes were transferred, then moves on by `zonerange` + `zoneskip`; zbd: a zoned block device (sluice sim on a zoned profile such as `zns`) — writes at the zones' write pointers, reads of written data; default strided when `zonesize` is given, else none, as fio", |d, a| { d.zonemode = Some(parse_zone_mode(a.need()?)?); Ok(()) }),
    y("zonesize", &[], "zonesize=256m", "strided: bytes transferred per window; zbd: the zone size (must be the device's; the device's when not given)", |d, a| { d.job.zone.size = parse_size(a.need()?)?; Ok(()) }),
    y("zonerange", &[], "zonerange=256m", "strided: the window's size (default `zonesize`); ignored by zbd", |d, a| { d.job.zone.range = parse_size(a.need()?)?; Ok(()) }),
    y("zoneskip", &[], "zoneskip=1g", "strided: bytes skipped after each window (also in zones, `2z`); zbd: must be 0", |d, a| {
        match zone_count(a.need()?)? {
            Some(n) => d.nz.skip = Some((n, a.at.clone())),
            None => d.job.zone.skip = parse_size(a.need()?)?,
        }
        Ok(())
    }),
    y("zonecapacity", &[], "zonecapacity=192m", "zbd: writable bytes per zone (default the zone size); a zoned device's own capacity wins, as in fio", |d, a| { d.job.zone.capacity = parse_size(a.need()?)?; Ok(()) }),
    y("max_open_zones", &[], "max_open_zones=8", "zbd: most zones all jobs of a file write at once (default the device's open-zone limit; 0: no limit where the device has none); above the device's limit only with `ignore_zone_limits`", |d, a| { d.job.zone.max_open = Some(a.uint("8", 0, u32::MAX as u64)?); Ok(()) }),
    y("job_max_open_zones", &[], "job_max_open_zones=4", "zbd: most zones one job writes at once (0: no limit)", |d, a| { d.job.zone.job_max_open = a.uint("4", 0, u32::MAX as u64)?; Ok(()) }),
    y("ignore_zone_limits", &[], "ignore_zone_limits=1", "zbd: allow `max_open_zones` above the device's limit (the device then closes zones implicitly, and refuses writes past its active-zone limit)", |d, a| { d.job.zone.ignore_limits = a.flag()?; Ok(()) }),
    y("zone_reset_threshold", &[], "zone_reset_threshold=0.7", "zbd: when the written share of the job's zones is at least this, zones are reset as `zone_reset_frequency` says", |d, a| { d.job.zone.reset_threshold = parse_ratio(a.need()?, "0.7")?; Ok(()) }),
    y("zone_reset_frequency", &[], "zone_reset_frequency=0.125", "zbd: past the threshold, the zone a write picks is reset first once every 1 / this writes (fio's garbage-collection simulation)", |d, a| { d.job.zone.reset_frequency = parse_ratio(a.need()?, "0.125")?; Ok(()) }),
    y("read_beyond_wp", &[], "read_beyond_wp=1", "zbd: reads may go past a zone's write pointer (the device answers them without the media); default: reads only of written data, a job with none left ends", |d, a| { d.job.zone.read_beyond_wp = a.flag()?; Ok(()) }),
    y("fdp", &[], "fdp=1", "NVMe Flexible Data Placement: each write carries a placement ID (reclaim unit handle) chosen by `plid_select` from `plids`; sluice sim on a profile with FDP (`nand`: 8 handles) gives each handle its own write point, so data of different handles never share an erase block; an FDP job does direct I/O (passthrough commands, no page cache); `sluice run` refuses it (it issues no NVMe passthrough)", |d, a| { d.fdp = Some((a.flag()?, a.at.clone())); Ok(()) }),
    y("dataplacement", &["data_placement"], "dataplacement=fdp", "none (the default) or fdp (as `fdp=1`); streams (NVMe streams directives) is refused: not modelled", |d, a| {
        let v = a.need()?.trim();
        let fdp = match v {
            "none" => false,
            "fdp" => true,
            "streams" => return Err("'streams': NVMe streams directives are not modelled by sluice's devices; use dataplacement=fdp (with a profile that has FDP, e.g. --device nand) or none".into()),
            o => return Err(format!("'{o}': give none, fdp or streams")),
        };
        d.dataplacement = Some((fdp, a.at.clone()));
        Ok(())
    }),
    y("plid_select", &["fdp_pli_select"], "plid_select=random", "how each write's placement ID is chosen from `plids`: roundrobin (the default, in turn per thread) or random (uniform, from the thread's seeded stream); scheme is refused", |d, a| { d.job.placement.select = parse_plid_select(a.need()?)?; Ok(()) }),
    y("plids", &["fdp_pli"], "plids=0,2-4", "the placement ID indices a job's writes may use, as fio (indices into the device's handles, sorted; at most 128); default all of the device's; an index not below the device's handle count is refused", |d, a| { d.job.placement.ids = parse_plids(a.need()?)?; Ok(()) }),
    y("md_per_io_size", &[], "md_per_io_size=64", "bytes of separate metadata buffer per I/O (default 0); above 0 it needs a namespace formatted with separate metadata, which neither sluice's simulated devices nor `sluice run`'s files have: refused", |d, a| { d.job.pi.md_per_io_size = num(a.need()?)?; Ok(()) }),
    y("pi_act", &[], "pi_act=0", "protection information action (default 1, the controller's); pi_act=0 (fio generates and checks PI) needs a namespace formatted with protection information, which sluice's devices and files lack: refused", |d, a| { d.job.pi.pi_act = a.flag()?; Ok(()) }),
    y("pi_chk", &[], "pi_chk=GUARD,REFTAG", "protection information checks (GUARD, REFTAG, APPTAG); any needs a namespace formatted with PI, which sluice's devices and files lack: refused", |d, a| { d.job.pi.pi_chk = parse_pi_chk(a.need()?)?; Ok(()) }),
    y("apptag", &[], "apptag=0x1234", "the PI application tag (default 0x1234), checked only with pi_chk=APPTAG (refused)", |d, a| { d.job.pi.apptag = tag16(a.need()?)?; Ok(()) }),
    y("apptag_mask", &[], "apptag_mask=0xffff", "the PI application tag mask (default 0xffff), used only with pi_chk=APPTAG (refused)", |d, a| { d.job.pi.apptag_mask = tag16(a.need()?)?; Ok(()) }),
    y("prio", &[], "prio=4", "I/O priority level → weight 8 − prio", |d, a| { d.job.prio = Some(a.uint("4", 0, 7)?); Ok(()) }),
    y("prioclass", &[], "prioclass=2", "1 real time (critical), 2 best effort, 3 idle", |d, a| { d.job.prioclass = Some(a.uint("2", 0, 3)?); Ok(()) }),
    y("cmdprio_percentage", &[], "cmdprio_percentage=20", "percent of the job's I/Os (or `read,write`) issued with the priority of cmdprio_class/cmdprio, drawn per I/O as fio does: real time → the critical class, best effort → normal, idle → idle, per request (the level orders nothing: sluice's weights are per flow, and mq-deadline reads only a request's class)", prio::set_pct),
    y("cmdprio_bssplit", &[], "cmdprio_bssplit=64k/25/1/0:1m/0", "per block size, percent of the I/Os issued with a priority: `bs/pct` (with cmdprio_class/cmdprio), `bs/pct/class/level` or `…/hint`; `read,write`; exclusive with cmdprio_percentage; classes as cmdprio_percentage", prio::set_bssplit),
    y("cmdprio_class", &[], "cmdprio_class=1", "the ioprio class of the I/Os cmdprio_percentage/cmdprio_bssplit draw (default 1, real time → critical)", prio::set_class),
    y("cmdprio", &[], "cmdprio=0", "the ioprio level of those I/Os (default 0); recorded, no per-request weight in sluice", prio::set_level),
    y("cmdprio_hint", &[], "cmdprio_hint=1", "the priority hint of those I/Os (command duration limits): a warning says it has no effect; the I/Os keep their class", prio::set_hint),
    y("wait_for", &[], "wait_for=writers", "the job starts when every thread of the named earlier job is done (fio's rules: no forward reference, a unique name); other jobs of its group run meanwhile", |d, a| { d.wait_for = Some((a.need()?.trim().to_string(), a.at.clone())); Ok(()) }),
    y("flow", &[], "flow=2", "fio's token flow control: the jobs of one flow_id keep their I/O counts in the ratio of their flow weights (a thread over its share waits), in both worlds", |d, a| { d.job.token_flow = a.uint("2", 0, u32::MAX as u64)?; Ok(()) }),
    y("flow_id", &[], "flow_id=1", "the token flow a job's `flow` weight counts in (default 0)", |d, a| { d.job.token_flow_id = a.uint("1", 0, u32::MAX as u64)?; Ok(()) }),
    y("flow_sleep", &[], "flow_sleep=100", "µs a thread over its flow share sleeps, after its I/Os in flight complete (default 0: it tries again when another thread of the flow has issued)", |d, a| { d.job.flow_sleep_ns = a.time(TimeUnit::Micros)?; Ok(()) }),
    y("latency_target", &[], "latency_target=10ms", "fio's queue-depth search: each thread starts at depth 1 and moves between 1 and iodepth to keep I/O latency under this (µs when bare) and ends at the depth found (both worlds; the report covers the whole search, fio resets its statistics for the last window)", |d, a| { d.job.latency_target_ns = Some(a.time(TimeUnit::Micros)?).filter(|&t| t > 0); Ok(()) }),
    y("latency_window", &[], "latency_window=1s", "the window of the queue-depth search (µs when bare)", |d, a| { d.job.latency_window_ns = a.time(TimeUnit::Micros)?; Ok(()) }),
    y("latency_percentile", &[], "latency_percentile=99", "percent of a window's I/Os that must meet latency_target (default 100)", |d, a| {
        let v = a.need()?;
        let p: f64 = v.trim().trim_end_matches('%').parse().map_err(|_| format!("cannot read '{v}' as a percentage; e.g. latency_percentile=99.9"))?;
        if !(0.0..=100.0).contains(&p) {
            return Err(format!("{p} is out of range; give 0 to 100"));
        }
        d.job.latency_percentile = p;
        Ok(())
    }),
    y("latency_run", &[], "latency_run=1", "keep searching for the depth instead of ending at the one found", |d, a| { d.job.latency_run = a.flag()?; Ok(()) }),
    y("new_group", &[], "new_group", "start a new reporting group (fio's groupid: group_reporting sums a group's jobs into one entry); the jobs still run as before (stonewall waits)", |d, a| { d.job.new_group = a.flag()?; Ok(()) }),
    y("stonewall", &["wait_for_previous"], "stonewall", "wait for all earlier jobs to finish first", |d, a| { d.job.stonewall = a.flag()?; Ok(()) }),
    y("continue_on_error", &[], "continue_on_error=io", "the errors a thread goes on after: none (default: the thread ends at its first failed I/O or failed check, as fio's), read, write (also trims and syncs), io, verify, all; every failed I/O counts as EIO (sluice carries no errno)", |d, a| { d.job.continue_on = ContinueOn::parse(a.need()?)?; Ok(()) }),
    y("exitall", &[], "exitall", "when a job ends, the jobs `exit_what` names end (both worlds); as fio's, one setting for the whole run: `exitall` on any job applies to every job", |d, a| { d.job.exitall = a.flag()?; Ok(()) }),
    y("exit_what", &[], "exit_what=stonewall", "what a job's end ends under `exitall`: group (default: its reporting group, which `new_group` splits), stonewall (every running job: its stonewall group) or all (every job; fio's later groups then never start, sluice's still run)", |d, a| {
        d.job.exit_what = match a.need()?.trim().to_ascii_lowercase().as_str() {
            "group" => crate::ExitWhat::Group,
            "stonewall" => crate::ExitWhat::Stonewall,
            "all" => crate::ExitWhat::All,
            v => return Err(format!("cannot read '{v}' as exit_what; use group, stonewall or all")),
        };
        Ok(())
    }),
    y("group_reporting", &[], "group_reporting", "report a stonewall group's jobs and threads as one entry (the first job's name, the members summed; runtime the longest), as fio; without it each of a job's `numjobs` threads is an entry of its own (same `jobname` and `groupid`) in the JSON, terse and table output", |d, a| { d.job.group_reporting = a.flag()?; Ok(()) }),
    y("atomic", &[], "atomic=1", "every write is an atomic (untorn) write, all or nothing also across a power failure: `RWF_ATOMIC` under `sluice run` (refused where the file or device reports no atomic write unit, statx `STATX_WRITE_ATOMIC`), an NVMe write within the simulated profile's `atomic_write_bytes` under `sluice sim`; the block layer never splits one. Direct I/O (implied, as fio; direct=0 refused); each write size a power of two, naturally aligned, within the device's atomic write unit, else the job is refused", |d, a| { d.atomic = Some((a.flag()?, a.at.clone())); Ok(()) }),
    y("direct", &[], "direct=0", "direct=1 goes around the cache; direct=0 (the default, as fio's) reads and writes through sluice's page cache (class-aware dirty limits, lazy indexing, writeback) in both worlds, sized by --page-cache (64 MiB under `sluice sim`, a quarter of available memory under `sluice run`)", |d, a| { d.job.buffered = !a.flag()?; d.direct_given = true; Ok(()) }),
    y("buffered", &[], "buffered=1", "the opposite of direct: buffered=1 goes through sluice's page cache", |d, a| { d.job.buffered = a.flag()?; d.direct_given = true; Ok(()) }),
    y("fsync", &[], "fsync=32", "a sync after every N writes, once the thread's I/Os in flight have completed: writeback of the file's dirty pages (buffered jobs) then a device flush; reported in the sync section", |d, a| { d.fsync = a.uint("32", 0, u32::MAX as u64)?; Ok(()) }),
    y("fdatasync", &[], "fdatasync=32", "as fsync (a raw file has no metadata to leave out; the journaled store, `--fs`, does fdatasync); with both, the more frequent applies", |d, a| { d.fdatasync = a.uint("32", 0, u32::MAX as u64)?; Ok(()) }),
    y("end_fsync", &[], "end_fsync=1", "a sync of each of the thread's files (`nrfiles`) when it has issued all its I/O or its runtime ended, as fio: each once its I/O in flight has completed", |d, a| { d.job.end_fsync |= a.flag()?; Ok(()) }),
    y("fsync_on_close", &[], "fsync_on_close=1", "as end_fsync: sluice closes a job's files at its end (on the journaled store, `--fs`, each file is fsynced at the thread's end however it ended)", |d, a| {
        d.job.fsync_on_close = a.flag()?;
        d.job.end_fsync |= d.job.fsync_on_close;
        Ok(())
    }),
    y("create_on_open", &[], "create_on_open=1", "on the journaled store (`--fs`): each file is created when the thread first does I/O to it instead of before the run; raw files are laid out before the run (a warning says so)", |d, a| { d.job.create_on_open = a.flag()?; Ok(()) }),
    y("write_bw_log", &[], "write_bw_log=bw", "fio's bandwidth log `PREFIX_bw.N.log` (KiB/s; the job name when bare), in both worlds (the simulator's from virtual time)", |d, a| { d.log_bw = Some(log_prefix(a)); Ok(()) }),
    y("write_lat_log", &[], "write_lat_log=lat", "fio's latency logs `PREFIX_clat.N.log`, `_slat`, `_lat` (ns: reaped − dispatch, dispatch − submit, reaped − submit)", |d, a| { d.log_lat = Some(log_prefix(a)); Ok(()) }),
    y("write_iops_log", &[], "write_iops_log=iops", "fio's IOPS log `PREFIX_iops.N.log`", |d, a| { d.log_iops = Some(log_prefix(a)); Ok(()) }),
    y("log_avg_msec", &[], "log_avg_msec=1000", "average the log entries over windows of this many ms (default 0: an entry per I/O)", |d, a| { d.job.logs.avg_msec = parse_uint(a.need()?, "1000")?; Ok(()) }),
    y("per_job_logs", &[], "per_job_logs=0", "0: one log file per prefix and type for all jobs (`PREFIX_bw.log`); default 1: one per job, numbered as fio numbers threads (the threads of one job share its file)", |d, a| { d.job.logs.per_job = a.flag()?; Ok(()) }),
    y("steadystate", &["ss"], "steadystate=iops_slope:0.1%", "fio's steady-state early end of the job (iops, iops_slope, bw, bw_slope, lat, lat_slope — the interval's mean completion latency in ns — with an absolute or % limit), judged on the job's threads together, in both worlds; needs ss_dur", |d, a| { d.ss = Some((parse_steadystate(a.need()?)?, a.at.clone())); Ok(()) }),
    y("steadystate_duration", &["ss_dur"], "ss_dur=60s", "the window of rates steady state is judged on (turns it on; default criterion iops_slope:0.01%)", |d, a| { d.ss_dur = Some((a.time(TimeUnit::Seconds)?, a.at.clone())); Ok(()) }),
    y("steadystate_ramp_time", &["ss_ramp"], "ss_ramp=10s", "no rates are recorded before this (plus one interval)", |d, a| { d.ss_ramp = a.time(TimeUnit::Seconds)?; Ok(()) }),
    y("steadystate_check_interval", &["ss_interval"], "ss_interval=500ms", "how often the rate is taken (default 1s)", |d, a| {
        let t = a.time(TimeUnit::Seconds)?;
        if t < 1_000_000 {
            return Err(format!("'{}' is shorter than 1 ms; give e.g. 1s or 500ms", a.need()?));
        }
        d.ss_interval = Some((t, a.at.clone()));
        Ok(())
    }),
    y("verify", &[], "verify=crc32c", "crc32c, crc64, md5, sha1, sha256, xxhash (XXH32), meta (the header alone, sealed by a CRC-32C) or pattern (pattern needs `verify_pattern`, else the job is refused): `sluice run` writes each block with a header and checksum and reads it back to check it (a read-only job checks what it reads); the simulator carries no data, runs the job without its verify reads and says so", |d, a| { d.verify = Some((parse_verify_kind(a.need()?)?, a.at.clone())); Ok(()) }),
    y("do_verify", &[], "do_verify=0", "read back and check every written block when the write phase ends (default 1)", |d, a| { d.do_verify = Some(a.flag()?); Ok(()) }),
    y("verify_backlog", &[], "verify_backlog=1024", "check the written blocks after every N writes, before writing more", |d, a| { d.verify_backlog = a.some_uint("1024")?; Ok(()) }),
    y("verify_interval", &[], "verify_interval=512", "a header and checksum for every N bytes of a block instead of one per block (N divides every block size and holds the header: at least 64 bytes)", |d, a| { d.verify_interval = Some((parse_bs(a.need()?)?, a.at.clone())); Ok(()) }),
    y("verify_pattern", &[], "verify_pattern=0xdeadbeef", "the data of written blocks (hex bytes, a quoted string, bytes 0..=255); alone it means verify=pattern, as in fio", |d, a| { d.verify_pattern = Some(parse_pattern(a.need()?)?); Ok(()) }),
    y("verify_fatal", &[], "verify_fatal=1", "end the job at the first block that fails its check", |d, a| { d.verify_fatal = a.flag()?; Ok(()) }),
    y("filename", &[], "filename=data", "jobs with the same file share its address range (one file; `a:b` lists refused)", |d, a| {
        let v = a.need()?;
        let files = split_paths(v);
        match files.len() {
            0 => return Err(format!("needs a value, e.g. {}", example(a.key))),
            1 => d.filename = Some((files[0].clone(), a.at.clone())),
            n => return Err(format!(
                "'{v}' names {n} files; sluice takes one file per job (write '\\:' for a colon in a name). \
                 Give each file its own job with filename=, or use nrfiles for several files per thread"
            )),
        }
        Ok(())
    }),
    y("filename_format", &[], "filename_format=$jobname.$jobnum.$filenum", "names generated files; without `$jobnum` a job's threads share their files", |d, a| { d.filename_format = Some((a.need()?.to_string(), a.at.clone())); Ok(()) }),
    y("directory", &[], "directory=/mnt/a:/mnt/b", "`:`-separated list; a relative `filename` is taken in the first directory, as in fio", |d, a| {
        let dirs = split_paths(a.need()?);
        if dirs.is_empty() {
            return Err(format!("needs a value, e.g. {}", example(a.key)));
        }
        d.directory = Some((dirs, a.at.clone()));
        Ok(())
    }),
    y("ioengine", &[], "ioengine=io_uring", "local engines (sync, psync, libaio, io_uring, posixaio, pvsync, pvsync2, mmap, null, …) are accepted silently (sluice runs its own engine); as in fio, the synchronous ones (sync, psync, vsync, pvsync, pvsync2, mmap, splice) and libaio on buffered I/O run at iodepth=1, with a warning when iodepth says more; network, passthrough, zoned and non-I/O engines are refused", |d, a| { d.record(a.key, Some(a.need()?)); Ok(()) }),
    directive("include", "include common.fio", "directive: the file's options, relative to the including file; nested up to 16 deep, cycles refused"),
    y("sluice_critical", &[], "sluice_critical=1", "latency-critical requests", |d, a| {
        d.critical = match a.value.map(str::trim) {
            Some("1") | None => true,
            Some("0") => false,
            Some(v) => return Err(format!("cannot read '{v}'; write sluice_critical=1 (critical) or sluice_critical=0")),
        };
        Ok(())
    }),
    y("sluice_weight", &[], "sluice_weight=8", "flow weight", |d, a| { d.weight = Some(a.uint("8", 1, u32::MAX as u64)?); Ok(()) }),
    y("sluice_flow", &[], "sluice_flow=tenant-a", "flow name shared by jobs", |d, a| { d.flow = Some(a.need()?.to_string()); Ok(()) }),
];
