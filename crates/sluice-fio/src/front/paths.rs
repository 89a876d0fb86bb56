//! The paths of a job's I/O through the front: reads (with lazy indexing), writes
//! (stable pages, dirty limits, read-modify-write), fsync, and writeback runs.

use sluice_block::{Meter, NewRequest};
use sluice_core::{FlowId, IoClass, Nanos, Op};

use sluice_cache::throttle::Verdict;

use super::{page_part, Alloc, Blocked, Cx, Dev, Front, FrontOp, IoBuf, Kind};
use crate::Owner;
use sluice_cache::{FrameId, PageData, PageKey, PageRange, ReadDone, WriteCheck, PAGE};

impl<D: IoBuf, A: Alloc> Front<D, A> {
    /// Copy the part of job I/O `i` that page `index` (in frame `f`) holds.
    fn copy_out(&mut self, i: u32, index: u64, f: FrameId) {
        let p = self.pending[i as usize]
            .as_mut()
            .expect("a pending job I/O");
        let (lo, hi) = page_part(p.io.offset, p.io.len, index);
        if let Some(out) = p.io.data.bytes() {
            let at = (lo - p.io.offset) as usize;
            self.pc.read(
                f,
                (lo - index * PAGE) as usize,
                &mut out[at..at + (hi - lo) as usize],
            );
        }
    }

    /// A read: copy what is cached, read what is not (from `next_page` on, and the
    /// stale pages to redo).
    pub(super) fn try_read<M: Meter>(&mut self, cx: &mut Cx<'_, M>, i: u32) -> Option<Blocked> {
        let p = self.p(i);
        let (file, class, flow) = (p.io.file, p.io.class, p.io.flow);
        let last = PageRange::bytes(file, p.io.offset, p.io.len as u64).last;
        let mut blocked = None;
        let redo = std::mem::take(&mut p.redo);
        for (k, &index) in redo.iter().enumerate() {
            let key = PageKey { file, index };
            match self.pc.lookup(key) {
                Some(f) => self.copy_out(i, index, f),
                None if self.pc.begin_read(key) => {
                    self.issue_read(cx, i, file, index, 1, class, flow);
                }
                None => {
                    self.p(i).redo.extend_from_slice(&redo[k..]);
                    blocked = Some(Blocked::Room);
                    break;
                }
            }
        }
        let mut run: Option<(u64, u32)> = None;
        while blocked.is_none() && self.p(i).next_page <= last {
            let index = self.p(i).next_page;
            let key = PageKey { file, index };
            if let Some(f) = self.pc.lookup(key) {
                if let Some((first, n)) = run.take() {
                    self.issue_read(cx, i, file, first, n, class, flow);
                }
                self.copy_out(i, index, f);
            } else {
                if !self.pc.begin_read(key) {
                    blocked = Some(Blocked::Room);
                    break;
                }
                run = match run {
                    Some((first, n)) if n < self.cfg.run_pages => Some((first, n + 1)),
                    Some((first, n)) => {
                        self.issue_read(cx, i, file, first, n, class, flow);
                        Some((index, 1))
                    }
                    None => Some((index, 1)),
                };
            }
            self.p(i).next_page = index + 1;
        }
        if let Some((first, n)) = run {
            self.issue_read(cx, i, file, first, n, class, flow);
        }
        // A job I/O waits in one place: on its own reads while any is in flight (their
        // completion tries it again), else for room.
        if self.p(i).reads_left > 0 {
            return Some(Blocked::Reads);
        }
        blocked
    }

    /// Send a device read of pages `first..first + n` of `file` (already begun in the
    /// cache) for job I/O `waiter`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn issue_read<M: Meter>(
        &mut self,
        cx: &mut Cx<'_, M>,
        waiter: u32,
        file: u32,
        first: u64,
        n: u32,
        class: IoClass,
        flow: FlowId,
    ) {
        self.p(waiter).reads_left += 1;
        self.stats.device_reads += 1;
        let buf = self.alloc.alloc(n as usize * PAGE as usize);
        let r = NewRequest {
            flow,
            op: Op::Read,
            offset: self.files[file as usize].base + first * PAGE,
            len: n * PAGE as u32,
            class,
            hwq: self.queue_of(file),
            fua: false,
            placement: 0,
            atomic: false,
        };
        self.send(cx, r, Kind::Read { waiter }, file, first, n, Some(buf));
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn send<M: Meter>(
        &mut self,
        cx: &mut Cx<'_, M>,
        r: NewRequest,
        kind: Kind,
        file: u32,
        first: u64,
        n: u32,
        buf: Option<A::Buf>,
    ) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        let id = cx.block.submit(cx.now, r, Owner::Front(seq).token());
        self.devs.insert(
            seq,
            Dev {
                kind,
                file,
                first,
                n,
                buf,
                id,
            },
        );
        seq
    }

    /// A page read for job I/O `waiter` completed: index its pages (lazy indexing),
    /// then give the waiter its part, or let a waiting writer go on.
    pub(super) fn read_done<M: Meter>(
        &mut self,
        cx: &mut Cx<'_, M>,
        d: Dev<A::Buf>,
        waiter: u32,
        ok: bool,
        times: (Nanos, Nanos, Nanos),
    ) {
        let mut run = d.buf;
        let is_read = self.p(waiter).io.op == FrontOp::Read;
        for k in 0..d.n as u64 {
            let key = PageKey {
                file: d.file,
                index: d.first + k,
            };
            if !ok {
                self.pc.fail_read(key);
                continue;
            }
            let mut page = self.alloc.alloc(PAGE as usize);
            if let (Some(src), Some(dst)) = (run.as_mut().and_then(|b| b.bytes()), page.bytes_mut())
            {
                let at = (k * PAGE) as usize;
                dst.copy_from_slice(&src[at..at + PAGE as usize]);
            }
            match self.pc.insert_read(key, page) {
                ReadDone::Indexed(f) | ReadDone::Abandoned(f, _) => {
                    if is_read {
                        self.copy_out(waiter, key.index, f);
                    }
                }
                ReadDone::Stale(_) => {
                    if is_read {
                        self.p(waiter).redo.push(key.index);
                    }
                }
            }
        }
        run.take();
        let p = self.p(waiter);
        p.reads_left -= 1;
        p.ok &= ok;
        p.times = Some(times);
        if p.reads_left > 0 {
            return;
        }
        if !p.ok {
            self.complete(cx, waiter);
        } else {
            self.attempt(cx, waiter);
        }
        self.wake_blocked(cx);
    }

    /// A write: every page ready (none under writeback, partial pages cached), within
    /// the writer's dirty limit and with room for its new pages — then copy it in.
    pub(super) fn try_write<M: Meter>(&mut self, cx: &mut Cx<'_, M>, i: u32) -> Option<Blocked> {
        let p = self.p(i);
        let (file, off, len, class, flow, task) = (
            p.io.file,
            p.io.offset,
            p.io.len,
            p.io.class,
            p.io.flow,
            p.io.task,
        );
        let range = PageRange::bytes(file, off, len as u64);
        let (mut new_dirty, mut new_pages) = (0usize, 0usize);
        for index in range.first..=range.last {
            let key = PageKey { file, index };
            let (lo, hi) = page_part(off, len, index);
            match self
                .pc
                .check_write(key, (lo - index * PAGE) as usize, (hi - lo) as usize)
            {
                WriteCheck::WaitWriteback(tok) => return Some(Blocked::Writeback(tok)),
                WriteCheck::NeedRead => {
                    // Read-modify-write: read the page, then try again.
                    if !self.pc.begin_read(key) {
                        return Some(Blocked::Room);
                    }
                    self.issue_read(cx, i, file, index, 1, class, flow);
                    return Some(Blocked::Reads);
                }
                WriteCheck::Ready { new_dirty: nd } => {
                    new_dirty += usize::from(nd);
                    new_pages += usize::from(!self.pc.contains(key));
                }
            }
        }
        if new_dirty > 0 {
            // Linux's balance_dirty_pages, before the pages are dirtied: when the thread
            // has dirtied its nr_dirtied_pause pages, or its class's limit is reached.
            let dirty = self.pc.dirty_pages() + self.pc.writeback_pages();
            let w = self.dirtiers.entry(task).or_default();
            if w.must_balance() || !self.pc.may_dirty(class) {
                let cfg = *self.pc.config();
                if let Verdict::Pause { ns, at_limit } =
                    self.throttle.balance(w, &cfg, class, dirty, cx.now)
                {
                    return Some(Blocked::Pause { ns, at_limit });
                }
            }
        }
        // Room for the pages the write creates. A reservation may evict a clean page of
        // this very range (counted above as cached), which the write then creates too:
        // count again after each one, so every page the write installs has its
        // reservation (the cache's `reserved` would otherwise go below zero).
        let mut held = 0usize;
        let mut missing = new_pages;
        while held < missing {
            if !self.pc.reserve() {
                for _ in 0..held {
                    self.pc.unreserve();
                }
                return Some(Blocked::Room);
            }
            held += 1;
            missing = (range.first..=range.last)
                .filter(|&index| !self.pc.contains(PageKey { file, index }))
                .count();
        }
        let p = self.pending[i as usize]
            .as_mut()
            .expect("a pending job I/O");
        let data = p.io.data.bytes();
        for index in range.first..=range.last {
            let key = PageKey { file, index };
            let (lo, hi) = page_part(off, len, index);
            let fresh = (!self.pc.contains(key)).then(|| self.alloc.alloc(PAGE as usize));
            let src: &[u8] = match &data {
                Some(d) => &d[(lo - off) as usize..(hi - off) as usize],
                None => &[],
            };
            self.pc.write(key, (lo - index * PAGE) as usize, src, fresh);
        }
        if new_dirty > 0 {
            let w = self.dirtiers.entry(task).or_default();
            self.throttle.dirtied(w, new_dirty as u64);
        }
        None
    }

    /// An fsync: write back the file's dirty pages under the caller's class, wait for
    /// its writebacks, then flush the device.
    pub(super) fn try_fsync<M: Meter>(&mut self, cx: &mut Cx<'_, M>, i: u32) -> Option<Blocked> {
        let p = self.p(i);
        let (file, class, flow) = (p.io.file, p.io.class, p.io.flow);
        let range = PageRange::file(file);
        if !p.started || self.pc.dirty_in(range) {
            self.p(i).started = true;
            while self.write_back(cx, Some(range), class, flow) {}
        }
        let wbs = self.pc.writebacks_in(range);
        if let Some(&(_, tok)) = wbs.first() {
            if class == IoClass::Critical {
                let mut toks: Vec<u64> = wbs.iter().map(|w| w.1).collect();
                toks.dedup();
                for t in toks.into_iter().skip(1) {
                    self.promote(cx, t);
                }
            }
            return Some(Blocked::Writeback(tok));
        }
        self.stats.flushes += 1;
        let r = NewRequest {
            flow,
            op: Op::Flush,
            offset: 0,
            len: 0,
            class,
            hwq: self.queue_of(file),
            fua: false,
            placement: 0,
            atomic: false,
        };
        self.send(cx, r, Kind::Command { waiter: i }, file, 0, 0, None);
        Some(Blocked::Reads)
    }

    /// A trim (a punched hole), as Linux does it on a buffered file: wait for the
    /// writebacks of its pages, drop its whole pages from the cache (dirty ones too:
    /// their data is discarded) and zero its part of a dirty page it covers only in
    /// part (a clean one is dropped: a re-read finds the hole's zeros), make reads in
    /// flight stale; then the device deallocates the bytes, and the trim ends with it.
    pub(super) fn try_trim<M: Meter>(&mut self, cx: &mut Cx<'_, M>, i: u32) -> Option<Blocked> {
        let p = self.p(i);
        let (file, class, flow) = (p.io.file, p.io.class, p.io.flow);
        let (off, len) = (p.io.offset, p.io.len);
        let range = PageRange::bytes(file, off, len as u64);
        if let Some(&(_, tok)) = self.pc.writebacks_in(range).first() {
            return Some(Blocked::Writeback(tok));
        }
        for index in [range.first, range.last] {
            let (lo, hi) = page_part(off, len, index);
            let key = PageKey { file, index };
            if hi - lo < PAGE
                && self.pc.dirty_in(PageRange {
                    file,
                    first: index,
                    last: index,
                })
            {
                let zeros = vec![0u8; (hi - lo) as usize];
                self.pc
                    .write(key, (lo - index * PAGE) as usize, &zeros, None);
            }
        }
        let whole = PageRange {
            file,
            first: off.div_ceil(PAGE),
            last: (off + len as u64) / PAGE,
        };
        if whole.first < whole.last {
            self.pc.discard(PageRange {
                last: whole.last - 1,
                ..whole
            });
        }
        self.pc.forget_clean(range);
        let f = self.files[file as usize];
        let r = NewRequest {
            flow,
            op: Op::Trim,
            offset: f.base + off,
            len,
            class,
            hwq: self.queue_of(file),
            fua: false,
            placement: 0,
            atomic: false,
        };
        self.send(cx, r, Kind::Command { waiter: i }, file, 0, 0, None);
        Some(Blocked::Reads)
    }

    /// Start writing back one run of contiguous dirty pages (of `range`, if given):
    /// `false` when there was none.
    pub(super) fn write_back<M: Meter>(
        &mut self,
        cx: &mut Cx<'_, M>,
        range: Option<PageRange>,
        class: IoClass,
        flow: FlowId,
    ) -> bool {
        let Some((first, f0)) = self.pc.start_writeback(range) else {
            return false;
        };
        let mut frames = vec![f0];
        while (frames.len() as u32) < self.cfg.writeback_run_pages {
            let next = PageRange {
                file: first.file,
                first: first.index + frames.len() as u64,
                last: first.index + frames.len() as u64,
            };
            match self.pc.start_writeback(Some(next)) {
                Some((_, f)) => frames.push(f),
                None => break,
            }
        }
        let n = frames.len();
        let mut buf = self.alloc.alloc(n * PAGE as usize);
        if let Some(b) = buf.bytes_mut() {
            for (k, &f) in frames.iter().enumerate() {
                let at = k * PAGE as usize;
                self.pc.read(f, 0, &mut b[at..at + PAGE as usize]);
            }
        }
        let file = self.files[first.file as usize];
        let r = NewRequest {
            flow: if range.is_some() { flow } else { file.flow },
            op: Op::Write,
            offset: file.base + first.index * PAGE,
            len: (n as u64 * PAGE) as u32,
            class,
            hwq: self.queue_of(first.file),
            fua: false,
            placement: 0,
            atomic: false,
        };
        self.stats.device_writes += 1;
        let seq = self.send(
            cx,
            r,
            Kind::Writeback {
                background: range.is_none(),
            },
            first.file,
            first.index,
            n as u32,
            Some(buf),
        );
        for &f in &frames {
            self.pc.set_token(f, seq);
        }
        if range.is_none() {
            self.wb_inflight += n;
            self.wb_requests += 1;
        }
        true
    }
}
