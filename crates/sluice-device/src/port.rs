//! [`SimPort`]: the simulated NVMe SSD as the block layer's device port — beside the
//! device, for every client that drives it (the simulator's fio job runner and the
//! application runtime's simulated backend).

use sluice_block::DevicePort;
use sluice_core::policy::Dispatch;
use sluice_core::{Nanos, QueueClass};

use crate::{Arbitration, ArbitrationKind, Command, NvmeSsd};

/// The simulated device as the block layer's port: piece `tag` goes to the submission
/// queue of (its hardware queue's core, its queue class). Used by the simulator's fio
/// job runner and by the application runtime's simulated backend.
#[derive(Debug)]
pub struct SimPort {
    /// The device.
    pub device: NvmeSsd,
    cores: u16,
    max_inflight: u32,
}

impl SimPort {
    /// A port onto `device`, whose queue pairs serve `cores` host cores.
    pub fn new(device: NvmeSsd) -> SimPort {
        let cores = device.cores();
        let sq_total: u64 = (0..cores)
            .flat_map(|c| QueueClass::ALL.map(|q| (c, q)))
            .map(|(c, q)| device.sq_free(device.queue_id(c, q)) as u64)
            .sum();
        SimPort {
            device,
            cores,
            max_inflight: sq_total.min(u32::MAX as u64) as u32,
        }
    }

    #[inline]
    fn qid(&self, d: &Dispatch) -> u16 {
        let hwq = d.req.hwq;
        // Hardware queues are the simulated cores (< cores) but for clients that number
        // them otherwise; spare the division when they are.
        let core = if hwq < self.cores {
            hwq
        } else {
            hwq % self.cores
        };
        self.device.queue_id(core, d.queue)
    }
}

impl DevicePort for SimPort {
    fn max_inflight(&self) -> u32 {
        self.max_inflight
    }

    #[inline]
    fn try_submit(&mut self, now_ns: Nanos, tag: u32, d: &Dispatch) -> bool {
        let qid = self.qid(d);
        if self.device.sq_free(qid) == 0 {
            return false;
        }
        let cmd = Command {
            tag,
            op: d.req.op,
            offset: d.req.offset,
            len: d.req.len,
            fua: d.req.fua,
            placement: d.req.placement,
        };
        self.device
            .submit(now_ns, qid, cmd)
            .expect("checked sq_free before submitting");
        true
    }

    /// Reprogram the device's WRR weights (the NVMe Set Features "Arbitration"
    /// command). A round-robin device ignores queue classes, so it is left alone.
    fn set_wrr_weights(&mut self, [h, m, l]: [u32; 3]) {
        let arb = self.device.profile().arbitration;
        if arb.kind == ArbitrationKind::Wrr {
            // Weights outside 1..=256 are a policy bug; the device keeps its settings.
            let res = self
                .device
                .set_arbitration(Arbitration::wrr(h, m, l, arb.burst));
            debug_assert!(res.is_ok(), "policy asked for bad WRR weights {h},{m},{l}");
        }
    }
}
