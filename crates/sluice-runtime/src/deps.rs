//! RCP's I/O priority inheritance (FAST '17 §4.2–4.4) as an explicit dependency graph.
//!
//! Every blocked task records what it waits on — its *blocking status* in RCP's words —
//! as one edge ([`Dep`]): a lock (whose holders are known), a condition variable (whose
//! helpers are the tasks that signal it), a joined task, or an outstanding I/O (whose
//! request is known). The set of boosted tasks and promoted requests is a function of
//! these edges:
//!
//! > a task is boosted iff a critical task's chain of waits reaches it; a request is
//! > promoted iff a critical task's chain of waits reaches it.
//!
//! [`refresh`] recomputes that set whenever an edge changed, as `rt_mutex_adjust_prio_chain`
//! walks owner → blocked-on lock → owner, in these steps:
//!
//! 1. roots: every blocked task that is critical by itself (its class, or an explicit
//!    boost) — not by inheritance;
//! 2. from each root, follow its edge: a lock → its holders (`Inherit::locks`); a
//!    condition variable → its live helpers, a join → the joined task
//!    (`Inherit::condvars`); an I/O → promote that request (`Inherit::io`); each
//!    only at an enabled level — the stack's own primitives, I/O and admission pauses
//!    at `Inherit::stack` (RCP's kernel level), the application's primitives and joins
//!    at `Inherit::user`;
//! 3. a task reached is boosted; if it is itself blocked and `Inherit::transitive` is on,
//!    continue from its edge (at most [`MAX_CHAIN`] steps; a task seen twice ends the
//!    walk, so a deadlock cycle cannot loop); a task reached this way that is paused at
//!    the page cache's admission (its dirty limit, [`Dep::Throttle`]) has that cause
//!    resolved: it is woken to ask again under the critical limit (RCP §4.4: "the
//!    applied dirty ratio at the caching layer is transiently changed to that of
//!    critical I/Os and the blocked task is woken up" — inheriting alone would leave it
//!    asleep);
//! 4. undo exactly what is no longer reached: boosts not in the new set end (requests
//!    already promoted stay critical, as RCP reclassifies them); newly boosted tasks get
//!    their outstanding requests promoted (`Inherit::io`) and, from now on, critical
//!    I/O and the critical wake-up rule.

use std::collections::VecDeque;

use sluice_core::Nanos;

use crate::Inherit;

/// A set of task ids in ascending order, in a sorted vector: inserting and removing
/// keep its capacity, so a task blocking and waking on every I/O allocates nothing (a
/// `BTreeSet` allocated a node now and then as it grew and shrank around a node's
/// size — about one allocation in eight I/Os at QD32, `tests/hot_path.rs`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TaskSet(Vec<u32>);

impl TaskSet {
    /// Add `t`; whether it was not there.
    pub fn insert(&mut self, t: u32) -> bool {
        match self.0.binary_search(&t) {
            Ok(_) => false,
            Err(i) => {
                self.0.insert(i, t);
                true
            }
        }
    }

    /// Take `t` out; whether it was there.
    pub fn remove(&mut self, t: &u32) -> bool {
        match self.0.binary_search(t) {
            Ok(i) => {
                self.0.remove(i);
                true
            }
            Err(_) => false,
        }
    }

    pub fn iter(&self) -> std::slice::Iter<'_, u32> {
        self.0.iter()
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

/// The walk's scratch vectors, kept between refreshes (no allocation once grown).
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    roots: Vec<u32>,
    ios: Vec<u32>,
    seen: Vec<u32>,
    frontier: Vec<(u32, usize)>,
    next: Vec<u32>,
    /// The boosted set being built (swapped with `Deps::boosted` at the end).
    reached: TaskSet,
}

/// Longest chain followed (Linux's `max_lock_depth` is 1024; RCP saw four steps).
pub const MAX_CHAIN: usize = 16;

/// What a blocked task waits on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dep {
    /// A lock (index into `Deps::locks`).
    Lock(u32),
    /// A condition variable (index into `Deps::conds`).
    Cond(u32),
    /// The end of another task.
    Join(u32),
    /// A byte range of a range lock (index into `Deps::ranges`; the range is the
    /// waiter's entry there).
    Range(u32),
    /// An I/O slot.
    Io(u32),
    /// Paused at the page cache's admission (over its dirty limit): RCP's third
    /// blocking cause, "blocking at admission control stage", with no object.
    Throttle,
}

/// A lock's holders and waiters.
#[derive(Debug, Default)]
pub(crate) struct LockState {
    /// The exclusive holder.
    pub owner: Option<u32>,
    /// Shared holders (read locks).
    pub readers: Vec<u32>,
    /// Waiting tasks and whether each wants the lock exclusively, in arrival order.
    pub waiters: VecDeque<(u32, bool)>,
    /// A lock of the stack itself (RCP's kernel level), not the application's.
    pub stack: bool,
    /// Its name in the table of waits ("" unnamed).
    pub name: &'static str,
}

/// A condition variable's helpers and waiters.
#[derive(Debug, Default)]
pub(crate) struct CondState {
    /// Tasks that signalled it, with the time of their last signal (RCP's inference: a
    /// task that signals a condition is likely to signal it again).
    pub helpers: Vec<(u32, Nanos)>,
    /// Tasks registered as helpers by the application (never expire).
    pub fixed_helpers: Vec<u32>,
    /// Waiting tasks, in arrival order, and whether each was notified.
    pub waiters: VecDeque<u32>,
    /// A condition of the stack itself (RCP's kernel level), not the application's.
    pub stack: bool,
    /// Its name in the table of waits ("" unnamed).
    pub name: &'static str,
}

/// A byte-range lock's held ranges and waiters ([`crate::RangeLock`]).
#[derive(Debug, Default)]
pub(crate) struct RangeState {
    /// Held ranges: `[start, end)`, the holder task, the guard's id.
    pub held: Vec<(u64, u64, u32, u64)>,
    /// Waiting tasks and the range each wants.
    pub waiters: Vec<(u32, u64, u64)>,
    /// The next guard's id.
    pub next: u64,
    /// A lock of the stack itself (RCP's kernel level), not the application's.
    pub stack: bool,
    /// Its name in the table of waits ("" unnamed).
    pub name: &'static str,
}

impl RangeState {
    /// The tasks holding a range that overlaps waiter `t`'s (none if `t` waits not).
    pub fn blockers(&self, t: u32) -> impl Iterator<Item = u32> + '_ {
        let want = self.waiters.iter().find(|w| w.0 == t).map(|w| (w.1, w.2));
        self.held
            .iter()
            .filter(move |h| want.is_some_and(|(s, e)| h.0 < e && s < h.1))
            .map(|h| h.2)
    }
}

/// The dependency graph's state.
#[derive(Debug, Default)]
pub(crate) struct Deps {
    pub locks: Vec<LockState>,
    /// Byte-range locks; a dropped lock's entry is reused (`free_ranges`): a file
    /// system makes one per open file.
    pub ranges: Vec<RangeState>,
    pub free_ranges: Vec<u32>,
    pub conds: Vec<CondState>,
    /// Blocked tasks (those with an edge).
    pub blocked: TaskSet,
    /// Tasks boosted now.
    pub boosted: TaskSet,
    /// The walk's vectors, kept.
    pub scratch: Scratch,
    /// Something changed since the last refresh.
    pub dirty: bool,
    /// A helper that has not signalled for this long is forgotten.
    pub helper_window_ns: Nanos,
    /// Tasks the last refresh found paused at the cache's admission at the end of a
    /// critical chain: the caller wakes them (their pause is resolved).
    pub resolved: Vec<u32>,
}

/// What [`refresh`] needs to know of the tasks and the I/O, and may change.
pub(crate) trait Graph {
    /// The edge of task `t`, if blocked.
    fn edge(&self, t: u32) -> Option<Dep>;
    /// Whether `t` is critical by itself (class or explicit boost).
    fn critical_by_itself(&self, t: u32) -> bool;
    /// Set or clear `t`'s inherited boost; a newly boosted task's outstanding requests
    /// are promoted by the implementation.
    fn set_boost(&mut self, t: u32, on: bool);
    /// Promote the request of I/O slot `s` (if still queued or waiting).
    fn promote_io(&mut self, s: u32);
}

/// Recompute boosts and promotions from the edges (see the module documentation).
/// Returns how many tasks started and how many stopped inheriting.
pub(crate) fn refresh(deps: &mut Deps, g: &mut impl Graph, sw: Inherit, now: Nanos) -> (u32, u32) {
    deps.dirty = false;
    let window = deps.helper_window_ns;
    for c in &mut deps.conds {
        c.helpers
            .retain(|&(_, last)| window == 0 || now.saturating_sub(last) <= window);
    }
    let mut sc = std::mem::take(&mut deps.scratch);
    sc.reached.clear();
    sc.ios.clear();
    sc.roots.clear();
    sc.roots.extend(
        deps.blocked
            .iter()
            .copied()
            .filter(|&t| g.critical_by_itself(t)),
    );
    for &root in &sc.roots {
        sc.seen.clear();
        sc.frontier.clear();
        sc.frontier.push((root, 0usize));
        sc.seen.push(root);
        while let Some((t, depth)) = sc.frontier.pop() {
            if depth >= MAX_CHAIN {
                continue;
            }
            let Some(edge) = g.edge(t) else { continue };
            sc.next.clear();
            match edge {
                Dep::Lock(l) if sw.locks && sw.at_level(deps.locks[l as usize].stack) => {
                    let ls = &deps.locks[l as usize];
                    sc.next.extend(ls.owner);
                    sc.next.extend(ls.readers.iter().copied());
                }
                // A byte-range lock: only the holders of a range overlapping the
                // waiter's block it (RCP §4.2.1, as a lock's owner).
                Dep::Range(r) if sw.locks && sw.at_level(deps.ranges[r as usize].stack) => {
                    sc.next.extend(deps.ranges[r as usize].blockers(t));
                }
                Dep::Cond(c) if sw.condvars && sw.at_level(deps.conds[c as usize].stack) => {
                    let cs = &deps.conds[c as usize];
                    sc.next.extend(cs.helpers.iter().map(|h| h.0));
                    sc.next.extend(cs.fixed_helpers.iter().copied());
                }
                Dep::Join(j) if sw.condvars && sw.user => sc.next.push(j),
                Dep::Io(s) if sw.follows_io() => sc.ios.push(s),
                // Reached through a chain (a root is critical: its limit is already
                // the critical one). Admission control is the stack's (kernel level).
                Dep::Throttle if depth > 0 && sw.stack && !deps.resolved.contains(&t) => {
                    deps.resolved.push(t)
                }
                _ => {}
            }
            for &n in &sc.next {
                if n == t || sc.seen.contains(&n) {
                    continue;
                }
                sc.seen.push(n);
                if !g.critical_by_itself(n) {
                    sc.reached.insert(n);
                }
                if sw.transitive {
                    sc.frontier.push((n, depth + 1));
                }
            }
        }
    }
    // What ended, then what started, each in ascending order of task.
    let (old, new) = (&deps.boosted.0, &sc.reached.0);
    let mut ended = 0;
    for &t in old.iter().filter(|t| new.binary_search(t).is_err()) {
        g.set_boost(t, false);
        ended += 1;
    }
    let mut started = 0;
    for &t in new.iter().filter(|t| old.binary_search(t).is_err()) {
        g.set_boost(t, true);
        started += 1;
    }
    std::mem::swap(&mut deps.boosted, &mut sc.reached);
    for &s in &sc.ios {
        g.promote_io(s);
    }
    deps.scratch = sc;
    (started, ended)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    /// A toy graph: tasks with a class and an edge.
    #[derive(Default)]
    struct Toy {
        critical: BTreeSet<u32>,
        edges: BTreeMap<u32, Dep>,
        boosted: BTreeSet<u32>,
        promoted: BTreeSet<u32>,
    }

    impl Graph for Toy {
        fn edge(&self, t: u32) -> Option<Dep> {
            self.edges.get(&t).copied()
        }
        fn critical_by_itself(&self, t: u32) -> bool {
            self.critical.contains(&t)
        }
        fn set_boost(&mut self, t: u32, on: bool) {
            if on {
                assert!(self.boosted.insert(t), "boosted twice");
            } else {
                assert!(self.boosted.remove(&t), "unboosted while not boosted");
            }
        }
        fn promote_io(&mut self, s: u32) {
            self.promoted.insert(s);
        }
    }

    fn block(d: &mut Deps, g: &mut Toy, t: u32, e: Dep) {
        g.edges.insert(t, e);
        d.blocked.insert(t);
    }

    #[test]
    fn each_level_follows_only_its_own_edges() {
        // 0 (critical) waits on a user-level lock held by 1; 1 waits on a stack-level
        // condition whose helper is 2; 2 waits on I/O 7 (stack level); 3 (critical)
        // waits on a stack-level lock held by 4. Boosted and promoted with each level.
        let run = |stack, user| {
            let at = |stack| LockState {
                stack,
                ..LockState::default()
            };
            let mut d = Deps {
                locks: vec![at(false), at(true)],
                conds: vec![CondState {
                    stack: true,
                    ..CondState::default()
                }],
                ..Deps::default()
            };
            d.locks[0].owner = Some(1);
            d.locks[1].owner = Some(4);
            d.conds[0].fixed_helpers.push(2);
            let mut g = Toy::default();
            g.critical.extend([0, 3]);
            block(&mut d, &mut g, 0, Dep::Lock(0));
            block(&mut d, &mut g, 1, Dep::Cond(0));
            block(&mut d, &mut g, 2, Dep::Io(7));
            block(&mut d, &mut g, 3, Dep::Lock(1));
            let sw = Inherit {
                stack,
                user,
                ..Inherit::ON
            };
            refresh(&mut d, &mut g, sw, 0);
            (g.boosted, g.promoted)
        };
        // Both levels: the whole chain, and the stack-level lock's holder.
        assert_eq!(
            run(true, true),
            (BTreeSet::from([1, 2, 4]), BTreeSet::from([7]))
        );
        // User level only: the application's lock, not the stack's condition or lock.
        assert_eq!(run(false, true), (BTreeSet::from([1]), BTreeSet::new()));
        // Stack level only: 0's user-level lock is not followed; 3's stack lock is.
        assert_eq!(run(true, false), (BTreeSet::from([4]), BTreeSet::new()));
    }

    #[test]
    fn a_chain_of_three_is_boosted_and_undone() {
        // 0 (critical) waits on lock 0 held by 1; 1 waits on lock 1 held by 2; 2 waits
        // on I/O 7.
        let mut d = Deps {
            locks: vec![LockState::default(), LockState::default()],
            ..Deps::default()
        };
        d.locks[0].owner = Some(1);
        d.locks[1].owner = Some(2);
        let mut g = Toy::default();
        g.critical.insert(0);
        block(&mut d, &mut g, 0, Dep::Lock(0));
        block(&mut d, &mut g, 1, Dep::Lock(1));
        block(&mut d, &mut g, 2, Dep::Io(7));
        assert_eq!(refresh(&mut d, &mut g, Inherit::ON, 0), (2, 0));
        assert_eq!(g.boosted, BTreeSet::from([1, 2]));
        assert!(g.promoted.contains(&7));
        // Not transitive: one step only.
        let mut g2 = Toy {
            critical: g.critical.clone(),
            edges: g.edges.clone(),
            ..Toy::default()
        };
        let mut d2 = Deps {
            locks: std::mem::take(&mut d.locks),
            blocked: d.blocked.clone(),
            ..Deps::default()
        };
        refresh(
            &mut d2,
            &mut g2,
            Inherit {
                transitive: false,
                ..Inherit::ON
            },
            0,
        );
        assert_eq!(g2.boosted, BTreeSet::from([1]));
        assert!(g2.promoted.is_empty());
        d.locks = std::mem::take(&mut d2.locks);
        // The critical task gets its lock: everything is undone.
        d.blocked.remove(&0);
        g.edges.remove(&0);
        assert_eq!(refresh(&mut d, &mut g, Inherit::ON, 0), (0, 2));
        assert!(g.boosted.is_empty());
    }

    #[test]
    fn a_task_paused_at_the_cache_is_resolved_only_at_the_end_of_a_chain() {
        // 0 (critical) waits on lock 0 held by 1, which pauses at its dirty limit; 2
        // (critical) pauses too, but it is a root: nothing to resolve.
        let mut d = Deps {
            locks: vec![LockState::default()],
            ..Deps::default()
        };
        d.locks[0].owner = Some(1);
        let mut g = Toy::default();
        g.critical.extend([0, 2]);
        block(&mut d, &mut g, 0, Dep::Lock(0));
        block(&mut d, &mut g, 1, Dep::Throttle);
        block(&mut d, &mut g, 2, Dep::Throttle);
        let mut sw = Inherit::ON;
        refresh(&mut d, &mut g, sw, 0);
        assert_eq!(g.boosted, BTreeSet::from([1]));
        assert_eq!(d.resolved, vec![1]);
        // One step only: 1 is boosted, its pause is not resolved (RCP §4.4 is the
        // transitive part).
        d.resolved.clear();
        sw.transitive = false;
        refresh(&mut d, &mut g, sw, 0);
        assert!(d.resolved.is_empty());
    }

    #[test]
    fn a_deadlock_cycle_ends_the_walk() {
        let mut d = Deps {
            locks: vec![LockState::default(), LockState::default()],
            ..Deps::default()
        };
        d.locks[0].owner = Some(1);
        d.locks[1].owner = Some(0);
        let mut g = Toy::default();
        g.critical.insert(0);
        block(&mut d, &mut g, 0, Dep::Lock(0));
        block(&mut d, &mut g, 1, Dep::Lock(1));
        refresh(&mut d, &mut g, Inherit::ON, 0);
        assert_eq!(g.boosted, BTreeSet::from([1]));
    }

    #[test]
    fn condvar_helpers_expire_after_the_window() {
        let mut d = Deps {
            helper_window_ns: 100,
            ..Deps::default()
        };
        d.conds = vec![CondState::default()];
        d.conds[0].helpers.push((5, 0));
        let mut g = Toy::default();
        g.critical.insert(0);
        block(&mut d, &mut g, 0, Dep::Cond(0));
        let on = Inherit::ON;
        refresh(&mut d, &mut g, on, 50);
        assert_eq!(g.boosted, BTreeSet::from([5]));
        refresh(&mut d, &mut g, on, 500);
        assert!(
            g.boosted.is_empty(),
            "a helper silent past the window is forgotten"
        );
    }
}
