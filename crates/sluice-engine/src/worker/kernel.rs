//! The worker's side of the kernel: writing SQEs, `io_uring_enter`, reaping CQEs, and
//! describing a failed transfer.

#[allow(unused_imports)]
use super::*;

impl Worker<'_> {
    /// Write the SQEs of the pieces taken from the outbox, and re-arm the doorbell.
    pub(super) fn push_sqes(&mut self) {
        let mut sq = self.ring.submission();
        if !self.bell_armed {
            let e = sluice_uring::doorbell_read(self.bells[self.index].raw(), &mut self.bell_buf);
            // SAFETY: the buffer is the worker's, boxed, and outlives the ring's use of it
            // (the ring is dropped with the worker); one entry is reserved for it.
            unsafe { sq.push(&e) }.expect("an entry is reserved for the doorbell");
            self.bell_armed = true;
        }
        for o in &self.outgoing {
            let (fd, buf, file_off, fixed, device);
            match o.buf {
                OutBuf::Front { addr, base } => {
                    // The page cache's own I/O: every worker has its files open
                    // (`WorkerPlan::cache_files`); its buffer is the cache's (not
                    // registered).
                    let &(_, file, dev) = self
                        .cache_files
                        .iter()
                        .find(|f| f.0 == base)
                        .expect("every worker registers the cache's files");
                    // A FLUSH (the cache's fsync of the file) has no offset: it reaches
                    // here at offset 0, below any file but the first's base.
                    let off = if o.op == Op::Flush {
                        0
                    } else {
                        o.offset - base
                    };
                    (fd, file_off, buf, fixed) = (file, off, addr as *mut u8, None);
                    device = dev;
                }
                OutBuf::Slot(slot) => {
                    let th = &self.threads[self.slot_thread[slot as usize] as usize];
                    fd = th.file;
                    device = th.device;
                    file_off = o.offset - th.file_base;
                    // SAFETY: a piece lies inside its request, whose buffer is
                    // slot_len ≥ len.
                    buf = unsafe {
                        self.region_ptr.add(
                            slot as usize * self.slot_len
                                + (o.offset - self.slot_offset[slot as usize]) as usize,
                        )
                    };
                    fixed = self.fixed_bufs.then_some(slot as u16);
                }
            }
            let e = sluice_uring::sqe(&sluice_uring::Piece {
                block_device: device,
                ..piece(o, fd, buf, file_off, fixed)
            });
            // SAFETY: the buffer and the registered file stay valid until the CQE is
            // reaped; the ring has room: commands in all rings ≤ cap < entries.
            unsafe { sq.push(&e) }.expect("ring has room: in_ring ≤ cap < entries");
            self.in_ring += 1;
        }
        drop(sq);
        self.outgoing.clear();
    }

    /// Submit the SQEs written this turn and wait for a completion, the doorbell or a
    /// deadline.
    pub(super) fn enter(&mut self) -> Result<(), EngineError> {
        let deadline = self.next_wake.min(self.next_job_end).min(self.block_timer);
        self.res.enters += 1;
        let wait = if self.in_ring > 0 && deadline.saturating_sub(self.now) > SHORT_DEADLINE_NS {
            None
        } else {
            Some(deadline.saturating_sub(self.now).clamp(1_000, IDLE_POLL_NS))
        };
        sluice_uring::submit_and_wait(&self.ring, wait).map_err(|source| EngineError::RingFailed {
            worker: self.index,
            source,
        })
    }

    /// Handle every completion the ring holds, `submit_batch` at a time: each batch goes
    /// to the block layer under one lock, and the SQEs it frees go to the kernel at
    /// once (without waiting) while the rest of the batch is handled.
    pub(super) fn reap(&mut self) -> Result<(), EngineError> {
        self.cqes.clear();
        for c in self.ring.completion() {
            if c.user_data() == BELL {
                self.bell_armed = false;
            } else {
                self.cqes.push((c.user_data(), c.result()));
            }
        }
        let t_dev = self.clock();
        let n = self.cqes.len();
        let mut from = 0;
        while from < n {
            let to = (from + self.submit_batch).min(n);
            self.sync(Some((from, to, t_dev)))?;
            if to < n {
                self.submit_now()?;
            }
            from = to;
        }
        Ok(())
    }

    /// Hand the SQEs written so far to the kernel without waiting for a completion.
    pub(super) fn submit_now(&mut self) -> Result<(), EngineError> {
        // No system call when this turn wrote no SQE (a buffered job's I/O the page
        // cache completed at once needs none).
        if self.ring.submission().is_empty() {
            return Ok(());
        }
        self.res.enters += 1;
        sluice_uring::submit(&mut self.ring).map_err(|source| EngineError::RingFailed {
            worker: self.index,
            source,
        })
    }

    pub(super) fn note_error(&mut self, slot: u32, op: Op, len: u32, offset: u64, res: i32) {
        let th = &self.threads[self.slot_thread[slot as usize] as usize];
        let e = &mut self.res.errors[th.job as usize];
        e.count += 1;
        if e.first.is_none() {
            let what = if res < 0 {
                io::Error::from_raw_os_error(-res).to_string()
            } else {
                format!("short transfer, {res} of {len} bytes")
            };
            e.first = Some(format!(
                "{what} on {op} of {len} bytes at file offset {}",
                offset - th.file_base
            ));
        }
    }
}

// The doorbell's read carries the io_uring layer's `user_data`.
const _: () = assert!(BELL == sluice_uring::BELL);

/// The piece an SQE carries: its file (fixed index), offset in the file, the part of its
/// request's buffer it covers (the slot's registered buffer when `fixed`), FUA; the
/// SQE itself is the io_uring layer's one mapping ([`sluice_uring::sqe`]: FLUSH =
/// `fdatasync`, FUA = `RWF_DSYNC`), as in the runtime.
#[inline]
/// The io_uring layer's piece for `o`: `fixed` is the registered buffer's index, if any.
fn piece(
    o: &Outgoing,
    file: u32,
    buf: *mut u8,
    file_off: u64,
    fixed: Option<u16>,
) -> sluice_uring::Piece {
    sluice_uring::Piece {
        op: o.op,
        fua: o.fua,
        file,
        offset: file_off,
        buf,
        len: o.len,
        buf_index: fixed,
        tag: o.tag,
        block_device: false,
        atomic: o.atomic,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use io_uring::{opcode, types};
    use sluice_uring::{inspect, meaning, sqe};

    /// The engine's path from an outgoing piece to its SQE means what the io_uring
    /// layer decides for READ, WRITE, WRITE+FUA and FLUSH (the runtime's path is
    /// checked against the same decision in `sluice-runtime`'s `real.rs`).
    #[test]
    fn the_engines_sqes_mean_what_the_io_uring_layer_decides() {
        let dsync = libc::RWF_DSYNC as u32;
        let datasync = types::FsyncFlags::DATASYNC.bits();
        for (op, fua, code, flags) in [
            (Op::Read, false, opcode::ReadFixed::CODE, 0),
            (Op::Write, false, opcode::WriteFixed::CODE, 0),
            (Op::Write, true, opcode::WriteFixed::CODE, dsync),
            (Op::Flush, false, opcode::Fsync::CODE, datasync),
            (
                Op::Trim,
                false,
                opcode::Fallocate::CODE,
                sluice_uring::sqe::TRIM_FALLOCATE_MODE,
            ),
        ] {
            let o = Outgoing {
                tag: 9,
                buf: OutBuf::Slot(2),
                op,
                fua,
                atomic: false,
                offset: 4096,
                len: 512,
            };
            let v = inspect(&sqe(&piece(&o, 1, std::ptr::null_mut(), 4096, Some(2))));
            assert_eq!(
                v.meaning(),
                meaning(op, fua, false, true, false),
                "{op:?} fua {fua}"
            );
            assert_eq!(
                (v.opcode, v.meaning().op_flags),
                (code, flags),
                "{op:?} fua {fua}"
            );
            assert_eq!(v.user_data, 9);
            if op == Op::Trim {
                assert_eq!((v.addr, v.offset), (512, 4096));
            } else if op != Op::Flush {
                assert_eq!((v.buf_index, v.len, v.offset), (2, 512, 4096));
            }
            // The page cache's own I/O (not a registered buffer): the same flags.
            let v = inspect(&sqe(&piece(&o, 1, std::ptr::null_mut(), 4096, None)));
            assert_eq!(
                v.meaning(),
                meaning(op, fua, false, false, false),
                "{op:?} fua {fua}"
            );
            assert_eq!(v.meaning().op_flags, flags, "{op:?} fua {fua}");
        }
    }
}
