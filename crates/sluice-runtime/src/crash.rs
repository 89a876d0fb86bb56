//! Simulated power loss: run until an instant, cut the power, and keep what the
//! device's durability contract (FLUSH, FUA, volatile write cache; see
//! `sluice_device::durability`) and the seed leave. A new stack started from the image
//! ([`crate::StackBuilder::image`]) recovers from it.

use std::future::Future;

use sluice_core::Nanos;
use sluice_device::{CrashReport, CrashSpec};
use sluice_metrics::RunReport;

use crate::exec::RunError;
use crate::io::DiskImage;
use crate::{DeviceChoice, RuntimeError, Stack, TaskCtx};

/// What [`Stack::run_until_crash`] returns.
#[derive(Debug)]
pub struct CrashOutput<T> {
    /// The main task's result, if it finished before the crash.
    pub value: Option<T>,
    /// When the power went (simulated ns): the requested instant, or the end of the
    /// main task if it came first.
    pub at_ns: Nanos,
    /// The run's report up to the crash.
    pub report: RunReport,
    /// What the crash did to the writes that were not durable.
    pub crash: CrashReport,
    /// The files and contents left: start a new stack from it to recover.
    pub image: DiskImage,
}

impl Stack {
    /// Run `main` (context `main`) until simulated time `at_ns` and cut the power then
    /// (or when `main` ends, if earlier). Tasks still running are dropped; writes in
    /// flight and acknowledged writes not made durable by a FLUSH or FUA survive, are
    /// lost or are torn as `spec` draws. Simulated devices only.
    pub fn run_until_crash<F, Fut>(
        self,
        at_ns: Nanos,
        spec: CrashSpec,
        main: F,
    ) -> Result<CrashOutput<Fut::Output>, RuntimeError>
    where
        F: FnOnce() -> Fut,
        Fut: Future + 'static,
        Fut::Output: 'static,
    {
        if matches!(self.device, DeviceChoice::Directory(_)) {
            return Err(RuntimeError::Config(
                "run_until_crash needs a simulated device: a real disk cannot lose power on \
                 request"
                    .into(),
            ));
        }
        let (sh, main_id, slot) = self.start(TaskCtx::new("main"), main)?;
        let cut = at_ns.min(self.b.max_sim_ns);
        let finished = match sh.run(main_id, cut) {
            Ok(()) => true,
            Err(RunError::TimeCap(_)) => false,
            Err(e) => {
                sh.shutdown();
                return Err(e.into());
            }
        };
        let report = sh.report(&self);
        let (at_ns, (image, crash)) = {
            let mut inner = sh.lock();
            let at = if finished { inner.now } else { cut };
            (at, inner.io.crash(spec))
        };
        sh.shutdown();
        let value = slot.borrow_mut().take();
        Ok(CrashOutput {
            value,
            at_ns,
            report,
            crash,
            image,
        })
    }
}
