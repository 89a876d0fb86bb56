//! NVMe Flexible Data Placement end to end: fio's `fdp`/`plids` under `sluice sim` on
//! `nand` (write amplification falls when hot and cold data get handles of their own),
//! the refusals (a device without FDP, an index past the handles, `sluice run`), fio's
//! `--section`, and the protection-information options refused in both worlds.

use crate::common;

use common::{refused, sluice, stderr, write};

fn json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The bundled job of docs/devices.md, "Flexible Data Placement": a hot region
/// rewritten at random beside a cold region written once in sequence, with one write
/// point per die (plain) or each job on its own reclaim unit handle (`fdp=1`).
#[test]
fn placement_handles_lower_the_write_amplification() {
    let dir = tempfile::tempdir().unwrap();
    let root = env!("CARGO_MANIFEST_DIR");
    let job = format!("{root}/jobs/fdp/nand-hot-cold.fio");
    let run = |extra: &[&str]| {
        let out = dir.path().join("o.json");
        let mut args = vec![
            "sim",
            &job,
            "-d",
            "nand",
            "-q",
            "--json",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = sluice(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let v = json(&out);
        let f = &v["runs"][0]["extra"]["device_flash"];
        let hot = v["jobs"][0]["write"]["iops"].as_f64().unwrap();
        (
            f["write_amplification"].as_f64().unwrap(),
            f["gc_copied_bytes"].as_u64().unwrap(),
            hot,
        )
    };
    let (plain, plain_copied, plain_hot) = run(&[]);
    let (fdp, fdp_copied, fdp_hot) = run(&["--set", "fdp=1"]);
    assert!(plain > 1.4, "hot and cold share blocks: WA {plain}");
    assert!(fdp < 1.05, "hot and cold apart: WA {fdp}");
    assert!(
        fdp_copied * 20 < plain_copied,
        "{fdp_copied} vs {plain_copied}"
    );
    assert!(
        fdp_hot > 1.3 * plain_hot,
        "less GC, more hot writes: {fdp_hot} vs {plain_hot}"
    );
    // Random placement IDs are drawn from the run's seed: the same run twice is the same.
    let a = run(&[
        "--set",
        "fdp=1",
        "--set",
        "plid_select=random",
        "--set",
        "plids=1-2",
    ]);
    let b = run(&[
        "--set",
        "fdp=1",
        "--set",
        "plid_select=random",
        "--set",
        "plids=1-2",
    ]);
    assert_eq!(a, b);
}

#[test]
fn fdp_is_refused_where_there_is_no_placement() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(
        dir.path(),
        "f.fio",
        "[w]\nrw=randwrite\nsize=1m\nfdp=1\nfdp_pli=4,5\n",
    );
    // The default profile has no FDP.
    let o = sluice(&["sim", &job, "-q"]);
    refused(
        &o,
        &["job 'w' has fdp=1", "'ull' has none", "--device nand"],
    );
    // nand has 8 handles: index 8 is past them.
    let far = write(
        dir.path(),
        "far.fio",
        "[w]\nrw=randwrite\nsize=1m\nfdp=1\nplids=0,8\n",
    );
    let o = sluice(&["sim", &far, "-d", "nand", "-q"]);
    refused(&o, &["job 'w'", "index 8 must be smaller than 8"]);
    // `sluice run` issues no NVMe passthrough.
    let o = sluice(&[
        "run",
        &job,
        "-q",
        "--directory",
        dir.path().to_str().unwrap(),
    ]);
    refused(
        &o,
        &[
            "job 'w' has fdp=1",
            "passthrough",
            "sluice sim --device nand",
        ],
    );
    assert!(
        std::fs::read_dir(dir.path()).unwrap().count() == 2,
        "nothing laid out"
    );
    // Syntax, as fio: streams are not modelled; fdp=1 with dataplacement=none conflicts.
    let s = write(
        dir.path(),
        "s.fio",
        "[w]\nrw=write\nsize=1m\ndataplacement=streams\n",
    );
    refused(&sluice(&["sim", &s, "-q"]), &["streams", "not modelled"]);
    let c = write(
        dir.path(),
        "c.fio",
        "[w]\nrw=write\nsize=1m\nfdp=1\ndataplacement=none\n",
    );
    refused(&sluice(&["sim", &c, "-q"]), &["incompatible"]);
}

/// fio's examples/xnvme-fdp.fio and xnvme-pi.fio in their shapes.
#[test]
fn fios_xnvme_examples_run_or_stop_on_the_device() {
    let dir = tempfile::tempdir().unwrap();
    let fdp = write(
        dir.path(),
        "xnvme-fdp.fio",
        "[global]\nrw=randwrite\nsize=2M\niodepth=1\nbs=4K\nthread=1\nfdp=1\nfdp_pli=4,5\n\n\
         [default]\n\n[override]\nrw=${FIO_RW_UNSET_HERE}\n",
    );
    // The [override] section is not read with --section=default (its variable unset).
    let out = dir.path().join("o.json");
    let o = sluice(&[
        "sim",
        &fdp,
        "--section=default",
        "-d",
        "nand",
        "-q",
        "--json",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&out);
    assert_eq!(v["jobs"].as_array().unwrap().len(), 1);
    assert_eq!(v["jobs"][0]["jobname"], "default");
    assert_eq!(v["jobs"][0]["write"]["io_bytes"], 2 << 20);
    // Without it the override's variable stops the parse, as it would stop fio.
    refused(
        &sluice(&["sim", &fdp, "-d", "nand", "-q"]),
        &["FIO_RW_UNSET_HERE"],
    );
    refused(
        &sluice(&["sim", &fdp, "--section", "nope", "-q"]),
        &["--section nope names no job section"],
    );
    let pi = write(
        dir.path(),
        "xnvme-pi.fio",
        "[global]\nsize=100M\niodepth=16\nbs=4K\nmd_per_io_size=64\npi_act=0\n\
         pi_chk=GUARD,APPTAG,REFTAG\napptag=0x0234\napptag_mask=0xFFFF\nthread=1\n\
         stonewall=1\n\n[write]\nrw=write\n\n[read]\nrw=read\n",
    );
    for world in [
        vec!["sim", &pi, "-q"],
        vec![
            "run",
            &pi,
            "-q",
            "--directory",
            dir.path().to_str().unwrap(),
        ],
    ] {
        refused(
            &sluice(&world),
            &[
                "job 'write': end-to-end protection (md_per_io_size)",
                "metadata/PI",
            ],
        );
    }
}
