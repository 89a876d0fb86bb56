//! Profile loading and validation errors: each says what, where, and how to fix.

use sluice_device::{DeviceProfile, ProfileError};

const ZSSD: &str = include_str!("../profiles/zssd.toml");

/// The zssd profile text with the first line starting with `key =` replaced.
fn with_line(key: &str, replacement: &str) -> (String, usize) {
    let mut lineno = 0;
    let text = ZSSD
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if lineno == 0 && l.starts_with(&format!("{key} =")) {
                lineno = i + 1;
                replacement.to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(lineno > 0, "no line for {key}");
    (text, lineno)
}

fn invalid_field(text: &str) -> (String, String) {
    match DeviceProfile::from_toml_str(text, "my.toml") {
        Err(e @ ProfileError::Invalid { .. }) => {
            let msg = e.to_string();
            let ProfileError::Invalid { field, .. } = e else {
                unreachable!()
            };
            (field, msg)
        }
        other => panic!("expected an Invalid error, got {other:?}"),
    }
}

#[test]
fn malformed_toml_names_the_line() {
    let (text, line) = with_line("units", "units = = 16");
    let err = DeviceProfile::from_toml_str(&text, "broken.toml").unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, ProfileError::Parse { line: l, .. } if l == line),
        "{err:?}"
    );
    assert!(msg.contains(&format!("line {line}")), "{msg}");
    assert!(msg.contains("broken.toml"), "{msg}");
}

#[test]
fn unknown_or_mistyped_fields_name_the_line() {
    let (text, line) = with_line("units", "unitz = 16");
    let err = DeviceProfile::from_toml_str(&text, "typo.toml").unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("unitz"), "{msg}");
    assert!(
        matches!(err, ProfileError::Parse { line: l, .. } if l == line),
        "{msg}"
    );

    let (text, line) = with_line("read_ns", "read_ns = \"fast\"");
    let err = DeviceProfile::from_toml_str(&text, "type.toml").unwrap_err();
    assert!(
        matches!(err, ProfileError::Parse { line: l, .. } if l == line),
        "{err}"
    );
}

#[test]
fn zero_units_is_rejected() {
    let (text, _) = with_line("units", "units = 0");
    let (field, msg) = invalid_field(&text);
    assert_eq!(field, "media.units");
    assert!(msg.contains("my.toml") && msg.contains("positive"), "{msg}");
}

#[test]
fn zero_times_are_rejected() {
    for key in ["read_ns", "write_ns"] {
        let (text, _) = with_line(key, &format!("{key} = 0"));
        let (field, _) = invalid_field(&text);
        assert_eq!(field, format!("media.{key}"));
    }
    let (text, _) = with_line("ack_ns", "ack_ns = 0");
    assert_eq!(invalid_field(&text).0, "write_buffer.ack_ns");
    let (text, _) = with_line("max_outstanding", "max_outstanding = 0");
    assert_eq!(invalid_field(&text).0, "controller.max_outstanding");
}

#[test]
fn weights_out_of_range_are_rejected() {
    for bad in ["0", "257"] {
        let (text, _) = with_line("hpw", &format!("hpw = {bad}"));
        let (field, msg) = invalid_field(&text);
        assert_eq!(field, "arbitration.hpw");
        assert!(msg.contains("1..=256"), "{msg}");
    }
    let (text, _) = with_line("lpw", "lpw = 256");
    DeviceProfile::from_toml_str(&text, "ok.toml").unwrap();
}

#[test]
fn burst_must_be_a_power_of_two_or_unlimited() {
    let (text, _) = with_line("burst", "burst = 3");
    assert_eq!(invalid_field(&text).0, "arbitration.burst");
    let (text, _) = with_line("burst", "burst = 256");
    assert_eq!(invalid_field(&text).0, "arbitration.burst");
    let (text, _) = with_line("burst", "burst = \"unlimited\"");
    DeviceProfile::from_toml_str(&text, "ok.toml").unwrap();
    let (text, line) = with_line("burst", "burst = \"lots\"");
    let err = DeviceProfile::from_toml_str(&text, "b.toml").unwrap_err();
    assert!(
        matches!(err, ProfileError::Parse { line: l, .. } if l == line),
        "{err}"
    );
}

#[test]
fn geometry_must_match_units() {
    let text = include_str!("../profiles/nand.toml").replace("units = 64", "units = 32");
    let (field, msg) = invalid_field(&text);
    assert_eq!(field, "media.units");
    assert!(msg.contains("64 dies"), "{msg}");
}

#[test]
fn resolve_unknown_name_lists_builtins() {
    let err = DeviceProfile::resolve("optane").unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, ProfileError::UnknownName { .. }));
    for b in DeviceProfile::BUILTIN {
        assert!(msg.contains(b), "{msg}");
    }
    assert!(msg.contains("optane") && msg.contains(".toml"), "{msg}");
}

#[test]
fn resolve_loads_builtins_and_files() {
    assert_eq!(DeviceProfile::resolve("nand").unwrap().name, "nand");
    let dir = std::env::temp_dir().join(format!("sluice-device-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mine.toml");
    std::fs::write(&path, ZSSD.replace("name = \"zssd\"", "name = \"mine\"")).unwrap();
    let p = DeviceProfile::resolve(path.to_str().unwrap()).unwrap();
    assert_eq!(p.name, "mine");
    assert_eq!(p, DeviceProfile::load(&path).unwrap());
    std::fs::remove_dir_all(&dir).unwrap();

    let err = DeviceProfile::resolve("/nonexistent/dir/x.toml").unwrap_err();
    assert!(matches!(err, ProfileError::Io { .. }));
    assert!(err.to_string().contains("/nonexistent/dir/x.toml"));
}

#[test]
fn arbitration_can_be_overridden() {
    let p = DeviceProfile::builtin("ull")
        .unwrap()
        .with_arbitration("wrr:8,4,2,4".parse().unwrap());
    assert_eq!(
        (p.arbitration.hpw, p.arbitration.mpw, p.arbitration.lpw),
        (8, 4, 2)
    );
    p.validate().unwrap();
    let err = "wrr:300,1,1"
        .parse::<sluice_device::Arbitration>()
        .unwrap_err();
    assert!(err.to_string().contains("1..=256"), "{err}");
}

#[test]
fn profiles_round_trip_through_toml() {
    for name in DeviceProfile::BUILTIN {
        let p = DeviceProfile::builtin(name).unwrap();
        let text = toml::to_string(&p).unwrap();
        assert_eq!(DeviceProfile::from_toml_str(&text, "rt").unwrap(), p);
    }
}

#[test]
fn huge_numbers_are_rejected_with_their_unit_not_wrapped() {
    // Issue 17: read_ns = 2^64 - 1 used to run and report a device faster than ull.
    let (text, _) = with_line("read_ns", "read_ns = 18446744073709551615");
    let (field, msg) = invalid_field(&text);
    assert_eq!(field, "media.read_ns");
    assert!(
        msg.contains("18446744073709551615") && msg.contains("nanoseconds"),
        "{msg}"
    );
    let (text, _) = with_line("fetch_ns", "fetch_ns = 99999999999999");
    let (field, msg) = invalid_field(&text);
    assert_eq!(field, "controller.fetch_ns");
    assert!(msg.contains("at most 10000000000"), "{msg}");
    let (text, _) = with_line(
        "bus_bandwidth_bytes",
        "bus_bandwidth_bytes = 9223372036854775807",
    );
    let (field, msg) = invalid_field(&text);
    assert_eq!(field, "media.bus_bandwidth_bytes");
    assert!(msg.contains("bytes per second"), "{msg}");
}

#[test]
fn service_and_flash_sections_are_checked() {
    // A log-normal shape out of range names its field.
    let (text, _) = with_line("sigma", "sigma = 5.0");
    let (field, msg) = invalid_field(&text);
    assert_eq!(field, "service.read.sigma", "{msg}");
    assert!(msg.contains("0..=2"), "{msg}");
    // An unknown key in [service.read] is a parse error naming the line.
    let (text, line) = with_line("tail_prob", "tail_chance = 0.1");
    match DeviceProfile::from_toml_str(&text, "my.toml") {
        Err(ProfileError::Parse {
            line: l, message, ..
        }) => {
            assert_eq!(l, line, "{message}");
            assert!(message.contains("tail_chance"), "{message}");
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
    // [flash] needs a write buffer, an erase time and out-of-place writes.
    let nand = include_str!("../profiles/nand.toml");
    let no_buffer = nand.replace("[write_buffer]", "[unused_buffer]");
    let no_buffer = no_buffer
        .lines()
        .filter(|l| !l.starts_with("[unused_buffer]"))
        .filter(|l| {
            !(l.starts_with("capacity_bytes")
                || l.starts_with("ack_ns")
                || l.starts_with("program_bytes"))
        })
        .collect::<Vec<_>>()
        .join("\n");
    let (field, msg) = invalid_field(&no_buffer);
    assert_eq!(field, "flash", "{msg}");
    assert!(msg.contains("[write_buffer]"), "{msg}");
    let lba = nand.replace(
        "write_placement = \"round_robin\"",
        "write_placement = \"lba\"",
    );
    let (field, msg) = invalid_field(&lba);
    assert_eq!(field, "media.write_placement", "{msg}");
    let tiny_op = nand.replace("over_provisioning = 0.25", "over_provisioning = 0.001");
    let (field, msg) = invalid_field(&tiny_op);
    assert_eq!(field, "flash.over_provisioning", "{msg}");
    assert!(msg.contains("gc_free_blocks"), "{msg}");
}

#[test]
fn flash_that_would_panic_or_take_gigabytes_is_refused() {
    let nand = include_str!("../profiles/nand.toml");
    // 256 MiB stripes: the preconditioned fill put 256 MiB on dies of 160 MiB, and the
    // first host write panicked ("a die ran out of free blocks").
    let big = nand.replace("stripe_bytes = 8192", "stripe_bytes = 268435456");
    let (field, msg) = invalid_field(&big);
    assert_eq!(field, "media.stripe_bytes", "{msg}");
    assert!(
        msg.contains("first die") && msg.contains("lower stripe_bytes"),
        "{msg}"
    );
    // The same stripes without the fill are fine: writes go to the dies in turn.
    let p = DeviceProfile::from_toml_str(
        &big.replace("precondition = true", "precondition = false"),
        "ok.toml",
    )
    .unwrap();
    sluice_device::NvmeSsd::new(&p, 1);
    // 512-byte units over 64 GiB with one unit per block: 3.1 GB of tables.
    let huge = nand
        .replace("map_bytes = 4096", "map_bytes = 512")
        .replace("logical_bytes = 8589934592", "logical_bytes = 68719476736")
        .replace("over_provisioning = 0.25", "over_provisioning = 1.0")
        .replace("block_units = 512", "block_units = 1");
    let (field, msg) = invalid_field(&huge);
    assert_eq!(field, "flash.map_bytes", "{msg}");
    assert!(msg.contains("the limit is 512 MiB"), "{msg}");
}

#[test]
fn an_erase_time_out_of_range_is_refused_not_wrapped() {
    let nand = include_str!("../profiles/nand.toml");
    for (v, needle) in [
        ("18446744073709551615", "at most 10000000000"),
        ("0", "is 0"),
    ] {
        let text = nand.replace("erase_ns = 3800000", &format!("erase_ns = {v}"));
        let (field, msg) = invalid_field(&text);
        assert_eq!(field, "media.erase_ns", "{msg}");
        assert!(msg.contains(needle), "{msg}");
    }
}
