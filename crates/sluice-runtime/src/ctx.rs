//! What a task is, as the I/O path sees it: its context (flow, weight, class, activity)
//! and the options of one I/O.

pub use sluice_core::IoClass;

/// What an I/O is for, in RocksDB's sense (`Env::IOActivity`): every I/O carries one,
/// and the report gives latency statistics per (flow, activity).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Activity(pub &'static str);

impl Activity {
    /// A foreground point read.
    pub const GET: Activity = Activity("get");
    /// A foreground write.
    pub const PUT: Activity = Activity("put");
    /// A foreground range read.
    pub const SCAN: Activity = Activity("scan");
    /// A write-ahead-log append or its sync.
    pub const WAL: Activity = Activity("wal");
    /// A memtable flush.
    pub const FLUSH: Activity = Activity("flush");
    /// A compaction read or write.
    pub const COMPACTION: Activity = Activity("compaction");
    /// A checkpoint's writes.
    pub const CHECKPOINT: Activity = Activity("checkpoint");
    /// Page-cache writeback.
    pub const WRITEBACK: Activity = Activity("writeback");
    /// Anything else (the default).
    pub const OTHER: Activity = Activity("other");

    /// Its name.
    pub fn name(self) -> &'static str {
        self.0
    }
}

impl Default for Activity {
    fn default() -> Self {
        Activity::OTHER
    }
}

/// A task's context: built once with [`TaskCtx::new`] and its builder methods, carried
/// by every request the task issues (glommio's task-queue shares and latency class, as
/// one value).
///
/// ```
/// use sluice_runtime::{Activity, IoClass, TaskCtx};
/// let ctx = TaskCtx::new("compaction")
///     .flow("db")
///     .weight(2)
///     .class(IoClass::Idle)
///     .activity(Activity::COMPACTION);
/// assert_eq!(ctx.class_of(), IoClass::Idle);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskCtx {
    pub(crate) name: String,
    pub(crate) flow: Option<String>,
    pub(crate) weight: u32,
    pub(crate) class: IoClass,
    pub(crate) activity: Activity,
    pub(crate) core: Option<u16>,
}

impl TaskCtx {
    /// A normal-class task named `name`, in a flow of the same name, weight 1.
    pub fn new(name: impl Into<String>) -> TaskCtx {
        TaskCtx {
            name: name.into(),
            flow: None,
            weight: 1,
            class: IoClass::Normal,
            activity: Activity::OTHER,
            core: None,
        }
    }

    /// The flow (tenant) its I/O is charged to; tasks with the same flow share it.
    pub fn flow(mut self, flow: impl Into<String>) -> TaskCtx {
        self.flow = Some(flow.into());
        self
    }

    /// The flow's proportional-share weight (at least 1).
    pub fn weight(mut self, weight: u32) -> TaskCtx {
        self.weight = weight.max(1);
        self
    }

    /// Its I/O class: critical (latency matters), normal, or idle (background).
    pub fn class(mut self, class: IoClass) -> TaskCtx {
        self.class = class;
        self
    }

    /// Shorthand for `.class(IoClass::Critical)`.
    pub fn critical(self) -> TaskCtx {
        self.class(IoClass::Critical)
    }

    /// The activity of its I/O unless an I/O says otherwise.
    pub fn activity(mut self, activity: Activity) -> TaskCtx {
        self.activity = activity;
        self
    }

    /// Pin it to a core (default: cores are dealt round robin as tasks are spawned).
    pub fn core(mut self, core: u16) -> TaskCtx {
        self.core = Some(core);
        self
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The flow name (the task's name if none was given).
    pub fn flow_name(&self) -> &str {
        self.flow.as_deref().unwrap_or(&self.name)
    }

    /// Its class as built.
    pub fn class_of(&self) -> IoClass {
        self.class
    }
}

/// Options of one I/O, overriding the task's (RocksDB's `IOOptions`).
///
/// ```
/// use sluice_runtime::{Activity, IoClass, IoOptions};
/// let opts = IoOptions::new().class(IoClass::Critical).activity(Activity::WAL);
/// assert_eq!(opts.class, Some(IoClass::Critical));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoOptions {
    /// The class of this I/O (`None`: the task's effective class).
    pub class: Option<IoClass>,
    /// The activity of this I/O (`None`: the task's).
    pub activity: Option<Activity>,
    /// Force unit access for a write: it completes once durable, past the device's
    /// volatile write cache (NVMe FUA; `RWF_DSYNC` on a real file). Ignored for reads.
    pub fua: bool,
    /// An atomic (untorn) write: `RWF_ATOMIC` on a real file, all or nothing at a
    /// simulated crash (NVMe's atomic write unit). Its length must be a power of two
    /// within the device's atomic write unit and its offset a multiple of it, else the
    /// write fails with `InvalidInput` (the simulated device's
    /// `controller.atomic_write_bytes`; on a real file the kernel decides, `EINVAL` or
    /// `EOPNOTSUPP`). Ignored for reads.
    pub atomic: bool,
    /// Submitted by AIOS's read path: the simulated host charges `lean_submit_ns` for it
    /// instead of `submit_ns` (the request still goes through the stack's block layer).
    pub(crate) lean: bool,
    /// A writeback of the page cache: it may go to a file closed with dirty pages.
    pub(crate) writeback: bool,
}

impl IoOptions {
    /// No override.
    pub fn new() -> IoOptions {
        IoOptions::default()
    }

    /// This I/O's class.
    pub fn class(mut self, class: IoClass) -> IoOptions {
        self.class = Some(class);
        self
    }

    /// This I/O's activity.
    pub fn activity(mut self, activity: Activity) -> IoOptions {
        self.activity = Some(activity);
        self
    }

    /// Force unit access (a write is durable when it completes).
    pub fn fua(mut self, fua: bool) -> IoOptions {
        self.fua = fua;
        self
    }

    /// An atomic write (see [`IoOptions::atomic`]).
    pub fn atomic(mut self, atomic: bool) -> IoOptions {
        self.atomic = atomic;
        self
    }
}
