//! Where critical tasks waited: RCP's Table 2 (Kim et al., FAST '17, §7.2), which
//! measured with LatencyTOP the maximum and the mean time PostgreSQL's backends waited
//! at each kernel wait site (`semtimedop`, `j_wait_done_commit`, `PG_writeback`,
//! `get_request`, `BH Lock`, …) under each scheme. The runtime sees every wait of a
//! task (its dependency edge, [`Dep`]); a wait of a task critical by itself (its class,
//! not an inherited boost) is tallied at its site when it ends: the level (the stack's
//! own objects — RCP's kernel level — or the application's), the kind and the object's
//! name ([`crate::Mutex::named`], [`crate::Condvar::named`]; unnamed ones together).

use std::collections::BTreeMap;

use sluice_core::Nanos;

use crate::deps::{Dep, Deps};

/// A wait site.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Site {
    /// `stack` (the I/O stack's own objects and I/O: RCP's kernel level) or `app`.
    pub level: &'static str,
    /// `lock`, `range lock`, `condvar`, `join`, `own I/O`, `others' I/O` (a request another task
    /// issued, e.g. a page under writeback: Linux's `PG_writeback`), `dirty throttle`
    /// (the page cache's admission: `balance_dirty_pages`).
    pub kind: &'static str,
    /// The object's name; "" unnamed.
    pub name: &'static str,
}

/// Waits at one site.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Stat {
    pub count: u64,
    pub total_ns: Nanos,
    pub max_ns: Nanos,
}

/// The waits of critical tasks, by site.
#[derive(Debug, Default)]
pub(crate) struct WaitTally {
    pub sites: BTreeMap<Site, Stat>,
}

impl WaitTally {
    /// A wait of `ns` at `site` ended.
    pub fn add(&mut self, site: Site, ns: Nanos) {
        let s = self.sites.entry(site).or_default();
        s.count += 1;
        s.total_ns += ns;
        s.max_ns = s.max_ns.max(ns);
    }
}

/// The site of task `t`'s wait on `dep`; `issuer` gives the task that issued an I/O
/// slot.
pub(crate) fn site(deps: &Deps, t: u32, dep: Dep, issuer: impl Fn(u32) -> u32) -> Site {
    let level = |stack: bool| if stack { "stack" } else { "app" };
    match dep {
        Dep::Lock(l) => {
            let l = &deps.locks[l as usize];
            Site {
                level: level(l.stack),
                kind: "lock",
                name: l.name,
            }
        }
        Dep::Range(r) => {
            let r = &deps.ranges[r as usize];
            Site {
                level: level(r.stack),
                kind: "range lock",
                name: r.name,
            }
        }
        Dep::Cond(c) => {
            let c = &deps.conds[c as usize];
            Site {
                level: level(c.stack),
                kind: "condvar",
                name: c.name,
            }
        }
        Dep::Join(_) => Site {
            level: "app",
            kind: "join",
            name: "",
        },
        Dep::Io(s) => Site {
            level: "stack",
            kind: if issuer(s) == t {
                "own I/O"
            } else {
                "others' I/O"
            },
            name: "",
        },
        Dep::Throttle => Site {
            level: "stack",
            kind: "dirty throttle",
            name: "",
        },
    }
}
