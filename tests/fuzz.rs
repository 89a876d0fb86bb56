//! Fuzzing the two parsers a user types into: fio job files and policy specifications.
//! Inputs are mutated from a corpus (the shipped job files, the experiments, the docs'
//! examples); the parsers must never panic, and every refusal must say where (a job
//! file's `file:line`, or the policy entry). CI runs a few hundred cases; for long runs:
//!
//! ```sh
//! PROPTEST_CASES=200000 scripts/fuzz.sh
//! ```

use std::path::Path;

use proptest::prelude::*;
use sluice::core::policy::{self, PolicySpec};
use sluice::workload::{parse_str_with, ParseOptions};

/// The corpus: every job file under jobs/, experiments/ and tests/fio-examples/.
fn corpus() -> Vec<String> {
    let mut out = Vec::new();
    for dir in [
        "jobs",
        "jobs/real",
        "experiments/d2fq",
        "experiments/fios",
        "experiments/fastresponse-block",
        "experiments/rcp-block",
        "tests/fio-examples",
    ] {
        let d = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut files: Vec<_> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        files.sort();
        for f in files {
            if f.extension().is_some_and(|e| e == "fio") {
                if let Ok(t) = std::fs::read_to_string(&f) {
                    out.push(t);
                }
            }
        }
    }
    assert!(out.len() >= 10, "corpus too small: {}", out.len());
    out
}

/// Fragments a mutation may insert.
const FRAGMENTS: &[&str] = &[
    "\n[job]\n",
    "\n[global]\n",
    "=",
    "==",
    "\n",
    "\x00",
    "\u{feff}",
    "iodepth=",
    "iodepth=0",
    "iodepth=65536",
    "numjobs=99999999",
    "bs=",
    "bs=0",
    "bs=4k:",
    "bsrange=1k-",
    "size=-1",
    "size=18446744073709551615",
    "runtime=",
    "rate=1k,",
    "rw=randrw",
    "rwmixread=101",
    "random_distribution=zipf:",
    "random_distribution=zoned:50/",
    "${NOPE}",
    "((1+",
    "include ",
    "sluice_weight=0",
    "prio=9",
    "ramp_time=1h",
    "thinktime=",
    "bssplit=4k/50:",
    "filename=../x",
    "directory=:",
    ";comment",
    "#x",
    " ",
    "\t",
    "time_based",
    "ioengine=net",
];

#[derive(Clone, Debug)]
enum Mutation {
    Insert(usize, usize),
    Delete(usize, usize),
    DupLine(usize),
    Byte(usize, u8),
}

fn mutate(text: &str, muts: &[Mutation]) -> String {
    let mut s: Vec<u8> = text.as_bytes().to_vec();
    for m in muts {
        let n = s.len().max(1);
        match *m {
            Mutation::Insert(at, f) => {
                let at = at % (n + 1).min(s.len() + 1);
                let frag = FRAGMENTS[f % FRAGMENTS.len()].as_bytes();
                s.splice(at..at, frag.iter().copied());
            }
            Mutation::Delete(at, len) => {
                if !s.is_empty() {
                    let a = at % s.len();
                    let b = (a + len % 32).min(s.len());
                    s.drain(a..b);
                }
            }
            Mutation::DupLine(at) => {
                let t = String::from_utf8_lossy(&s).into_owned();
                let lines: Vec<&str> = t.lines().collect();
                if !lines.is_empty() {
                    let i = at % lines.len();
                    let mut v: Vec<&str> = lines.clone();
                    v.insert(i, lines[i]);
                    s = v.join("\n").into_bytes();
                }
            }
            Mutation::Byte(at, b) => {
                if !s.is_empty() {
                    let i = at % s.len();
                    s[i] = b;
                }
            }
        }
    }
    String::from_utf8_lossy(&s).into_owned()
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<usize>()).prop_map(|(a, f)| Mutation::Insert(a, f)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, l)| Mutation::Delete(a, l)),
        any::<usize>().prop_map(Mutation::DupLine),
        (any::<usize>(), any::<u8>()).prop_map(|(a, b)| Mutation::Byte(a, b)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(300)
    ))]

    #[test]
    fn job_files_never_panic_and_refusals_name_a_place(
        pick in any::<usize>(),
        muts in prop::collection::vec(mutation(), 1..6),
    ) {
        let corpus = corpus();
        let text = mutate(&corpus[pick % corpus.len()], &muts);
        let vars = |name: &str| (name == "HOME").then(|| "/home/x".to_string());
        match parse_str_with(&text, "fuzz.fio", &ParseOptions::default(), &vars) {
            Ok(_) => {}
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(msg.starts_with("fuzz.fio") || msg.contains(".fio:"), "no location: {msg}");
            }
        }
    }

    #[test]
    fn policy_specs_never_panic_and_refusals_name_the_entry(
        name in prop_oneof![
            Just("none"), Just("d2fq"), Just("mqfq"), Just("sfqd"), Just("bfq"), Just("ld"),
            Just("rcp"), Just("mq-deadline"), Just("kyber"), Just("fios"), Just("quanta"),
            Just("cfq"), Just("bogus"), Just("")
        ],
        params in prop::collection::vec(
            ("[a-z_]{0,12}", prop_oneof![Just("0".to_string()), Just("-1".to_string()),
              Just("18446744073709551616".to_string()), Just("1k".to_string()),
              Just("static".to_string()), "[0-9a-z.]{0,8}"]),
            0..4),
    ) {
        let text = if params.is_empty() {
            name.to_string()
        } else {
            let p: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{name}:{}", p.join(","))
        };
        match text.parse::<PolicySpec>() {
            Ok(spec) => {
                if let Err(e) = policy::build(&spec) {
                    let msg = e.to_string();
                    prop_assert!(msg.contains("policy") || msg.contains(name), "{text}: {msg}");
                }
            }
            Err(e) => {
                prop_assert!(!e.to_string().is_empty(), "{text}");
            }
        }
    }
}
