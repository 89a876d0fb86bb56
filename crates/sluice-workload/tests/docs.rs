//! docs/workloads.md's option list is generated from the parser's own table
//! (`sluice_workload::options_markdown`); this test fails when they differ. To
//! regenerate the section after changing the table:
//!
//! ```sh
//! UPDATE_DOCS=1 cargo test -p sluice-workload --test docs
//! ```

use std::path::Path;

const BEGIN: &str =
    "<!-- BEGIN GENERATED OPTIONS: UPDATE_DOCS=1 cargo test -p sluice-workload --test docs -->\n";
const END: &str = "<!-- END GENERATED OPTIONS -->";

#[test]
fn workloads_md_lists_the_option_table() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/workloads.md");
    let text = std::fs::read_to_string(&path).expect("docs/workloads.md");
    let (Some(b), Some(e)) = (text.find(BEGIN), text.find(END)) else {
        panic!("docs/workloads.md lacks the generated-section markers {BEGIN:?} … {END:?}");
    };
    let current = &text[b + BEGIN.len()..e];
    let want = format!("\n{}\n", sluice_workload::options_markdown());
    if current == want {
        return;
    }
    if std::env::var_os("UPDATE_DOCS").is_some() {
        let updated = format!("{}{}{}", &text[..b + BEGIN.len()], want, &text[e..]);
        std::fs::write(&path, updated).expect("write docs/workloads.md");
        return;
    }
    panic!(
        "docs/workloads.md's option list differs from the parser's table; regenerate it with \
         UPDATE_DOCS=1 cargo test -p sluice-workload --test docs"
    );
}
