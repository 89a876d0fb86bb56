//! Every package's integration tests are gathered into one test binary per package
//! (`autotests = false` and a `[[test]]` whose root declares each `tests/NAME.rs` as
//! `mod NAME;`): one link per package instead of one per file. A file added to a
//! `tests/` directory and not declared would never run; this test says which.

use std::path::{Path, PathBuf};

/// The `path = "tests/…"` of each `[[test]]` in a Cargo.toml.
fn test_roots(manifest: &str) -> Vec<String> {
    let mut roots = Vec::new();
    let mut in_test = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_test = line == "[[test]]";
        } else if in_test {
            if let Some(p) = line.strip_prefix("path = \"") {
                roots.push(p.trim_end_matches('"').to_string());
            }
        }
    }
    roots
}

/// The modules a test root declares from files (`mod NAME;`, any visibility).
fn declared_mods(root: &str) -> Vec<String> {
    root.lines()
        .map(str::trim)
        .filter_map(|l| l.strip_prefix("pub(crate) ").or(Some(l)))
        .filter_map(|l| l.strip_prefix("mod "))
        .filter_map(|l| l.strip_suffix(';'))
        .map(str::to_string)
        .collect()
}

/// The packages of the workspace: the root and each `crates/*`.
fn packages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![root.to_path_buf()];
    for e in std::fs::read_dir(root.join("crates")).unwrap() {
        let d = e.unwrap().path();
        if d.join("Cargo.toml").exists() {
            dirs.push(d);
        }
    }
    dirs.sort();
    dirs
}

#[test]
fn every_test_file_is_part_of_a_test_binary() {
    let mut missing = Vec::new();
    let mut gathered = 0;
    for dir in packages() {
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        if !manifest.contains("autotests = false") || !dir.join("tests").is_dir() {
            continue; // cargo makes each tests/*.rs a binary of its own
        }
        gathered += 1;
        let roots = test_roots(&manifest);
        let mut reached: Vec<String> = roots.clone();
        for r in &roots {
            let text = std::fs::read_to_string(dir.join(r)).unwrap();
            reached.extend(declared_mods(&text).iter().map(|m| format!("tests/{m}.rs")));
        }
        for e in std::fs::read_dir(dir.join("tests")).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            let rel = format!("tests/{name}");
            if name.ends_with(".rs") && !reached.contains(&rel) {
                missing.push(dir.join(rel).display().to_string());
            }
        }
    }
    assert!(
        gathered >= 9,
        "expected the gathered packages, found {gathered}"
    );
    assert!(
        missing.is_empty(),
        "test files that no test binary includes (add `mod NAME;` to the package's \
         tests/integration.rs): {missing:?}"
    );
}

#[test]
fn the_parsers_read_what_the_manifests_say() {
    let m = "[package]\nname = \"x\"\n\n[[test]]\nname = \"integration\"\npath = \"tests/integration.rs\"\n\n[dependencies]\npath = \"no\"\n";
    assert_eq!(test_roots(m), ["tests/integration.rs"]);
    let r = "//! doc\nmod common;\n\nmod a;\npub(crate) mod b;\nuse mount::x;\n";
    assert_eq!(declared_mods(r), ["common", "a", "b"]);
}
