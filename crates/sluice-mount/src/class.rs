//! Who is calling: the class, weight and flow of a FUSE request, from the calling
//! thread (FUSE gives its thread id).
//!
//! In order, later steps overriding earlier ones:
//! 1. the thread's I/O priority, `ioprio_get(IOPRIO_WHO_PROCESS, tid)` (what `ionice`
//!    sets): realtime → critical; idle → idle; best-effort level n → normal with weight
//!    8 − n; none → best-effort at the level of its nice value, (nice + 20) / 5 (Linux's
//!    `task_nice_ioprio`), so a plain process is normal with weight 4;
//! 2. its cgroup v2 (`/proc/TID/cgroup`'s `0::` line): `io.prio.class` (`promote-to-rt`
//!    → critical, `restrict-to-be` → a critical caller becomes normal, `idle` → idle)
//!    and `io.weight` (`default N`: weight N / 25, so the default 100 is 4);
//! 3. the first rule of `--classes FILE` that matches (process name, a part of the
//!    command line, uid, cgroup prefix, and the path of the file the request is on — a
//!    glob relative to the mount's root): its class, weight and flow.
//!
//! The flow (the tenant that `d2fq`, `bfq`, `fios` share the device among by weight) is
//! the cgroup when the caller is in one below the root, else the process
//! (`comm.tgid`). An answer is kept per thread for [`TTL`], so a thread's requests cost
//! one hash look-up, and an `ionice` of a running thread is seen within that time.
//!
//! Path rules: a file's path is matched once, when it is opened ([`Classifier::paths`]:
//! the name its backing inode has then, relative to BACKING; a file with several hard
//! links is matched by the one it was reached through, as `/proc/self/fd` names it),
//! giving the open a bit set of the path rules it satisfies; a request is classed by
//! (thread, that set), cached as above. So `pg_wal/*` can make every write to
//! PostgreSQL's log critical whichever process issues it.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;
use sluice_core::IoClass;

/// How long a thread's answer is kept.
pub const TTL: Duration = Duration::from_secs(1);

/// A caller's class, weight and flow.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Who {
    pub class: IoClass,
    pub weight: u32,
    pub flow: String,
}

impl Who {
    /// Requests the kernel sends on no thread's behalf (pid 0).
    pub fn kernel() -> Who {
        Who {
            class: IoClass::Normal,
            weight: 4,
            flow: "kernel".into(),
        }
    }
}

/// One rule of the classes file.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// The process name (`/proc/PID/comm`), exactly.
    pub comm: Option<String>,
    /// A part of the command line (arguments joined by spaces).
    pub cmdline: Option<String>,
    /// The real user id.
    pub uid: Option<u32>,
    /// A prefix of the cgroup v2 path (`/system.slice/postgresql.service`).
    pub cgroup: Option<String>,
    /// A glob over the file's path relative to the mount's root (`pg_wal/*`,
    /// `**/*.log`; `*` does not cross a `/`, `**` does).
    pub path: Option<String>,
    /// `critical`, `normal` or `idle`.
    pub class: Option<String>,
    /// The weight, 1 to 1000.
    pub weight: Option<u32>,
    /// The flow (tenant) name.
    pub flow: Option<String>,
    /// `path`, compiled by [`parse_rules`].
    #[serde(skip)]
    glob: Option<GlobMatcher>,
}

/// Rules that match on a path: at most this many (one bit each in an open's set).
pub const MAX_PATH_RULES: usize = 64;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    #[serde(default)]
    rule: Vec<Rule>,
}

fn parse_class(s: &str) -> Option<IoClass> {
    match s {
        "critical" | "rt" | "realtime" => Some(IoClass::Critical),
        "normal" | "be" | "best-effort" => Some(IoClass::Normal),
        "idle" => Some(IoClass::Idle),
        _ => None,
    }
}

/// Read and check a classes file: what is wrong, where, and how to fix it.
pub fn load_rules(path: &Path) -> Result<Vec<Rule>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("classes file {}: {e}", path.display()))?;
    parse_rules(&text).map_err(|e| format!("classes file {}: {e}", path.display()))
}

/// Parse the text of a classes file (`[[rule]]` tables).
pub fn parse_rules(text: &str) -> Result<Vec<Rule>, String> {
    let mut f: RulesFile = toml::from_str(text).map_err(|e| e.to_string())?;
    for (i, r) in f.rule.iter_mut().enumerate() {
        let n = i + 1;
        if r.comm.is_none()
            && r.cmdline.is_none()
            && r.uid.is_none()
            && r.cgroup.is_none()
            && r.path.is_none()
        {
            return Err(format!(
                "rule {n} matches everything: give at least one of comm, cmdline, uid, cgroup, path"
            ));
        }
        if let Some(p) = &r.path {
            if p.starts_with('/') {
                return Err(format!(
                    "rule {n}: path '{p}' is absolute: give it relative to the mount's root, \
                     e.g. 'pg_wal/*'"
                ));
            }
            if i >= MAX_PATH_RULES {
                return Err(format!(
                    "rule {n} matches on path: only the first {MAX_PATH_RULES} rules may"
                ));
            }
            let g = GlobBuilder::new(p)
                .literal_separator(true)
                .build()
                .map_err(|e| format!("rule {n}: path '{p}': {e}"))?;
            r.glob = Some(g.compile_matcher());
        }
        if r.class.is_none() && r.weight.is_none() && r.flow.is_none() {
            return Err(format!(
                "rule {n} changes nothing: give at least one of class, weight, flow"
            ));
        }
        if let Some(c) = &r.class {
            if parse_class(c).is_none() {
                return Err(format!(
                    "rule {n}: class '{c}' is not one of critical, normal, idle"
                ));
            }
        }
        if let Some(w) = r.weight {
            if !(1..=1000).contains(&w) {
                return Err(format!("rule {n}: weight {w} is not in 1..=1000"));
            }
        }
    }
    Ok(f.rule)
}

/// What is known of a process, read from `/proc`.
#[derive(Debug, Default, Clone)]
pub struct Proc {
    pub tgid: u32,
    pub comm: String,
    pub cmdline: String,
    pub uid: u32,
    /// The cgroup v2 path (`/` for the root).
    pub cgroup: String,
    pub nice: i32,
}

/// Read thread `tid`'s process facts (`None`: it is gone).
pub fn read_proc(tid: u32) -> Option<Proc> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    let mut p = Proc::default();
    for line in status.lines() {
        if let Some(v) = line.strip_prefix("Tgid:") {
            p.tgid = v.trim().parse().ok()?;
        } else if let Some(v) = line.strip_prefix("Uid:") {
            p.uid = v.split_whitespace().next()?.parse().ok()?;
        }
    }
    let pid = p.tgid;
    p.comm = std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim_end()
        .to_string();
    p.cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    p.cgroup = std::fs::read_to_string(format!("/proc/{tid}/cgroup"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("0::").map(str::to_string))
        })
        .unwrap_or_else(|| "/".into());
    // Field 19 of /proc/TID/stat is the nice value (after the command in parentheses).
    p.nice = std::fs::read_to_string(format!("/proc/{tid}/stat"))
        .ok()
        .and_then(|s| {
            let rest = &s[s.rfind(')')? + 2..];
            rest.split_whitespace().nth(16)?.parse().ok()
        })
        .unwrap_or(0);
    Some(p)
}

/// `ioprio_get(IOPRIO_WHO_PROCESS, tid)`: (class, level), `None` on failure.
pub fn ioprio(tid: u32) -> Option<(u32, u32)> {
    // SAFETY: a plain system call with integer arguments.
    let v = unsafe { libc::syscall(libc::SYS_ioprio_get, 1 as libc::c_int, tid as libc::c_int) };
    (v >= 0).then_some(((v as u32) >> 13, (v as u32) & 0x7))
}

/// The class and weight of an I/O priority (class, level) and nice value.
pub fn from_ioprio(prio: Option<(u32, u32)>, nice: i32) -> (IoClass, u32) {
    match prio {
        Some((1, _)) => (IoClass::Critical, 8),
        Some((3, _)) => (IoClass::Idle, 1),
        Some((2, level)) => (IoClass::Normal, 8 - level.min(7)),
        // IOPRIO_CLASS_NONE: best effort at the level of the nice value.
        _ => (IoClass::Normal, 8 - ((nice + 20) / 5).clamp(0, 7) as u32),
    }
}

fn cgroup_file(cg: &str, name: &str) -> Option<String> {
    let p = format!("/sys/fs/cgroup{}/{name}", cg.trim_end_matches('/'));
    std::fs::read_to_string(p).ok()
}

/// The answer for a process (`prio`: the thread's I/O priority) on a file whose path
/// satisfies the path rules in `paths` (bit i: rule i; see [`Classifier::paths`]).
pub fn classify(p: &Proc, prio: Option<(u32, u32)>, rules: &[Rule], paths: u64) -> Who {
    let (mut class, mut weight) = from_ioprio(prio, p.nice);
    let in_cgroup = p.cgroup != "/" && !p.cgroup.is_empty();
    if in_cgroup {
        match cgroup_file(&p.cgroup, "io.prio.class")
            .as_deref()
            .map(str::trim)
        {
            Some("promote-to-rt") | Some("rt") => class = IoClass::Critical,
            Some("restrict-to-be") | Some("be") if class == IoClass::Critical => {
                class = IoClass::Normal
            }
            Some("idle") => class = IoClass::Idle,
            _ => {}
        }
        if let Some(w) = cgroup_file(&p.cgroup, "io.weight").and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("default ")
                    .and_then(|v| v.trim().parse::<u32>().ok())
            })
        }) {
            if w != 100 {
                weight = (w / 25).max(1);
            }
        }
    }
    let mut flow = if in_cgroup {
        p.cgroup.clone()
    } else {
        format!("{}.{}", p.comm, p.tgid)
    };
    let on_path = |i: usize, r: &Rule| r.glob.is_none() || paths & (1 << i) != 0;
    if let Some((_, r)) = rules
        .iter()
        .enumerate()
        .find(|&(i, r)| on_path(i, r) && matches(r, p))
    {
        if let Some(c) = r.class.as_deref().and_then(parse_class) {
            class = c;
        }
        if let Some(w) = r.weight {
            weight = w;
        }
        if let Some(f) = &r.flow {
            flow = f.clone();
        }
    }
    Who {
        class,
        weight,
        flow,
    }
}

fn matches(r: &Rule, p: &Proc) -> bool {
    r.comm.as_ref().is_none_or(|c| *c == p.comm)
        && r.cmdline
            .as_ref()
            .is_none_or(|c| p.cmdline.contains(c.as_str()))
        && r.uid.is_none_or(|u| u == p.uid)
        && r.cgroup
            .as_ref()
            .is_none_or(|c| p.cgroup.starts_with(c.as_str()))
}

/// The path rules (bit i: rule i) that `rel`, a path relative to the mount's root,
/// satisfies.
pub fn path_bits(rules: &[Rule], rel: &Path) -> u64 {
    rules
        .iter()
        .enumerate()
        .filter(|(_, r)| r.glob.as_ref().is_some_and(|g| g.is_match(rel)))
        .fold(0, |m, (i, _)| m | 1 << i)
}

/// An answer and when it was found, by (thread, path rules of the open).
type Answers = HashMap<(u32, u64), (Instant, Arc<Who>)>;

/// The per-thread (and per path-rule set) cache of answers.
#[derive(Debug)]
pub struct Classifier {
    rules: Vec<Rule>,
    /// BACKING as `/proc/self/fd` names it (paths are matched relative to it).
    root: std::path::PathBuf,
    cache: Mutex<Answers>,
}

impl Classifier {
    /// `root`: the backing directory's path, as `/proc/self/fd` names its descriptor.
    pub fn new(rules: Vec<Rule>, root: std::path::PathBuf) -> Classifier {
        Classifier {
            rules,
            root,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The path rules satisfied by the file open as descriptor `fd` (any descriptor of
    /// its backing inode): its name now, relative to BACKING. 0 when no rule has a path
    /// (nothing is read then), or the file has no name (unlinked) or none under BACKING.
    pub fn paths(&self, fd: std::os::fd::RawFd) -> u64 {
        if self.rules.iter().all(|r| r.glob.is_none()) {
            return 0;
        }
        std::fs::read_link(format!("/proc/self/fd/{fd}"))
            .ok()
            .and_then(|p| {
                let rel = p.strip_prefix(&self.root).ok()?.to_path_buf();
                // An unlinked inode's link ends in " (deleted)": it has no path.
                let deleted = rel
                    .file_name()
                    .is_some_and(|n| n.as_encoded_bytes().ends_with(b" (deleted)"));
                (!deleted).then(|| path_bits(&self.rules, &rel))
            })
            .unwrap_or(0)
    }

    /// The answer for thread `tid` (0: the kernel itself) on a file whose open
    /// satisfied the path rules `paths` ([`Classifier::paths`]).
    pub fn who(&self, tid: u32, paths: u64) -> Arc<Who> {
        if tid == 0 {
            return Arc::new(Who::kernel());
        }
        let now = Instant::now();
        let key = (tid, paths);
        {
            let c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((at, w)) = c.get(&key) {
                if now.duration_since(*at) < TTL {
                    return w.clone();
                }
            }
        }
        let who = Arc::new(match read_proc(tid) {
            Some(p) => classify(&p, ioprio(tid), &self.rules, paths),
            None => Who::kernel(),
        });
        let mut c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if c.len() > 4096 {
            c.retain(|_, (at, _)| now.duration_since(*at) < TTL);
        }
        c.insert(key, (now, who.clone()));
        who
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioprio_maps_to_classes_and_weights() {
        assert_eq!(from_ioprio(Some((1, 0)), 0).0, IoClass::Critical);
        assert_eq!(from_ioprio(Some((3, 0)), 0).0, IoClass::Idle);
        assert_eq!(from_ioprio(Some((2, 0)), 0), (IoClass::Normal, 8));
        assert_eq!(from_ioprio(Some((2, 7)), 0), (IoClass::Normal, 1));
        assert_eq!(from_ioprio(Some((0, 0)), 0), (IoClass::Normal, 4));
        assert_eq!(from_ioprio(None, 19), (IoClass::Normal, 1));
    }

    #[test]
    fn rules_match_in_order_and_bad_rules_are_refused() {
        let rules = parse_rules(
            r#"
            [[rule]]
            comm = "postgres"
            cmdline = "checkpointer"
            class = "idle"
            flow = "pg-bg"
            [[rule]]
            comm = "postgres"
            class = "critical"
            weight = 8
            "#,
        )
        .unwrap();
        let mut p = Proc {
            tgid: 7,
            comm: "postgres".into(),
            cmdline: "postgres: checkpointer".into(),
            cgroup: "/".into(),
            ..Proc::default()
        };
        let w = classify(&p, Some((2, 4)), &rules, 0);
        assert_eq!((w.class, w.flow.as_str()), (IoClass::Idle, "pg-bg"));
        p.cmdline = "postgres: app db [local] SELECT".into();
        let w = classify(&p, Some((2, 4)), &rules, 0);
        assert_eq!(
            (w.class, w.weight, w.flow.as_str()),
            (IoClass::Critical, 8, "postgres.7")
        );
        assert!(parse_rules("[[rule]]\nclass = \"idle\"\n")
            .unwrap_err()
            .contains("matches everything"));
        assert!(parse_rules("[[rule]]\ncomm = \"x\"\n")
            .unwrap_err()
            .contains("changes nothing"));
        assert!(parse_rules("[[rule]]\ncomm = \"x\"\nclass = \"urgent\"\n")
            .unwrap_err()
            .contains("not one of"));
        assert!(parse_rules("[[rule]]\ncomm = \"x\"\nprio = 1\n").is_err());
    }

    #[test]
    fn this_thread_is_classified_from_proc() {
        let tid = unsafe { libc::gettid() } as u32;
        let p = read_proc(tid).expect("our own /proc entry");
        assert_eq!(p.tgid, std::process::id());
        let c = Classifier::new(Vec::new(), "/".into());
        let a = c.who(tid, 0);
        assert!(Arc::ptr_eq(&a, &c.who(tid, 0)), "cached per thread");
    }

    #[test]
    fn path_rules_match_the_files_path_and_the_caller() {
        let rules = parse_rules(
            r#"
            [[rule]]
            path = "pg_wal/*"
            class = "critical"
            flow = "wal"
            [[rule]]
            comm = "postgres"
            path = "**/*.tmp"
            class = "idle"
            [[rule]]
            comm = "postgres"
            class = "normal"
            weight = 2
            "#,
        )
        .unwrap();
        let bits = |p: &str| path_bits(&rules, Path::new(p));
        assert_eq!(bits("pg_wal/000001"), 0b001);
        // `*` does not cross a `/`; `**` does.
        assert_eq!(bits("pg_wal/archive/000001"), 0);
        assert_eq!(bits("base/1/t.tmp"), 0b010);
        assert_eq!(bits("x.tmp"), 0b010);
        assert_eq!(bits("base/1/16384"), 0);
        let p = Proc {
            tgid: 9,
            comm: "postgres".into(),
            cgroup: "/".into(),
            ..Proc::default()
        };
        let who = |paths| classify(&p, Some((2, 4)), &rules, paths);
        assert_eq!(
            (who(0b001).class, who(0b001).flow.as_str()),
            (IoClass::Critical, "wal")
        );
        assert_eq!(who(0b010).class, IoClass::Idle);
        assert_eq!((who(0).class, who(0).weight), (IoClass::Normal, 2));
        // A path rule still needs its other matchers: another process's temp file.
        let other = Proc {
            comm: "cp".into(),
            ..p.clone()
        };
        let w = classify(&other, Some((2, 4)), &rules, 0b010);
        assert_eq!((w.class, w.weight), (IoClass::Normal, 4));
    }

    #[test]
    fn bad_path_rules_are_refused_with_the_rule_named() {
        let one =
            |path: &str| parse_rules(&format!("[[rule]]\npath = {path:?}\nclass = \"idle\"\n"));
        assert!(one("/var/lib/x")
            .unwrap_err()
            .contains("relative to the mount's root"));
        assert!(one("a/[b").unwrap_err().contains("rule 1: path 'a/[b'"));
        let many: String = (0..=MAX_PATH_RULES)
            .map(|i| format!("[[rule]]\npath = \"f{i}\"\nclass = \"idle\"\n"))
            .collect();
        assert!(parse_rules(&many)
            .unwrap_err()
            .contains(&format!("rule {} matches on path", MAX_PATH_RULES + 1)));
    }

    #[test]
    fn an_open_files_path_is_read_from_its_descriptor() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("pg_wal")).unwrap();
        let rules = parse_rules("[[rule]]\npath = \"pg_wal/*\"\nclass = \"critical\"\n").unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let c = Classifier::new(rules, root);
        let wal = std::fs::File::create(dir.path().join("pg_wal/1")).unwrap();
        let data = std::fs::File::create(dir.path().join("data")).unwrap();
        assert_eq!(c.paths(wal.as_raw_fd()), 1);
        assert_eq!(c.paths(data.as_raw_fd()), 0);
        // Renamed while open: the name it has now.
        std::fs::rename(dir.path().join("data"), dir.path().join("pg_wal/2")).unwrap();
        assert_eq!(c.paths(data.as_raw_fd()), 1);
        // Unlinked: no path.
        std::fs::remove_file(dir.path().join("pg_wal/1")).unwrap();
        assert_eq!(c.paths(wal.as_raw_fd()), 0);
        let tid = unsafe { libc::gettid() } as u32;
        assert_eq!(c.who(tid, 1).class, IoClass::Critical);
        let own = from_ioprio(ioprio(tid), read_proc(tid).unwrap().nice).0;
        assert_eq!(c.who(tid, 0).class, own);
    }
}
