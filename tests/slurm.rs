//! docs/sweep.md's Slurm recipe on a real Slurm: `scripts/slurm-sweep.sh` starts a
//! private one-node cluster (slurmctld + slurmd on this host, its own munge), runs the
//! sweep's cells as a job array and checks the merged table, CSV and JSON byte for byte
//! against the in-process sweep. Needs root and Debian's slurm-wlm (`.ci/run` installs
//! it); elsewhere it says why and returns — under `CI=true` that is a failure.

use std::process::Command;

#[test]
fn a_sweep_as_a_slurm_job_array_merges_to_the_in_process_sweep() {
    // SAFETY: getuid has no preconditions.
    let root = unsafe { libc::getuid() } == 0;
    let have = Command::new("sh")
        .args([
            "-c",
            "command -v slurmctld && command -v slurmd && command -v munged",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !root || !have {
        let why = format!("needs root ({root}) and slurm-wlm installed ({have})");
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but the Slurm test cannot run: {why}"
        );
        eprintln!("Slurm test skipped: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("slurm");
    let o = Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/slurm-sweep.sh"
    ))
    .arg(&work)
    .env("SLUICE", env!("CARGO_BIN_EXE_sluice"))
    .env(
        "SWEEP_ARGS",
        "--policy none,rcp --seed 1..2 --set runtime=200ms",
    )
    .output()
    .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "stdout: {out}\nstderr: {err}");
    assert!(
        out.contains("PASS: 4 cells run as a Slurm job array"),
        "{out}"
    );
}
