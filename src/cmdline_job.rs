//! fio's command-line job form: `sluice sim --name=r --rw=randread --bs=4k --size=1g`.
//! As in fio, `--name=NAME` starts a job; options before the first `--name` are the
//! global section's; every other `--KEY=VALUE` (or bare `--KEY`) that is not one of the
//! subcommand's own flags is a job option, written into the job text in order.

use std::ffi::OsString;

/// Where error messages place a command-line job.
pub const ORIGIN: &str = "<command line>";

/// Split `argv` (`sluice SUBCOMMAND …`) into the arguments clap reads and the fio job
/// text of the command-line options, for `subcommand`, whose long flags `own` lists
/// (each with whether it takes a value). Returns `None` for the text when there is no
/// fio option.
pub fn split(
    argv: Vec<OsString>,
    subcommand: &str,
    own: &[(String, bool)],
) -> (Vec<OsString>, Option<String>) {
    if argv.get(1).and_then(|a| a.to_str()) != Some(subcommand) {
        return (argv, None);
    }
    let mut kept = Vec::new();
    let mut text = String::new();
    let mut section = false;
    let mut after_dashdash = false;
    // A flag of sluice's that takes a value in the next argument: that argument is
    // kept as it is, even when it starts with `--`.
    let mut value_next = false;
    for (i, a) in argv.into_iter().enumerate() {
        let s = a.to_str().map(str::to_owned);
        let fio = match &s {
            Some(s) if i >= 2 && !after_dashdash && !value_next && s.starts_with("--") => {
                let body = &s[2..];
                let key = body.split('=').next().unwrap_or("");
                if body.is_empty() {
                    after_dashdash = true;
                    None
                } else if let Some((_, takes)) = own.iter().find(|o| o.0 == key) {
                    value_next = *takes && !body.contains('=');
                    None
                } else {
                    Some(body.to_owned())
                }
            }
            _ => {
                value_next = false;
                None
            }
        };
        match fio {
            Some(body) => {
                let (key, value) = match body.split_once('=') {
                    Some((k, v)) => (k.to_owned(), Some(v.to_owned())),
                    None => (body, None),
                };
                if key == "name" {
                    text.push_str(&format!("[{}]\n", value.unwrap_or_default()));
                    section = true;
                } else {
                    if !section && text.is_empty() {
                        text.push_str("[global]\n");
                    }
                    match value {
                        Some(v) => text.push_str(&format!("{key}={v}\n")),
                        None => text.push_str(&format!("{key}\n")),
                    }
                }
            }
            None => kept.push(a),
        }
    }
    let text = (!text.is_empty()).then_some(text);
    (kept, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(a: &[&str]) -> Vec<OsString> {
        a.iter().map(OsString::from).collect()
    }

    #[test]
    fn fio_options_become_a_job_and_sluices_flags_stay() {
        let own = [
            ("policy".to_string(), true),
            ("seed".to_string(), true),
            ("quiet".to_string(), false),
        ];
        let (kept, text) = split(
            argv(&[
                "sluice",
                "sim",
                "--quiet",
                "--iodepth=4",
                "--name=r",
                "--rw=randread",
                "--policy",
                "none",
                "--bs=4k",
                "--time_based",
                "--seed=3",
                "--name=w",
                "--rw=write",
            ]),
            "sim",
            &own,
        );
        assert_eq!(
            kept,
            argv(&["sluice", "sim", "--quiet", "--policy", "none", "--seed=3"])
        );
        assert_eq!(
            text.unwrap(),
            "[global]\niodepth=4\n[r]\nrw=randread\nbs=4k\ntime_based\n[w]\nrw=write\n"
        );
        // Another subcommand, or no fio option: nothing taken.
        let (kept, text) = split(argv(&["sluice", "run", "--name=r"]), "sim", &own);
        assert_eq!((kept.len(), text), (3, None));
        let (_, text) = split(argv(&["sluice", "sim", "job.fio", "-q"]), "sim", &own);
        assert_eq!(text, None);
    }
}
