//! `sluice mount BACKING MOUNTPOINT`: unmodified programs' file I/O through sluice
//! (`crates/sluice-mount`, `docs/mount.md`).

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use sluice::cli::{CliError, OutputArgs, OutputFormat};

#[derive(clap::Args, Debug)]
pub struct MountArgs {
    /// The directory whose files the mount shows (every name operation is passed
    /// through to it; nothing outside it is reachable).
    backing: PathBuf,
    /// Where to mount (an existing, empty directory).
    mountpoint: PathBuf,
    /// Scheduling policy `NAME[:key=value,...]` of the mount's block layer.
    #[arg(long, short = 'p', default_value = "none")]
    policy: String,
    /// Rules file (TOML, `[[rule]]` tables) matching process name, command line, uid,
    /// cgroup or file path to a class, weight and flow; see docs/mount.md.
    #[arg(long, value_name = "FILE")]
    classes: Option<PathBuf>,
    /// The stack's cores (threads, each with its own io_uring); default: the machine's.
    #[arg(long)]
    cores: Option<u16>,
    /// CPU priority (nice, -20..=19) of the daemon's threads — the FUSE threads every
    /// request crosses and the stack's cores; default 0 (unchanged). Measured on a busy
    /// 2-core machine, -10 did not shorten the critical reader's tail (the daemon then
    /// also runs the bulk writers' work ahead of the critical program): docs/mount.md,
    /// "Where the time went". Below 0 needs root (or CAP_SYS_NICE).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true,
          value_parser = clap::value_parser!(i32).range(-20..=19))]
    nice: i32,
    /// Every SECS seconds (0.1 to 3600), print to stderr one line per class that did
    /// I/O: IOPS, MiB/s, p50 and p99 of the time in the daemon (a live view, as iotop);
    /// the last, partial interval at unmount.
    #[arg(long, value_name = "SECS")]
    stats: Option<f64>,
    /// The page cache (e.g. 256m, 1g) that serves callers who open without O_DIRECT
    /// (RCP's class-aware dirty limits, a non-critical flusher, fsync promoting the
    /// file's writeback); 0: none, every data I/O direct. At least 64k.
    #[arg(long, value_name = "SIZE", default_value = "256m")]
    cache: String,
    /// Most commands in the stack's io_uring rings at once (1..=255, default 255): past
    /// it, requests wait at the port's weighted round-robin arbiter by queue class, so
    /// `d2fq`'s classes take effect (as `sluice run --ring-cap`); without it the rings
    /// take everything and d2fq behaves as `none` on a disk with no WRR of its own.
    #[arg(long, value_name = "N")]
    ring_cap: Option<u32>,
    /// How the kernel's requests reach sluice: `uring` (FUSE over io_uring, Linux
    /// 6.14+, as root, with the kernel's switch on: `echo Y >
    /// /sys/module/fuse/parameters/enable_uring`; sluice never flips it), `dev`
    /// (reads and writes of /dev/fuse), `auto` (uring where it can serve, else dev).
    #[arg(long, value_name = "auto|uring|dev", default_value = "auto")]
    transport: String,
    /// Stay in the foreground (the only mode so far: the command serves until the mount
    /// is unmounted — `fusermount3 -u MOUNTPOINT`, Ctrl-C or SIGTERM — then prints the
    /// tables).
    #[arg(long, short = 'f')]
    foreground: bool,
    /// Write the report as fio-style JSON here at unmount.
    #[arg(long)]
    json: Option<PathBuf>,
    /// stdout at unmount: `normal` (the tables), `json` or `json+`.
    #[arg(long, value_enum, default_value = "normal")]
    output_format: OutputFormat,
    /// No messages on stderr but errors.
    #[arg(long, short = 'q')]
    quiet: bool,
}

pub fn cmd_mount(args: MountArgs) -> Result<(), CliError> {
    let out = OutputArgs {
        json: args.json.clone(),
        output_format: args.output_format,
        output: None,
        plot: None,
        ignore_unknown: false,
        section: Vec::new(),
        quiet: args.quiet,
    };
    out.check()?;
    let cores = args.cores.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(2, |n| n.get().min(64) as u16)
    });
    let stats = match args.stats {
        None => None,
        Some(s) if (0.1..=3600.0).contains(&s) => Some(std::time::Duration::from_secs_f64(s)),
        Some(s) => {
            return Err(CliError::Usage(format!(
                "--stats {s}: give the interval in seconds, from 0.1 to 3600"
            )))
        }
    };
    if let Some(n) = args
        .ring_cap
        .filter(|n| !(1..=sluice::runtime::RING_CAP).contains(n))
    {
        return Err(CliError::Usage(format!(
            "--ring-cap {n}: give 1..={} commands in the rings at once",
            sluice::runtime::RING_CAP
        )));
    }
    let cache = sluice_workload::units::parse_size(&args.cache)
        .map_err(|e| CliError::Usage(format!("--cache: {e}")))?;
    let transport: sluice_mount::Transport = args.transport.parse().map_err(CliError::Usage)?;
    let opts = sluice_mount::MountOptions {
        backing: args.backing.clone(),
        mountpoint: args.mountpoint.clone(),
        policy: args.policy.clone(),
        classes: args.classes.clone(),
        cores,
        nice: (args.nice != 0).then_some(args.nice),
        stats,
        cache,
        ring_cap: args.ring_cap,
        transport,
    };
    let _ = args.foreground;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())
            .map_err(|e| CliError::Usage(format!("cannot catch signal {sig}: {e}")))?;
    }
    let quiet = args.quiet;
    let served = sluice_mount::serve(&opts, stop, |direct, transport| {
        if !quiet {
            eprintln!(
                "sluice: {} mounted on {} (transport {transport}, policy {}, {} cores, {}{}); unmount with `fusermount3 -u {}` or Ctrl-C",
                args.backing.display(),
                args.mountpoint.display(),
                args.policy,
                cores,
                if cache == 0 {
                    "no page cache".to_string()
                } else {
                    format!("page cache {} MiB", cache >> 20)
                },
                if direct {
                    ""
                } else {
                    ", BACKING's file system refuses O_DIRECT: backing files buffered"
                },
                args.mountpoint.display()
            );
        }
    })
    .map_err(|e| CliError::Usage(e.to_string()))?;
    if let (Some(l), false) = (&served.transport_line, quiet) {
        eprintln!("{l}");
    }
    let mut reports = vec![served.report];
    out.emit(&mut reports, &mut out.sink()?)
}
