use super::*;

#[test]
fn comments() {
    assert_eq!(strip_comment("  ; all"), "");
    assert_eq!(strip_comment("# all"), "");
    assert_eq!(strip_comment("bs=4k ; trailing"), "bs=4k ");
    assert_eq!(strip_comment("bs=4k\t# trailing"), "bs=4k\t");
    assert_eq!(strip_comment("filename=a#b"), "filename=a#b");
}

#[test]
fn bssplit_tables() {
    let t = parse_bssplit("4k/50:8k/30:64k/20").unwrap();
    assert_eq!(
        t,
        vec![
            BsEntry {
                len: 4096,
                ppm: 500_000
            },
            BsEntry {
                len: 8192,
                ppm: 300_000
            },
            BsEntry {
                len: 65536,
                ppm: 200_000
            },
        ]
    );
    let t = parse_bssplit("4k/10:8k/:16k").unwrap();
    assert_eq!(t[1].ppm, 450_000);
    assert_eq!(t[2].ppm, 450_000);
    let t = parse_bssplit("4k/:8k/:16k/").unwrap();
    assert_eq!(t.iter().map(|e| e.ppm).sum::<u32>(), PPM);
    assert!(parse_bssplit("4k/50:8k/30")
        .unwrap_err()
        .contains("add up to 80"));
    assert!(parse_bssplit("4k/70:8k/40")
        .unwrap_err()
        .contains("more than 100"));
    assert!(parse_bssplit("4k/x").is_err());
    assert!(parse_bssplit("4k/100:8k/").is_err());
    assert!(parse_bssplit("4k/50::8k/50").is_err());
}

#[test]
fn suggestions() {
    assert_eq!(suggest("iodepht"), Some("iodepth"));
    assert_eq!(suggest("runtim"), Some("runtime"));
    assert_eq!(suggest("completely_different"), None);
}
