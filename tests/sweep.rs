//! `sluice sweep` and parallel `sluice repro` end to end: a parallel run prints what a
//! serial one prints; cells run as separate commands and merged give the in-process
//! sweep's table, CSV and JSON byte for byte; each row's command replays its cell;
//! bad input is refused.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use common::{refused, sluice, stderr, write};

const JOB: &str = "[global]\nsize=64m\ntime_based\nruntime=20ms\n\
[crit]\nrw=randread\nbs=4k\nsluice_critical=1\n\
[bulk]\nrw=randwrite\nbs=64k\niodepth=16\n";

/// The sweep's axes (after the job file): 2 policies × 2 seeds × 2 × 2 `--set` values.
const AXES: &[&str] = &[
    "--policy",
    "none,rcp",
    "--seed",
    "1..2",
    "--set",
    "iodepth=1,4",
    "--set",
    "bulk.bs=64k,128k",
];

fn run_ok(args: &[&str]) -> Output {
    let o = sluice(args);
    assert!(o.status.success(), "sluice {args:?}: {}", stderr(&o));
    o
}

/// Run `line` with sh, with the `sluice` under test first on PATH.
fn shell(line: &str, dir: &Path) -> Output {
    let exe = Path::new(env!("CARGO_BIN_EXE_sluice"));
    let path = format!(
        "{}:{}",
        exe.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{line}: {}", stderr(&o));
    o
}

/// `sluice sweep JOB AXES extra...` in `dir`; returns stdout, CSV and JSON bytes.
fn sweep(dir: &Path, job: &str, extra: &[&str], tag: &str) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let csv = dir.join(format!("{tag}.csv"));
    let json = dir.join(format!("{tag}.json"));
    let mut args = vec!["sweep", job];
    args.extend_from_slice(AXES);
    args.extend_from_slice(extra);
    args.extend([
        "-q",
        "--csv",
        csv.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    let o = run_ok(&args);
    (
        o.stdout,
        std::fs::read(&csv).unwrap(),
        std::fs::read(&json).unwrap(),
    )
}

#[test]
fn parallel_sweep_equals_serial_and_merged_cells_equal_the_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", JOB);
    let serial = sweep(dir.path(), &job, &["-j", "1"], "serial");
    let parallel = sweep(dir.path(), &job, &["-j", "3"], "parallel");
    assert_eq!(serial, parallel, "-j 3 differs from -j 1");
    let table = String::from_utf8(serial.0.clone()).unwrap();
    assert_eq!(table.lines().count(), 3 + 16, "{table}");
    assert!(table.contains("crit (read)") && table.contains("bulk (write)"));

    // Each cell as its own command, run one at a time by the shell, then merged.
    let cells = dir.path().join("cells");
    std::fs::create_dir(&cells).unwrap();
    let mut args = vec!["sweep", job.as_str()];
    args.extend_from_slice(AXES);
    args.extend(["--list", "--cells-dir", cells.to_str().unwrap()]);
    let listed = String::from_utf8(run_ok(&args).stdout).unwrap();
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 16);
    assert!(lines[5].contains("--cell 5 --json") && lines[5].contains("cell-05.json"));
    // Out of order, as a cluster would finish them.
    for line in lines.iter().rev() {
        shell(line, dir.path());
    }
    let mut files: Vec<String> = std::fs::read_dir(&cells)
        .unwrap()
        .map(|e| e.unwrap().path().to_str().unwrap().to_string())
        .collect();
    files.reverse();
    let csv = dir.path().join("merged.csv");
    let json = dir.path().join("merged.json");
    let mut args = vec!["sweep", "merge"];
    args.extend(files.iter().map(String::as_str));
    args.extend([
        "--csv",
        csv.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    let merged = run_ok(&args);
    assert_eq!(merged.stdout, serial.0, "merged table");
    assert_eq!(std::fs::read(&csv).unwrap(), serial.1, "merged CSV");
    assert_eq!(std::fs::read(&json).unwrap(), serial.2, "merged JSON");

    // A missing cell is an error unless --partial; a cell given twice is an error.
    let o = sluice(&["sweep", "merge", &files[0], &files[1]]);
    refused(&o, &["14 of 16 cells missing", "--partial"]);
    let o = run_ok(&["sweep", "merge", &files[0], &files[1], "--partial"]);
    assert_eq!(String::from_utf8(o.stdout).unwrap().lines().count(), 3 + 2);
    refused(
        &sluice(&["sweep", "merge", &files[0], &files[0]]),
        &["is in both"],
    );

    // A cell whose policy or seed contradicts its index (an edited file) is refused.
    let c5 = cells.join("cell-05.json");
    let text = std::fs::read_to_string(&c5).unwrap();
    for (from, to) in [
        ("\"seed\": 2", "\"seed\": 1"),
        ("\"policy\": \"none\"", "\"policy\": \"rcp\""),
    ] {
        let edited = text.replacen(from, to, 1);
        assert_ne!(edited, text, "cell 5 holds {from}");
        let bad = write(dir.path(), "edited.json", &edited);
        let mut args = vec!["sweep", "merge", "--partial", bad.as_str()];
        args.push(files[0].as_str());
        refused(&sluice(&args), &["cell 5", "was edited"]);
    }
    // A cell run after the job file was edited is from another sweep.
    std::fs::write(&job, JOB.replace("runtime=20ms", "runtime=21ms")).unwrap();
    let line = lines[3].replace("cell-03.json", "cell-03-edited.json");
    shell(&line, dir.path());
    let edited = cells.join("cell-03-edited.json");
    let o = sluice(&[
        "sweep",
        "merge",
        "--partial",
        &files[0],
        edited.to_str().unwrap(),
    ]);
    refused(&o, &["another sweep"]);
}

#[test]
fn each_row_replays_with_its_command() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", JOB);
    let (_, _, json) = sweep(dir.path(), &job, &[], "s");
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["sweep"]["cells"], 16);
    let cells = v["cells"].as_array().unwrap();
    // Cross-product order: iodepth, then bulk.bs, then policy, then seed (fastest).
    let c = &cells[11];
    assert_eq!(
        (c["policy"].as_str(), c["seed"].as_u64()),
        (Some("rcp"), Some(2))
    );
    assert_eq!(c["set"]["iodepth"], "4");
    assert_eq!(c["set"]["bulk.bs"], "64k");
    let cmd = c["command"].as_str().unwrap();
    assert!(cmd.starts_with("sluice sim "), "{cmd}");
    let o = shell(&format!("{cmd} -q --output-format json"), dir.path());
    let sim: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let crit = &sim["jobs"][0]["read"];
    let row = &c["jobs"][0];
    assert_eq!(row["job"], "crit");
    assert_eq!(row["iops"], crit["iops"]);
    assert_eq!(row["bw_bytes"], crit["bw_bytes"]);
    assert_eq!(row["lat_p99_ns"], crit["lat_ns"]["percentile"]["99.000000"]);
    assert_eq!(
        row["lat_p99_9_ns"],
        crit["lat_ns"]["percentile"]["99.900000"]
    );
    // The seeds differ, so the cells differ (the seed is not ignored).
    assert_ne!(cells[10]["jobs"][0], cells[11]["jobs"][0]);
}

#[test]
fn sweep_of_the_embedded_job_and_bad_input() {
    let o = run_ok(&["sweep", "-q", "--set", "writers.iodepth=1"]);
    let table = String::from_utf8(o.stdout).unwrap();
    // none, ld and rcp, as `sluice sim` with no job file.
    assert_eq!(table.lines().count(), 3 + 3, "{table}");
    assert!(table.contains("critical-reader (read)"), "{table}");

    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", JOB);
    for (args, needles) in [
        (&["--policy", "nope"][..], &["unknown policy 'nope'"][..]),
        (&["--set", "iodepht=4"], &["--set iodepht=4", "iodepth"]),
        (
            &["--set", "iodepth=0"],
            &["--set iodepth=0", "out of range"],
        ),
        (&["--set", "iodepth="], &["empty entry"]),
        (&["--set", "iodepth=1,,2"], &["empty entry"]),
        (&["--set", "iodepth"], &["no '='"]),
        (&["--set", "other.iodepth=2"], &["no job section [other]"]),
        (
            &["--set", "bs=32m,128m"],
            &["--set bs=128m", "larger than size"],
        ),
        (&["--seed", "3..1"], &["--seed '3..1'"]),
        (&["--seed", "1,x"], &["--seed 'x'"]),
        (&["--seed", "1,1"], &["given twice"]),
        (&["--device", "ull,"], &["empty entry"]),
        (&["--device", "nope"], &["nope"]),
        (&["--cell", "1"], &["--cell 1", "1 cells"]),
        (&["--cores", "0"], &["--cores"]),
    ] {
        let mut a = vec!["sweep", job.as_str(), "-q"];
        a.extend_from_slice(args);
        refused(&sluice(&a), needles);
    }
    refused(
        &sluice(&["sweep", "merge", &job]),
        &["not a sweep file (written by `sluice sweep --json`)"],
    );
}

#[test]
fn sim_set_overrides_a_job_option() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", JOB);
    let json = |extra: &[&str]| -> serde_json::Value {
        let mut a = vec!["sim", job.as_str(), "-q", "--output-format", "json"];
        a.extend_from_slice(extra);
        serde_json::from_slice(&run_ok(&a).stdout).unwrap()
    };
    let base = json(&[]);
    let set = json(&["--set", "crit.bs=8k"]);
    let bytes_per_io = |v: &serde_json::Value, job: usize, dir: &str| {
        let r = &v["jobs"][job][dir];
        r["io_bytes"].as_f64().unwrap() / r["total_ios"].as_f64().unwrap()
    };
    assert_eq!(bytes_per_io(&base, 0, "read"), 4096.0);
    assert_eq!(bytes_per_io(&set, 0, "read"), 8192.0);
    // The other job keeps its block size.
    assert_eq!(bytes_per_io(&set, 1, "write"), 65536.0);
    refused(
        &sluice(&["sim", &job, "--set", "crit.rw=sideways"]),
        &["--set crit.rw=sideways", "option 'rw'"],
    );
}

#[test]
fn repro_in_parallel_prints_what_a_serial_run_prints() {
    let dir = tempfile::tempdir().unwrap();
    let run = |jobs: &str| {
        let plots = dir.path().join(format!("plots-{jobs}"));
        let o = sluice(&[
            "repro",
            "fastresponse-block",
            "rcp-block",
            "--only",
            "a",
            "--seeds",
            "2",
            "-q",
            "-j",
            jobs,
            "--plot",
            plots.to_str().unwrap(),
        ]);
        let mut figs: Vec<(String, Vec<u8>)> = std::fs::read_dir(&plots)
            .unwrap()
            .map(|e| {
                let p = e.unwrap().path();
                (p.display().to_string(), std::fs::read(&p).unwrap())
            })
            .map(|(p, b)| (p.rsplit('/').next().unwrap().to_string(), b))
            .collect();
        figs.sort();
        (o.status.code(), o.stdout, figs)
    };
    let serial = run("1");
    let parallel = run("3");
    assert_eq!(serial.0, Some(0));
    let table = String::from_utf8(serial.1.clone()).unwrap();
    assert!(
        table.contains("admission") && table.contains("fig19"),
        "{table}"
    );
    assert!(!serial.2.is_empty(), "no figures written");
    assert_eq!(serial, parallel);
}

#[test]
fn buffered_cells_carry_the_page_cache_options() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(
        dir.path(),
        "b.fio",
        "[global]\nsize=8m\ndirect=0\n[w]\nrw=randwrite\nbs=4k\n\
         [r]\nrw=randread\nbs=4k\nsluice_critical=1\n",
    );
    let json = dir.path().join("b.json");
    run_ok(&[
        "sweep",
        &job,
        "--policy",
        "none,rcp",
        "--page-cache",
        "2m",
        "--dirty-ratio",
        "2%,30%",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let c = &v["cells"][1];
    let cmd = c["command"].as_str().unwrap();
    assert!(
        cmd.ends_with("--policy rcp --seed 1 --page-cache 2m --dirty-ratio 2%,30%"),
        "{cmd}"
    );
    let o = shell(&format!("{cmd} -q --output-format json"), dir.path());
    let sim: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(c["jobs"][0]["iops"], sim["jobs"][0]["write"]["iops"]);
    assert_eq!(
        c["jobs"][0]["lat_p99_ns"],
        sim["jobs"][0]["write"]["lat_ns"]["percentile"]["99.000000"]
    );
    // The page cache's size matters, so the option is not ignored.
    let small = dir.path().join("small.json");
    run_ok(&[
        "sweep",
        &job,
        "--policy",
        "rcp",
        "--page-cache",
        "64k",
        "--dirty-ratio",
        "2%,30%",
        "-q",
        "--json",
        small.to_str().unwrap(),
    ]);
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(&small).unwrap()).unwrap();
    assert_ne!(s["cells"][0]["jobs"][0], c["jobs"][0]);
}

#[test]
fn fs_is_an_axis_and_each_row_replays_on_its_file_system() {
    let dir = tempfile::tempdir().unwrap();
    // Buffered critical writes with an fsync every 4: on the store, compound commits
    // and f-transactions take different times.
    let job = write(
        dir.path(),
        "s.fio",
        "[w]\nrw=randwrite\nbs=4k\nsize=256k\nfsync=4\nsluice_critical=1\n",
    );
    let csv = dir.path().join("fs.csv");
    let json = dir.path().join("fs.json");
    let o = run_ok(&[
        "sweep",
        &job,
        "--fs",
        "raw,compound,fjournal",
        "--policy",
        "none,rcp",
        "-q",
        "--csv",
        csv.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    let table = String::from_utf8(o.stdout).unwrap();
    assert_eq!(table.lines().count(), 3 + 6, "{table}");
    assert!(table.lines().nth(1).unwrap().contains(" fs "), "{table}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert!(
        v["sweep"]["command"]
            .as_str()
            .unwrap()
            .contains("--fs raw,compound,fjournal"),
        "{}",
        v["sweep"]["command"]
    );
    let cells = v["cells"].as_array().unwrap();
    // Cross-product order: the file system before the policy.
    let fs: Vec<(&str, &str)> = cells
        .iter()
        .map(|c| (c["fs"].as_str().unwrap(), c["policy"].as_str().unwrap()))
        .collect();
    assert_eq!(
        fs,
        [
            ("raw", "none"),
            ("raw", "rcp"),
            ("compound", "none"),
            ("compound", "rcp"),
            ("fjournal", "none"),
            ("fjournal", "rcp")
        ]
    );
    // The file system matters: the same policy's rows differ.
    assert_ne!(cells[2]["jobs"][0], cells[4]["jobs"][0]);
    assert_ne!(cells[0]["jobs"][0], cells[2]["jobs"][0]);
    // A raw cell replays as before; a store cell with its --fs.
    assert!(!cells[0]["command"].as_str().unwrap().contains("--fs"));
    for c in [&cells[2], &cells[5]] {
        let cmd = c["command"].as_str().unwrap();
        assert!(
            cmd.contains(&format!("--fs {}", c["fs"].as_str().unwrap())),
            "{cmd}"
        );
        let o = shell(&format!("{cmd} -q --output-format json"), dir.path());
        let sim: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let w = &sim["jobs"][0]["write"];
        assert_eq!(c["jobs"][0]["iops"], w["iops"]);
        assert_eq!(c["jobs"][0]["lat_mean_ns"], w["lat_ns"]["mean"]);
        assert_eq!(
            c["jobs"][0]["lat_p99_ns"],
            w["lat_ns"]["percentile"]["99.000000"]
        );
    }
    let csv = String::from_utf8(std::fs::read(&csv).unwrap()).unwrap();
    assert!(csv.starts_with("cell,device,fs,policy,seed,"), "{csv}");
    assert!(csv
        .lines()
        .nth(5)
        .unwrap()
        .starts_with("4,ull,fjournal,none,1,"));

    // What the store cannot do is refused before anything runs.
    for (args, needles) in [
        (&["--fs", "ext4"][..], &["--fs 'ext4'", "fjournal"][..]),
        (&["--fs", "raw,raw"], &["given twice"]),
        (&["--fs", "compound,"], &["empty entry"]),
        (
            &["--fs", "compound", "--dirty-ratio", "5%,20%"],
            &["--dirty-ratio", "--fs", "+rcp"],
        ),
        (
            &["--fs", "raw,fjournal", "--set", "size=5g"],
            &["--fs fjournal", "at most"],
        ),
    ] {
        let mut a = vec!["sweep", job.as_str(), "-q"];
        a.extend_from_slice(args);
        refused(&sluice(&a), needles);
    }
}
