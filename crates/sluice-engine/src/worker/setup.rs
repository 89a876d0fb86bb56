//! Setting a worker up: its ring, registered files and buffers, request slots and job
//! threads.

#[allow(unused_imports)]
use super::*;

impl<'a> Worker<'a> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        plan: &WorkerPlan,
        specs: &'a [JobSpec],
        cfg: &WorkerCfg,
        entries: u32,
        sh: &'a Shared<'a>,
        dev: &'a Mutex<DevState>,
        bells: &'a [Doorbell],
    ) -> Result<Worker<'a>, EngineError> {
        let total_depth: u32 = plan
            .threads
            .iter()
            .map(|t| specs[t.job as usize].iodepth.max(1))
            .sum::<u32>()
            .max(1);
        let ring = new_ring(entries)?;
        ring.submitter()
            .register_files(&plan.fds)
            .map_err(|source| EngineError::Ring {
                entries,
                hint: "registering the job files with the ring failed; raise ulimit -n",
                source,
            })?;

        // One buffer per request slot, each as long as the largest block of the
        // worker's jobs, filled with random data for writes.
        let slot_len = plan
            .threads
            .iter()
            .map(|t| {
                let s = &specs[t.job as usize];
                s.bs.read.max_len().max(s.bs.write.max_len()) as usize
            })
            .max()
            .unwrap_or(BUF_ALIGN)
            .div_ceil(BUF_ALIGN)
            * BUF_ALIGN;
        let slots = total_depth as usize;
        let mut region = AlignedBuf::new(slots * slot_len);
        region.fill_random(0xB0FF_0000 ^ plan.index as u64);
        let region_ptr = region.as_mut_ptr();
        // SAFETY: the buffers live in `region`, which the worker owns and drops after
        // the ring (field order), so they outlive every registered use.
        let fixed_bufs = unsafe { sluice_uring::register_slots(&ring, &region, slot_len) }.is_ok();

        // The page cache's files (their bases), in its order.
        let front_files: Vec<u64> = dev
            .lock()
            .expect("device lock")
            .front
            .as_ref()
            .map_or(Vec::new(), |f| {
                f.front.files().iter().map(|f| f.base).collect()
            });
        let threads: Vec<Thread> = plan
            .threads
            .iter()
            .map(|t| Thread {
                global: t.global,
                job: t.job,
                file: t.file,
                file_base: t.base,
                device: t.device,
                front_file: specs[t.job as usize]
                    .buffered
                    .then(|| front_files.iter().position(|&b| b == t.base))
                    .flatten()
                    .map(|i| i as u32),
            })
            .collect();
        let setups: Vec<ThreadSetup> = plan
            .threads
            .iter()
            .map(|t| ThreadSetup {
                job: t.job,
                index: t.index,
                base: t.base,
                hwq: plan.index as u16,
            })
            .collect();
        let runner = Runner::new(specs, &cfg.job_flow, &setups, cfg.seed, Scope::Part, true);
        Ok(Worker {
            index: plan.index,
            sh,
            dev,
            bells,
            runner: Some(runner),
            ring,
            _region: region,
            region_ptr,
            slot_len,
            fixed_bufs,
            threads,
            cache_files: plan.cache_files.clone(),
            slot_thread: vec![0; slots],
            slot_offset: vec![0; slots],
            slot_check: vec![false; slots],
            slot_nospace: vec![None; slots],
            free_slots: (0..slots as u32).rev().collect(),
            new_reqs: Vec::with_capacity(slots),
            new_front: Vec::new(),
            front_done: Vec::new(),
            slot_io: vec![(Op::Read, 0, 0, IoClass::Normal); slots],
            cqes: Vec::with_capacity(2 * entries as usize),
            finished: Vec::with_capacity(2 * entries as usize),
            outgoing: Vec::with_capacity(entries as usize),
            to_wake: Vec::with_capacity(bells.len()),
            in_ring: 0,
            outstanding: 0,
            bell_armed: false,
            bell_buf: Box::new(0),
            submit_batch: cfg.submit_batch.max(1) as usize,
            now: 0,
            next_wake: NONE,
            next_job_end: NONE,
            block_timer: NONE,
            samples: Vec::with_capacity(SAMPLE_BATCH),
            last_flush: 0,
            next_counter_ns: 0,
            interval_ns: sh.interval_ns,
            interrupted: false,
            cur_group: 0,
            done_acc: vec![(0, 0, 0); specs.len()],
            res: WorkerResult {
                errors: vec![JobErrors::default(); specs.len()],
                verify: vec![VerifyCount::default(); specs.len()],
                fixed_buffers: fixed_bufs,
                ring_entries: entries,
                ..WorkerResult::default()
            },
        })
    }
}
