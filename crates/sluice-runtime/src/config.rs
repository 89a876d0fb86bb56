//! The runtime's settings: wake-up order, inheritance switches, the simulated host's
//! CPU cost table.

use sluice_core::Nanos;

/// The order in which a core runs tasks that became runnable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Wakeup {
    /// First woken, first run (the baseline).
    Fifo,
    /// FastResponse's critical wakeup (ICS '22 §3.5, Algorithm 1): a critical task woken
    /// (by its I/O's completion, a lock, a condition, a join or a timer) becomes the
    /// core's `next` — it runs before every
    /// runnable non-critical task — unless `next` already holds a critical task (then
    /// it takes the normal path); the core is marked to reschedule, so a non-critical
    /// CPU burst in progress is preempted. A `next` that is critical is not displaced by
    /// a later non-critical wakee.
    #[default]
    Critical,
}

impl std::str::FromStr for Wakeup {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "fifo" => Ok(Wakeup::Fifo),
            "critical" => Ok(Wakeup::Critical),
            _ => Err(format!("wakeup '{s}': give fifo or critical")),
        }
    }
}

/// RCP's I/O priority inheritance (FAST '17 §4.2–4.4), per kind of dependency and per
/// level, so each part can be switched off (RCP Fig. 10's ablation). An edge is followed
/// when its kind *and* its level are on: a lock of the page cache only with `locks`
/// and `stack`, an application's condition only with `condvars` and `user`, an I/O
/// only with `io` and `stack`.
///
/// The levels are RCP's own split (§4.2.1, Fig. 10): *kernel-level* dependency handling
/// covers the stack's waits — its locks and conditions (made with
/// [`crate::Mutex::new_stack_level`], [`crate::Condvar::new_stack_level`]),
/// outstanding I/O (`PG_writeback`) and pauses at the cache's admission; *user-level*
/// covers the application's locks, condition variables and joins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inherit {
    /// A lock holder inherits the critical class of a critical waiter until it unlocks.
    pub locks: bool,
    /// The helpers of a condition variable (the tasks that signal it) and a joined task
    /// inherit the class of a critical waiter until the waiter is woken.
    pub condvars: bool,
    /// An outstanding request is promoted when a critical task's chain of waits
    /// reaches it: a request another task issued that a critical task waits on, and
    /// the requests a task had already issued when it inherits the critical class
    /// (RCP §4.2.2: an I/O dependency, resolved by reclassifying the non-critical I/O
    /// wherever it is). Off: a boosted task's *new* I/O is critical, what it issued
    /// before keeps its class.
    pub io: bool,
    /// Inheritance follows the chain (holder waits on a lock, a condition or I/O …) to
    /// its end; off: one step from the critical waiter only.
    pub transitive: bool,
    /// RCP's kernel-level dependency handling: edges through the stack's own locks and
    /// conditions, outstanding I/O and admission pauses.
    pub stack: bool,
    /// RCP's user-level dependency handling: edges through the application's locks,
    /// condition variables and joins.
    pub user: bool,
}

impl Inherit {
    /// Everything on (the default).
    pub const ON: Inherit = Inherit {
        locks: true,
        condvars: true,
        io: true,
        transitive: true,
        stack: true,
        user: true,
    };
    /// Nothing inherited.
    pub const OFF: Inherit = Inherit {
        locks: false,
        condvars: false,
        io: false,
        transitive: false,
        stack: false,
        user: false,
    };

    /// Whether an edge through a primitive of this level (the stack's own, or the
    /// application's) is followed, its kind aside.
    pub(crate) fn at_level(&self, stack: bool) -> bool {
        if stack {
            self.stack
        } else {
            self.user
        }
    }

    /// Whether I/O dependencies are followed: a kernel-level kind.
    pub(crate) fn follows_io(&self) -> bool {
        self.io && self.stack
    }

    /// Whether any edge can be followed.
    pub fn any(&self) -> bool {
        (self.stack && (self.locks || self.condvars || self.io))
            || (self.user && (self.locks || self.condvars))
    }
}

impl Default for Inherit {
    fn default() -> Self {
        Inherit::ON
    }
}

impl std::str::FromStr for Inherit {
    type Err = String;
    /// `on`, `off`, or a comma list of what is on: the kinds `locks`, `condvars`, `io`,
    /// `transitive` and the levels `stack`, `user`. A list that names no level has
    /// both; one that names none of `locks`, `condvars`, `io` has the three, and then
    /// `transitive` too (`user` alone is everything at the user level; `locks,io`
    /// is those two kinds, one step, at both levels).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "on" => return Ok(Inherit::ON),
            "off" => return Ok(Inherit::OFF),
            _ => {}
        }
        let mut i = Inherit::OFF;
        for k in s.split(',') {
            match k.trim() {
                "locks" => i.locks = true,
                "condvars" => i.condvars = true,
                "io" => i.io = true,
                "transitive" => i.transitive = true,
                "stack" => i.stack = true,
                "user" => i.user = true,
                other => {
                    return Err(format!(
                    "inherit '{other}': give on, off, or a list of locks, condvars, io, transitive, stack, user"
                ))
                }
            }
        }
        if !i.stack && !i.user {
            (i.stack, i.user) = (true, true);
        }
        if !(i.locks || i.condvars || i.io) {
            (i.locks, i.condvars, i.io, i.transitive) = (true, true, true, true);
        }
        Ok(i)
    }
}

/// The buffered read path ([`crate::StackBuilder::read_path`]): where a read's page
/// work happens against its device I/O (AIOS, ATC '19 §2.2, §3.2, Fig. 4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadPath {
    /// Linux's: the missing pages are allocated, indexed and DMA-mapped, then the read
    /// goes through the block layer; after it, each page is unmapped — all on the
    /// reader's critical path (Fig. 4(a)).
    #[default]
    Vanilla,
    /// AIOS's: the read is submitted first through the lean block layer (LBIO), the
    /// pages are allocated, mapped and indexed while the device works (lazy indexing),
    /// and unmapped lazily, off the critical path (Fig. 4(b)).
    Aios,
}

impl std::str::FromStr for ReadPath {
    type Err = String;
    fn from_str(s: &str) -> Result<ReadPath, String> {
        match s {
            "vanilla" => Ok(ReadPath::Vanilla),
            "aios" => Ok(ReadPath::Aios),
            other => Err(format!("read path '{other}': give vanilla or aios")),
        }
    }
}

/// What the simulated host charges on its cores, in ns. The defaults are round figures
/// of a Linux I/O path on a current server core, of the size the AIOS paper (ATC '19,
/// Fig. 2–3) breaks down: a system call with block-layer submission ≈ 1.5 µs, an
/// interrupt with completion and wake-up ≈ 1 µs, a context switch ≈ 0.5 µs.
///
/// The stack's own layers charge their work from this table with [`charge`](crate::charge)
/// (simulation only: on real hardware the work itself takes its time). The journal's
/// entries are the two "I/O preparation" steps of AIOS's Fig. 5 (§2.3.1, §3.3): for
/// each journal block, a buffer page, a block of the journal area, its checksum and
/// the block and driver layers' work; for the commit record, the same once. The paper
/// draws them to scale but prints no figure; ours are estimates of that size (a 4 KiB
/// crc32c ≈ 0.3 µs, a page allocation 0.19 µs and a DMA mapping 0.29 µs as §3.2
/// measures, plus bio allocation and submission), so that on an Optane-class device
/// the preparation is a visible part of an fsync, as Fig. 5 shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CostTable {
    /// CPU per submitted I/O, charged to the submitting task's core.
    pub submit_ns: Nanos,
    /// CPU per completed I/O (interrupt and completion), charged to the core the I/O
    /// was submitted from, at completion.
    pub complete_ns: Nanos,
    /// CPU to switch a core from one task to another.
    pub switch_ns: Nanos,
    /// Longest slice of a CPU burst before the core looks at its run queue again.
    pub quantum_ns: Nanos,
    /// CPU to prepare one journal block (descriptor, metadata image or f-transaction
    /// header) for writing, charged by the journaled store.
    pub journal_block_ns: Nanos,
    /// CPU to prepare a journal commit record, charged by the journaled store.
    pub commit_block_ns: Nanos,
    /// Read path, per page a buffered read brings in: allocating it (AIOS §3.2.2:
    /// 0.19 µs) and looking it up and inserting it in the page cache's index (§3.2.3).
    pub page_ns: Nanos,
    /// Read path, per page: its DMA mapping (AIOS §3.2.2: 754 cycles, 0.29 µs); the
    /// unmapping after the I/O costs as much.
    pub dma_map_ns: Nanos,
    /// Per read AIOS's lean block layer submits: its submission CPU in place of
    /// `submit_ns` (AIOS §3.1, Fig. 6: an lbio takes 0.18–0.60 µs where a bio takes
    /// 84 % more, so about 1 µs less than a bio's system call, block layer and driver).
    pub lean_submit_ns: Nanos,
}

impl Default for CostTable {
    fn default() -> Self {
        CostTable {
            submit_ns: 1_500,
            complete_ns: 1_000,
            switch_ns: 500,
            quantum_ns: 1_000_000,
            journal_block_ns: 2_000,
            commit_block_ns: 1_500,
            page_ns: 500,
            dma_map_ns: 290,
            lean_submit_ns: 500,
        }
    }
}

impl CostTable {
    /// No CPU cost at all (I/O only).
    pub const FREE: CostTable = CostTable {
        submit_ns: 0,
        complete_ns: 0,
        switch_ns: 0,
        quantum_ns: 1_000_000,
        journal_block_ns: 0,
        commit_block_ns: 0,
        page_ns: 0,
        dma_map_ns: 0,
        lean_submit_ns: 0,
    };

    /// The known keys of [`CostTable::parse`].
    pub const KEYS: &'static str =
        "submit_ns, complete_ns, switch_ns, quantum_ns, journal_block_ns, commit_block_ns, \
         page_ns, dma_map_ns, lean_submit_ns";

    /// Override entries from `key=N,…` with the keys of [`CostTable::KEYS`].
    pub fn parse(mut self, s: &str) -> Result<CostTable, String> {
        for e in s.split(',').filter(|e| !e.trim().is_empty()) {
            let (k, v) = e
                .split_once('=')
                .ok_or_else(|| format!("cost '{e}': give key=ns"))?;
            let v: Nanos = v
                .trim()
                .parse()
                .map_err(|_| format!("cost {k}={v}: give whole nanoseconds"))?;
            match k.trim() {
                "submit_ns" => self.submit_ns = v,
                "complete_ns" => self.complete_ns = v,
                "switch_ns" => self.switch_ns = v,
                "journal_block_ns" => self.journal_block_ns = v,
                "commit_block_ns" => self.commit_block_ns = v,
                "page_ns" => self.page_ns = v,
                "dma_map_ns" => self.dma_map_ns = v,
                "lean_submit_ns" => self.lean_submit_ns = v,
                "quantum_ns" if v > 0 => self.quantum_ns = v,
                "quantum_ns" => return Err("cost quantum_ns=0: give at least 1".into()),
                other => {
                    return Err(format!(
                        "cost '{other}': known keys are {}",
                        CostTable::KEYS
                    ))
                }
            }
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switches_parse() {
        assert_eq!("on".parse::<Inherit>().unwrap(), Inherit::ON);
        let i: Inherit = "locks,io".parse().unwrap();
        assert!(i.locks && i.io && !i.condvars && !i.transitive);
        assert!(i.stack && i.user, "no level named: both");
        let k: Inherit = "stack,transitive".parse().unwrap();
        assert_eq!(
            k,
            Inherit {
                user: false,
                ..Inherit::ON
            },
            "no kind named: all kinds"
        );
        let u: Inherit = "user".parse().unwrap();
        assert_eq!(
            u,
            Inherit {
                stack: false,
                ..Inherit::ON
            },
            "nothing but a level named: everything at that level"
        );
        assert!(
            u.any()
                && !Inherit {
                    user: false,
                    stack: false,
                    ..Inherit::ON
                }
                .any()
        );
        assert!("lock"
            .parse::<Inherit>()
            .unwrap_err()
            .contains("give on, off"));
        assert_eq!("fifo".parse::<Wakeup>().unwrap(), Wakeup::Fifo);
        assert!("lifo".parse::<Wakeup>().is_err());
        let c = CostTable::default()
            .parse("submit_ns=10, quantum_ns=5, commit_block_ns=7")
            .unwrap();
        assert_eq!((c.submit_ns, c.quantum_ns, c.complete_ns), (10, 5, 1_000));
        assert_eq!((c.commit_block_ns, c.journal_block_ns), (7, 2_000));
        assert!(CostTable::default().parse("quantum_ns=0").is_err());
        assert!(CostTable::default().parse("speed=1").is_err());
    }
}
