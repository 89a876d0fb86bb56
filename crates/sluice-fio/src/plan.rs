//! One plan of a run's address space: which file each job thread uses and where each
//! file sits in the address space the block layer and the policies see.
//!
//! Rules (fio's, and the same in every world):
//! * thread `t` of a job without `filename=` has a file of its own; jobs that name the
//!   same `filename` share one file (the world says what "the same" is: the simulator
//!   compares the names, the engine the resolved paths — the plan's key);
//! * a file holds the largest `offset + size` of the threads that use it;
//! * files are laid side by side in order of first use, each starting on a MiB
//!   boundary: `base(f+1) = ⌈(base(f) + size(f)) / 1 MiB⌉ · 1 MiB`.

use std::collections::BTreeMap;

use sluice_workload::JobSpec;

/// Files start on this boundary in the address space.
pub const FILE_ALIGN: u64 = 1 << 20;

/// One job thread of the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlannedThread {
    /// Its job (index into the job list).
    pub job: u32,
    /// Its index within the job (`0..numjobs`).
    pub index: u32,
    /// Its index over all threads (jobs in order, then `numjobs` threads each).
    pub global: u32,
    /// Its file (index into [`AddressPlan::files`]).
    pub file: u32,
}

/// One file of the plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedFile<K> {
    /// What identifies it (a name, a path).
    pub key: K,
    /// Where its byte 0 sits in the address space.
    pub base: u64,
    /// Bytes its users need: the largest `offset + size` of its threads.
    pub size: u64,
    /// Whether some job that uses it writes (or trims: a trim changes the data too).
    pub writes: bool,
    /// The jobs that use it, in order, each once.
    pub users: Vec<usize>,
    /// The first thread that uses it (global index).
    pub first_thread: u32,
}

/// The plan: files in order of first use, and every thread's file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddressPlan<K> {
    /// The files, in order of first use.
    pub files: Vec<PlannedFile<K>>,
    /// Every thread, jobs in order then `numjobs` threads each.
    pub threads: Vec<PlannedThread>,
}

impl<K: Ord + Clone> AddressPlan<K> {
    /// Plan `jobs`; `key(job, thread)` names the file thread `thread` of job `job`
    /// uses (threads with equal keys share the file).
    pub fn new(jobs: &[JobSpec], mut key: impl FnMut(usize, u32) -> K) -> AddressPlan<K> {
        let mut index: BTreeMap<K, u32> = BTreeMap::new();
        let mut files: Vec<PlannedFile<K>> = Vec::new();
        let mut threads = Vec::new();
        for (j, job) in jobs.iter().enumerate() {
            for t in 0..job.numjobs {
                let global = threads.len() as u32;
                let k = key(j, t);
                let f = *index.entry(k.clone()).or_insert_with(|| {
                    files.push(PlannedFile {
                        key: k,
                        base: 0,
                        size: 0,
                        writes: false,
                        users: Vec::new(),
                        first_thread: global,
                    });
                    files.len() as u32 - 1
                });
                let file = &mut files[f as usize];
                file.size = file.size.max(job.thread_offset(t).saturating_add(job.size));
                file.writes |= job.rw.writes() || job.rw.trims();
                if file.users.last() != Some(&j) {
                    file.users.push(j);
                }
                threads.push(PlannedThread {
                    job: j as u32,
                    index: t,
                    global,
                    file: f,
                });
            }
        }
        let mut plan = AddressPlan { files, threads };
        plan.lay_out();
        plan
    }

    /// Lay the files side by side from their sizes (again, after a world rounded the
    /// sizes up, e.g. to a logical block size).
    pub fn lay_out(&mut self) {
        let mut next = 0u64;
        for f in &mut self.files {
            f.base = next;
            next = next.saturating_add(f.size).div_ceil(FILE_ALIGN) * FILE_ALIGN;
        }
    }

    /// Where thread `global`'s file starts in the address space.
    pub fn base_of(&self, global: u32) -> u64 {
        self.files[self.threads[global as usize].file as usize].base
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_workload::{parse_str, ParseOptions};

    fn jobs(text: &str) -> Vec<JobSpec> {
        parse_str(text, "test", &ParseOptions::default())
            .expect("a valid job file")
            .jobs
    }

    #[test]
    fn own_files_side_by_side_on_mib_boundaries() {
        let j = jobs("[a]\nrw=read\nsize=1m\nnumjobs=2\n[b]\nrw=write\nsize=1536k\noffset=4k\n");
        let p = AddressPlan::new(&j, |j, t| (j, t));
        assert_eq!(p.files.len(), 3);
        let bases: Vec<u64> = p.files.iter().map(|f| f.base).collect();
        assert_eq!(bases, vec![0, 1 << 20, 2 << 20]);
        assert_eq!(p.files[2].size, (1536 << 10) + 4096);
        assert!(p.files[2].writes && !p.files[0].writes);
        assert_eq!(p.base_of(2), 2 << 20);
    }

    #[test]
    fn a_shared_file_holds_its_largest_user() {
        // The first user needs 1 MiB, the second 3 MiB: the file after them starts
        // past 3 MiB, not past 1 MiB.
        let j = jobs(
            "[a]\nrw=read\nsize=1m\nfilename=f\n[b]\nrw=write\nsize=3m\nfilename=f\n[c]\nrw=read\nsize=1m\n",
        );
        let p = AddressPlan::new(&j, |k, t| match &j[k].filename {
            Some(n) => n.clone(),
            None => format!("\u{0}{k}.{t}"),
        });
        assert_eq!(p.files.len(), 2);
        assert_eq!(p.files[0].size, 3 << 20);
        assert_eq!(p.files[0].users, vec![0, 1]);
        assert!(p.files[0].writes);
        assert_eq!(p.files[1].base, 3 << 20);
        assert_eq!(p.threads[1].file, 0);
        assert_eq!(p.threads[2].file, 1);
    }
}
