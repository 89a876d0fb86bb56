//! The stack configurations the workload runs under (RCP Fig. 6's four stacks, Fig.
//! 10's ablation) and how one is built and run.

use sluice_runtime::{CacheConfig, Inherit, IoClass, Stack};

use super::{run, OltpConfig, OltpResult, MS};

/// One configuration of the stack under the workload (RCP Fig. 6 and Fig. 10).
#[derive(Clone, Debug, PartialEq)]
pub struct StackSetup {
    /// Its name in tables.
    pub name: &'static str,
    /// The block layer's policy.
    pub policy: &'static str,
    /// RCP's class-aware dirty limits (off: one limit for everybody, as Linux).
    pub class_limits: bool,
    /// RCP's inheritance, per kind.
    pub inherit: Inherit,
    /// The checkpointer's class.
    pub checkpointer: IoClass,
}

impl StackSetup {
    /// RCP Fig. 6's configurations: `none` (no scheduling, one dirty limit, no
    /// inheritance), `cfq-idle` (the checkpointer in the idle class at the block layer
    /// only, as CFQ-IDLE), `rcp-block` (RCP's block layer only) and `rcp` (the full
    /// stack: RCP's block layer, class-aware dirty limits, inheritance).
    pub fn fig6() -> Vec<StackSetup> {
        let base = |name, policy, checkpointer| StackSetup {
            name,
            policy,
            class_limits: false,
            inherit: Inherit::OFF,
            checkpointer,
        };
        vec![
            base("none", "none", IoClass::Normal),
            base("cfq-idle", "cfq", IoClass::Idle),
            base("rcp-block", "rcp", IoClass::Normal),
            StackSetup::full(),
        ]
    }

    /// The full RCP stack.
    pub fn full() -> StackSetup {
        StackSetup {
            name: "rcp",
            policy: "rcp",
            class_limits: true,
            inherit: Inherit::ON,
            checkpointer: IoClass::Normal,
        }
    }

    /// RCP Fig. 10's ablation: the full stack, then the full stack with one of the
    /// paper's five components off at a time (§7.5: "the caching layer, the block
    /// layer, the kernel-level dependency handling, the user-level dependency
    /// handling, and the transitive dependency handling") — the class-aware limits,
    /// the block layer (policy `none`), inheritance through the stack's own waits
    /// (its cache's lock and conditions, writeback and other outstanding I/O,
    /// admission pauses: [`Inherit::stack`]), through the application's locks and
    /// conditions ([`Inherit::user`]), and transitivity.
    pub fn fig10() -> Vec<StackSetup> {
        let full = StackSetup::full();
        vec![
            full.clone(),
            full.without("no cache limits", |s| s.class_limits = false),
            full.without("no block layer", |s| s.policy = "none"),
            full.without("no kernel-level", |s| s.inherit.stack = false),
            full.without("no user-level", |s| s.inherit.user = false),
            full.without("no transitivity", |s| s.inherit.transitive = false),
        ]
    }

    /// The same ablation split by kind of dependency instead of by level, at both
    /// levels: inheritance through locks, through condition variables (and joins),
    /// through outstanding I/O. A finer split than the paper's figure (its
    /// kernel-level component holds locks, conditions and I/O waits of the kernel);
    /// reported beside it.
    pub fn fig10_kinds() -> Vec<StackSetup> {
        let full = StackSetup::full();
        vec![
            full.without("no locks", |s| s.inherit.locks = false),
            full.without("no condvars", |s| s.inherit.condvars = false),
            full.without("no I/O", |s| s.inherit.io = false),
        ]
    }

    /// This setup named `name` with `f` applied.
    fn without(&self, name: &'static str, f: impl Fn(&mut StackSetup)) -> StackSetup {
        let mut s = StackSetup {
            name,
            ..self.clone()
        };
        f(&mut s);
        s
    }

    /// Build this stack for `cfg` on `device` (a simulated profile), or on real files
    /// under `real`, and run the workload.
    pub fn run(
        &self,
        cfg: &OltpConfig,
        device: &str,
        real: Option<&std::path::Path>,
    ) -> Result<OltpResult, String> {
        cfg.check()?;
        let (dirty_ratio_normal, dirty_ratio_critical) = cfg.dirty_ratios();
        let cache = CacheConfig {
            pages: cfg.cache_pages(),
            dirty_ratio_normal,
            dirty_ratio_critical,
            class_limits: self.class_limits,
            ..CacheConfig::default()
        };
        let mut b = Stack::builder()
            .device(device)
            .policy(self.policy)
            .inherit(self.inherit)
            .seed(cfg.seed)
            .cache(cache)
            .max_sim_ns(600_000 * MS);
        if let Some(dir) = real {
            b = b.directory(dir).cores(1);
        }
        let fs = cfg.fs_config(self.class_limits)?;
        let (cfg, ck) = (cfg.clone(), self.checkpointer);
        let out = b
            .build()
            .map_err(|e| e.to_string())?
            .run(move || run(cfg, ck, fs))
            .map_err(|e| e.to_string())?;
        let mut r = out.value;
        if let Some(rt) = &out.report.extra.runtime {
            (r.boosts, r.io_promotions) = (rt.boosts, rt.inherited_promotions);
            r.waits = rt.waits.clone();
        }
        Ok(r)
    }
}
