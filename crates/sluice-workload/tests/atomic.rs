//! fio's `atomic=1` (issue 41): accepted with fio's rules — direct I/O, power-of-two
//! and naturally aligned write sizes — and refused with one line naming the job, the
//! size and the rule; the limits of a device or file checked against the job.

use sluice_workload::{parse_str, AtomicLimits, JobSpec, ParseOptions};

const STRICT: ParseOptions = ParseOptions {
    ignore_unknown: false,
    sections: Vec::new(),
};

fn job(text: &str) -> JobSpec {
    match parse_str(text, "t.fio", &STRICT) {
        Ok(p) => p.jobs.into_iter().next().expect("one job"),
        Err(e) => panic!("unexpected error: {e}"),
    }
}

fn err(text: &str) -> String {
    parse_str(text, "t.fio", &STRICT)
        .expect_err("should be refused")
        .to_string()
}

/// fio's own example, `examples/atomic-verify.fio`, as it is written.
const ATOMIC_VERIFY: &str = "[write-and-verify]\nrw=randwrite\nbs=4k\ndirect=1\n\
    ioengine=libaio\niodepth=16\nverify=crc64\natomic=1\nverify_write_sequence=0\n\
    numjobs=10\nfilename=/dev/XXX\n";

#[test]
fn fios_atomic_verify_example_parses_with_atomic_writes() {
    let j = job(ATOMIC_VERIFY);
    assert!(j.atomic && !j.buffered);
    assert_eq!((j.numjobs, j.iodepth), (10, 16));
    assert!(!j.passthrough.iter().any(|(k, _)| k == "atomic"));
}

#[test]
fn atomic_implies_direct_as_in_fio_and_off_is_plain() {
    let j = job("[a]\nrw=write\natomic=1\n");
    assert!(j.atomic && !j.buffered, "O_ATOMIC implies O_DIRECT");
    for off in ["0", "false", "no", "off"] {
        let j = job(&format!("[a]\nrw=write\natomic={off}\n"));
        assert!(!j.atomic && j.buffered, "atomic={off}");
    }
    // A read-only job has no writes to make atomic: nothing to refuse.
    let j = job("[a]\nrw=randread\nbs=3k\natomic=1\n");
    assert!(j.atomic);
}

#[test]
fn buffered_atomic_writes_are_refused() {
    for d in ["direct=0", "buffered=1"] {
        let e = err(&format!("[w]\nrw=write\n{d}\natomic=1\n"));
        assert!(e.starts_with("t.fio:4: option 'atomic'"), "{e}");
        assert!(e.contains("job 'w'") && e.contains("set direct=1"), "{e}");
    }
}

#[test]
fn a_write_size_not_a_power_of_two_is_refused_naming_it() {
    let e = err("[w]\nrw=randwrite\nbs=12k\ndirect=1\natomic=1\n");
    assert!(e.contains("job 'w'") && e.contains("12KiB"), "{e}");
    assert!(e.contains("not a power of two"), "{e}");
    let e = err("[w]\nrw=randwrite\nbssplit=4k/50:24k/50\ndirect=1\natomic=1\n");
    assert!(e.contains("24KiB"), "{e}");
    // Reads of any size are not atomic writes: only the write size counts.
    let j = job("[w]\nrw=randrw\nbs=12k,16k\ndirect=1\natomic=1\n");
    assert!(j.atomic);
}

#[test]
fn misaligned_atomic_writes_are_refused() {
    let cases = [
        ("offset=2k\n", "offset = 2KiB"),
        (
            "numjobs=2\noffset_increment=6k\n",
            "offset_increment = 6KiB",
        ),
        ("blockalign=2k\n", "blockalign"),
        ("size=24k\nnrfiles=2\n", "the file size"),
    ];
    for (extra, says) in cases {
        let e = err(&format!(
            "[w]\nrw=randwrite\nbs=8k\ndirect=1\natomic=1\n{extra}"
        ));
        assert!(
            e.contains(says) && e.contains("naturally aligned"),
            "{extra}: {e}"
        );
        assert!(e.contains("job 'w'") && e.contains("8KiB"), "{e}");
    }
    let e = err("[w]\nrw=write:4k\nbs=8k\ndirect=1\natomic=1\n");
    assert!(e.contains("rw modifier"), "{e}");
    // Sequential writes of mixed sizes would misalign the larger ones.
    let e = err("[w]\nrw=write\nbssplit=4k/50:8k/50\ndirect=1\natomic=1\n");
    assert!(e.contains("several write sizes"), "{e}");
    // Random writes of mixed sizes align to each size: accepted.
    assert!(job("[w]\nrw=randwrite\nbssplit=4k/50:8k/50\ndirect=1\natomic=1\n").atomic);
    // Aligned values pass.
    assert!(job("[w]\nrw=write\nbs=8k\noffset=64k\nnumjobs=2\noffset_increment=1m\ndirect=1\natomic=1\n").atomic);
}

#[test]
fn the_limits_of_a_device_name_the_job_the_size_and_the_limit() {
    let j = job("[w]\nrw=randwrite\nbs=64k\ndirect=1\natomic=1\n");
    let lim = AtomicLimits {
        min: 4096,
        max: 16 << 10,
    };
    let e = lim.check(&j, "device 'ull'").unwrap_err();
    assert!(
        e.contains("job 'w'") && e.contains("64KiB") && e.contains("4KiB..16KiB"),
        "{e}"
    );
    assert!(lim
        .check(&job("[w]\nrw=randwrite\nbs=16k\natomic=1\n"), "x")
        .is_ok());
    let small = job("[w]\nrw=randwrite\nbs=2k\natomic=1\n");
    assert!(lim.check(&small, "x").unwrap_err().contains("2KiB"));
    let none = AtomicLimits { min: 0, max: 0 };
    let e = none.check(&small, "/tmp/f").unwrap_err();
    assert!(e.contains("/tmp/f does not support atomic writes"), "{e}");
    // A job without atomic=1 is never refused by a device's limits.
    assert!(none.check(&job("[w]\nrw=randwrite\n"), "x").is_ok());
}
