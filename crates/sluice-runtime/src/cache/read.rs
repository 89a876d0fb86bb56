//! Buffered reads: the vanilla read path against AIOS's (Lee et al., ATC '19 §2.2,
//! §3.1–3.2, Fig. 4), written once; the two differ in where the simulated host is
//! charged the read's page work.
//!
//! A read walks its pages: a cached page is copied out; a run of consecutive missing
//! pages (at most [`MAX_RUN`], within the read) is read from the device in **one**
//! request, as Linux's `read` issues one bio for the missing range (no readahead).
//! Per run of `n` pages, with the cost table's entries:
//!
//! | | vanilla (Fig. 4(a)) | AIOS (Fig. 4(b)) |
//! |---|---|---|
//! | before the request | `n × (page_ns + dma_map_ns)`: allocate, index, map | — |
//! | submission | `submit_ns` (bio, block layer, driver) | `lean_submit_ns` (LBIO) |
//! | while the device works | — | `n × (page_ns + dma_map_ns)`: page pool refill, lazy indexing |
//! | after the completion | `n × dma_map_ns`: unmap | — (lazy DMA unmap, when idle) |
//!
//! Both index a page when its read completes (lazy indexing: a second reader of a page
//! whose read is in flight issues its own, and the later copy is abandoned), so the
//! cache behaves the same; vanilla Linux would index first and make the second reader
//! wait on the locked page — a difference only when two tasks miss the same page at
//! once, which this path does not model.

use std::io;

use sluice_cache::{FrameId, PageCache, PageKey, ReadDone, PAGE};
use sluice_core::Op;

use super::{no_cache, page_key, Cache};
use crate::buffer::DmaBuffer;
use crate::config::ReadPath;
use crate::ctx::IoOptions;
use crate::exec::with;
use crate::io::File;
use crate::task::charge;

/// Most pages one read request carries (128 KiB).
pub(crate) const MAX_RUN: u64 = 32;

impl File {
    /// Read `len` bytes at `offset` (multiples of 4 KiB) from the device in one request,
    /// as the buffered read path reads pages it does not hold: the pages' work —
    /// allocation, indexing, DMA mapping and unmapping — is charged where the stack's
    /// [`ReadPath`] puts it (see the module documentation; simulation only). The page
    /// cache's misses go through here, and so can a layer above the runtime that keeps
    /// its own cache of file blocks (a file store), so its reads cost what the page
    /// cache's do. Returns the request's result and the buffer read into.
    pub async fn read_pages(&self, offset: u64, len: usize) -> (io::Result<usize>, DmaBuffer) {
        let n = (len as u64).div_ceil(PAGE);
        let path = with(|inner, _| inner.cfg.read_path);
        let prep = move |c: &crate::CostTable| n * (c.page_ns + c.dma_map_ns);
        let lean = path == ReadPath::Aios;
        if !lean {
            charge(prep).await;
        }
        let opts = IoOptions {
            lean,
            ..IoOptions::new()
        };
        let h = self.submit(Op::Read, DmaBuffer::unpooled(len), offset, opts);
        if lean {
            // Page pool refill and indexing while the device works.
            charge(prep).await;
        }
        let (r, buf) = h.await;
        if !lean {
            charge(move |c| n * c.dma_map_ns).await;
        }
        (r, buf)
    }

    /// Read `out.len()` bytes at `offset` through the page cache; returns the bytes
    /// read (short at the end of the file). Missing pages are read from the device
    /// with the task's class, a run of them in one request; a page enters the cache's
    /// index when its read completes (AIOS lazy indexing). The stack's
    /// [`ReadPath`](crate::ReadPath) places the read path's CPU in simulation.
    pub async fn read_buffered(&self, offset: u64, out: &mut [u8]) -> io::Result<usize> {
        let Some(cache) = with(|inner, _| inner.io.cache.clone()) else {
            return Err(no_cache());
        };
        self.check_open()?;
        let n = self.len().saturating_sub(offset).min(out.len() as u64) as usize;
        let mut done = 0;
        while done < n {
            let (key, off) = page_key(self, offset + done as u64);
            let hit = {
                let mut pc = cache.pc();
                let len = (PAGE as usize - off).min(n - done);
                pc.lookup(key)
                    .map(|f| pc.read(f, off, &mut out[done..done + len]))
                    .map(|_| len)
            };
            if let Some(len) = hit {
                done += len;
                continue;
            }
            // A run of missing pages from `key`, up to the read's last page.
            let last = (offset + n as u64 - 1) / PAGE;
            let pages = {
                let mut pc = cache.pc();
                let mut k = 1;
                while k < MAX_RUN && key.index + k <= last {
                    let next = PageKey {
                        file: key.file,
                        index: key.index + k,
                    };
                    // A miss is counted as the page-by-page walk would.
                    if pc.contains(next) || pc.lookup(next).is_some() {
                        break;
                    }
                    k += 1;
                }
                k
            };
            // Copy what the read wants from the pages indexed (fewer than asked when a
            // page went stale or room ran out: the walk looks the rest up again), under
            // the same hold of the state machine as their indexing (another core may
            // evict them after).
            self.read_run(&cache, key, pages, |pc, f| {
                if done == n {
                    return;
                }
                let off = ((offset + done as u64) % PAGE) as usize;
                let len = (PAGE as usize - off).min(n - done);
                pc.read(f, off, &mut out[done..done + len]);
                done += len;
            })
            .await?;
        }
        Ok(n)
    }

    /// Read pages `first..first + pages` from the device in one request and index
    /// them; `each` is given the frames holding them, from `first`, while the state
    /// machine is held — fewer when room ran out (at least the first, after waiting for
    /// writeback if needed), up to the first page whose data went stale (a write
    /// changed it while the read was in flight). A page indexed meanwhile by another
    /// read or a write is given as indexed.
    pub(super) async fn read_run(
        &self,
        cache: &Cache,
        first: PageKey,
        pages: u64,
        mut each: impl FnMut(&PageCache<DmaBuffer>, FrameId),
    ) -> io::Result<()> {
        // Room for each page; past the first, stop where there is none.
        let mut n = 0;
        while n < pages {
            let key = PageKey {
                file: first.file,
                index: first.index + n,
            };
            if cache.pc().begin_read(key) {
                n += 1;
            } else if n == 0 {
                // Every page is dirty or under writeback: wait for the flusher.
                cache.wait_room().await?;
            } else {
                break;
            }
        }
        let (r, buf) = self
            .read_pages(first.index * PAGE, (n * PAGE) as usize)
            .await;
        let keys = (0..n).map(|i| PageKey {
            file: first.file,
            index: first.index + i,
        });
        let mut pc = cache.pc();
        if let Err(e) = r {
            keys.for_each(|k| pc.fail_read(k));
            return Err(e);
        }
        // Index each page from its part of the buffer (every page, so each frame's
        // reservation is taken); the caller copies up to the first stale one.
        let mut frames = Vec::with_capacity(n as usize);
        let mut stale = false;
        for (i, key) in keys.enumerate() {
            let at = i * PAGE as usize;
            let page = DmaBuffer::from_slice(&buf[at..at + PAGE as usize]);
            match pc.insert_read(key, page) {
                ReadDone::Indexed(f) | ReadDone::Abandoned(f, _) if !stale => frames.push(f),
                ReadDone::Indexed(_) | ReadDone::Abandoned(..) => {}
                ReadDone::Stale(_) => stale = true,
            }
        }
        for f in frames {
            each(&pc, f);
        }
        Ok(())
    }
}
