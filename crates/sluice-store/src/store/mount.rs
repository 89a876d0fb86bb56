//! Making a store (`mkfs`) and mounting one, with recovery.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use sluice_runtime::{sleep, spawn, Activity, Condvar, File, IoOptions, Mutex, TaskCtx};

use super::{CommitMode, Dev, State, Store, StoreError, StoreStats, Txn, COMMIT_INTERVAL_NS};
use crate::journal;
use crate::layout::{
    decode_dirent, dirent_intact, inode_intact, le32, Geometry, Inode, BLOCK, INODE_SIZE,
    MAX_FILE_BLOCKS, PER_INDIRECT,
};
use crate::recover;

impl Store {
    /// Lay out an empty store on `file` (which must be the store's own): `blocks`
    /// blocks with the default areas.
    pub async fn mkfs(file: &File, g: Geometry) -> Result<(), StoreError> {
        g.validate().map_err(StoreError::Corrupt)?;
        // A file that held something before (a store made again over an old one) has
        // its journal areas zeroed: the new journals start their ids and sequence
        // numbers at 1 again, and an old record would be replayed as the new one's (or
        // its claims and commit records taken as the new ones'). A new file reads as
        // zeros there already.
        let used = !file.is_empty();
        // Every block written once (on real files: no host allocation under a later
        // write, above all under the journal's FUA commit records).
        file.preallocate(g.blocks * BLOCK as u64).await?;
        let dev = Dev { file: *file };
        if used {
            let zeros = vec![0u8; BLOCK];
            let areas = (g.journal_start()..g.journal_start() + g.journal)
                .chain(g.fjournal_start()..g.fjournal_start() + g.fjournal);
            let blocks: Vec<(u64, Vec<u8>)> = areas.map(|b| (b, zeros.clone())).collect();
            dev.write_all(&blocks, IoOptions::new()).await?;
        }
        let mut blocks = vec![(0, g.encode())];
        blocks.push((
            g.journal_start(),
            journal::encode_jsuper(1, Default::default()),
        ));
        blocks.push((g.fjournal_start(), journal::encode_fsuper(1, 1)));
        let mut bitmap = vec![vec![0u8; BLOCK]; g.bitmap_blocks() as usize];
        for b in 0..g.data_start() {
            bitmap[(b / (BLOCK as u64 * 8)) as usize][(b / 8 % BLOCK as u64) as usize] |=
                1 << (b % 8);
        }
        for b in g.itable_start()..g.bitmap_start() {
            blocks.push((b, vec![0u8; BLOCK]));
        }
        for (i, bm) in bitmap.into_iter().enumerate() {
            blocks.push((g.bitmap_start() + i as u64, bm));
        }
        // The last block gives the file its length.
        blocks.push((g.blocks - 1, vec![0u8; BLOCK]));
        dev.write_all(&blocks, IoOptions::new()).await?;
        dev.flush().await?;
        Ok(())
    }

    /// Mount the store on `file`: recover (redo committed transactions, then the
    /// f-transactions above them), rebuild the bitmap from the inodes, free inodes
    /// without a name, and start the journal task.
    pub async fn mount(file: &File, mode: CommitMode) -> Result<Rc<Store>, StoreError> {
        let dev = Dev { file: *file };
        let Loaded { st, home } = Store::load(&dev).await?;
        let g = st.g;
        // Redone blocks go home now, then the journals are reclaimed (normal first:
        // its new first id is above every f-transaction's).
        let home: Vec<(u64, Vec<u8>)> = home
            .into_iter()
            .map(|(b, data)| match data {
                // Data an f-transaction logged inline.
                Some(v) => (b, v),
                None => (b, st.meta.get(&b).cloned().unwrap_or_default()),
            })
            .filter(|(_, v)| !v.is_empty())
            .collect();
        dev.write_all(&home, IoOptions::new()).await?;
        dev.flush().await?;
        // Everything recovered is home: the superblock claims it.
        let js = journal::encode_jsuper(st.running.id, st.seals.on_disk);
        dev.write(g.journal_start(), &js, IoOptions::new().fua(true))
            .await?;
        let fsb = journal::encode_fsuper(st.fseq, 1);
        dev.write(g.fjournal_start(), &fsb, IoOptions::new().fua(true))
            .await?;
        let store = Rc::new_cyclic(|me| Store {
            me: me.clone(),
            dev,
            mode,
            st: RefCell::new(st),
            lock: Mutex::new_stack_level(()).named("store state"),
            work: Condvar::new_stack_level().named("journal work"),
            // jbd2's j_wait_done_commit (RCP Table 2's "j wait done commit").
            done: Condvar::new_stack_level().named("journal commit done"),
            commit_lock: Mutex::new_stack_level(()).named("commit"),
            fsync_path: std::cell::Cell::new(super::FsyncPath::Sync),
            inline_max: std::cell::Cell::new(0),
            journal_class: std::cell::Cell::new(sluice_runtime::IoClass::Normal),
            fj_lock: Mutex::new_stack_level(()).named("f-journal head"),
            ftail_lock: Mutex::new_stack_level(()).named("f-journal tail"),
            jsb_lock: Mutex::new_stack_level(()).named("journal superblock"),
            limits: Default::default(),
        });
        let s = store.clone();
        let _journal = spawn(TaskCtx::new("jbd").activity(Activity::WAL), async move {
            s.journal_task().await
        });
        let s = store.clone();
        let _timer = spawn(TaskCtx::new("jbd-timer"), async move {
            loop {
                sleep(COMMIT_INTERVAL_NS).await;
                let id = {
                    let st = s.st.borrow();
                    (!st.running.dirty.is_empty()).then_some(st.running.id)
                };
                if let Some(id) = id {
                    s.request(id);
                }
            }
        });
        Ok(store)
    }

    /// What recovery finds on `dev`, in memory only (nothing is written): the state a
    /// mount starts from — committed transactions redone, then the f-transactions above
    /// them, metadata checksums checked, orphans freed, the bitmap rebuilt — and the
    /// blocks the mount then writes home.
    pub(super) async fn load(dev: &Dev) -> Result<Loaded, StoreError> {
        let g = Geometry::decode(&dev.read(0).await?).map_err(StoreError::Corrupt)?;
        // The image holds every block its superblock counts (mkfs gives the file its
        // length), before anything is read or sized by that count: past the end of a
        // cut image a mount would read zeros — inodes unused, every file an orphan.
        let want = g.blocks * BLOCK as u64;
        let len = dev.file.len();
        if len < want {
            return Err(StoreError::Corrupt(format!(
                "the image is {len} bytes, but its superblock counts {} blocks of 4 KiB \
                 ({want} bytes): it was cut short (truncated, or copied in part), and a \
                 mount would read zeros past its end and free the files whose inodes lie \
                 there; restore the whole image",
                g.blocks
            )));
        }
        let found = recover::scan(dev, &g).await?;
        let mut stats = StoreStats {
            redone: found.redone,
            fredone: found.ftxns.len() as u64,
            discarded: found.discarded,
            ..StoreStats::default()
        };
        // Metadata: home blocks, with the committed journal blocks over them.
        let mut meta = BTreeMap::new();
        for b in g.itable_start()..g.data_start() {
            let v = match found.blocks.get(&b) {
                Some(v) => v.clone(),
                None => dev.read(b).await?,
            };
            meta.insert(b, v);
        }
        let mut home: BTreeMap<u64, Vec<u8>> = found.blocks.clone();
        // f-transactions above Max_ID, in order: their inodes and map blocks.
        let mut max_f = found.max_id;
        for (h, blocks) in &found.ftxns {
            max_f = max_f.max(h.id);
            for (ino, inode) in &h.entries {
                let (b, off) = g.inode_pos(*ino);
                let blk = meta.get_mut(&b).expect("inode table in memory");
                inode.encode(&mut blk[off..off + INODE_SIZE]);
                home.insert(b, blk.clone());
            }
            // A data tag says the block's data at home is this record's: an earlier
            // record's logged copy of it (data logged inline) is not written over it.
            for (t, _) in &h.data {
                home.remove(t);
            }
            for ((t, _), d) in h.tags.iter().zip(blocks) {
                home.insert(*t, d.clone());
            }
        }
        if g.metadata_csum {
            check_records(&g, &meta)?;
        }
        let mut inodes = Vec::with_capacity(g.inodes as usize);
        for ino in 1..=g.inodes {
            let (b, off) = g.inode_pos(ino);
            inodes.push(Inode::decode(&meta[&b][off..off + INODE_SIZE]));
        }
        // What the structure must hold before a mount may trust it (checked whole,
        // then refused with every finding: below).
        let mut problems = Vec::new();
        for (k, i) in inodes.iter().enumerate() {
            if i.used {
                inode_bounds(k as u32 + 1, i, &mut problems);
            }
        }
        // The map blocks of the used inodes: the indirect and double-indirect blocks,
        // then the indirect blocks the double-indirect ones name.
        let in_data = |b: u64| b >= g.data_start() && b < g.blocks;
        let mut want: Vec<u64> = inodes
            .iter()
            .filter(|i| i.used)
            .flat_map(|i| [i.indirect, i.double])
            .map(u64::from)
            .filter(|&b| in_data(b))
            .collect();
        let doubles: Vec<u64> = inodes
            .iter()
            .filter(|i| i.used && in_data(i.double as u64))
            .map(|i| i.double as u64)
            .collect();
        for level in 0..2 {
            for &b in &want {
                let v = match home.get(&b) {
                    Some(v) => v.clone(),
                    None => dev.read(b).await?,
                };
                meta.insert(b, v);
            }
            if level == 0 {
                want = doubles
                    .iter()
                    .flat_map(|d| {
                        let m = &meta[d];
                        (0..PER_INDIRECT).map(move |k| le32(m, k * 4) as u64)
                    })
                    .filter(|&b| in_data(b))
                    .collect();
            }
        }
        // The journals start again above every id and sequence number they may hold,
        // committed or not: a crash can leave the records of the next transaction
        // (id Max_ID + 1, or f-sequence `next_seq`) without a commit record, and the
        // new epoch must not reuse their numbers — recovery would take them for the
        // proof that a transaction committed (see `recover`).
        let first = max_f + 2;
        let mut st = State {
            g,
            meta,
            running: Txn {
                id: first,
                ..Txn::default()
            },
            closing: BTreeMap::new(),
            held: Vec::new(),
            handles: BTreeMap::new(),
            ino_handles: BTreeMap::new(),
            committed: first - 1,
            requested: first - 1,
            checkpoint: BTreeMap::new(),
            jhead: 1,
            fhead: 1,
            fseq: found.next_seq + 1,
            ftail: 1,
            flive: Default::default(),
            used: vec![false; g.blocks as usize],
            hint: g.data_start(),
            inode_used: inodes.iter().map(|i| i.used).collect(),
            names: BTreeMap::new(),
            opens: BTreeMap::new(),
            ino_opens: BTreeMap::new(),
            next_open: 0,
            unlinked: BTreeSet::new(),
            ino_txn: BTreeMap::new(),
            ino_dtxn: BTreeMap::new(),
            map_dirty: BTreeMap::new(),
            pins: BTreeMap::new(),
            data: BTreeMap::new(),
            data_bytes: 0,
            busy: BTreeSet::new(),
            next_gen: 0,
            aborted: None,
            stats: StoreStats::default(),
            phases: BTreeMap::new(),
            breakdown: Default::default(),
            cache: Default::default(),
            seals: Default::default(),
        };
        st.seals.jsb_first = first;
        st.seals.durable(st.claims_now());
        // Names; inodes without one are orphans (their creation never committed). A
        // name and its inode change in one transaction, so no crash leaves a name on an
        // unused inode, a second name for an inode or a name twice: those are damage.
        let mut named: Vec<Option<u32>> = vec![None; g.inodes as usize];
        for slot in 0..g.inodes {
            let (b, off) = g.dirent_pos(slot);
            let Some((ino, name)) = decode_dirent(&st.meta[&b][off..]) else {
                continue;
            };
            let entry = format!("directory entry {slot} ('{name}')");
            if ino > g.inodes {
                problems.push(format!(
                    "{entry} names inode {ino}, past the store's {} inodes",
                    g.inodes
                ));
            } else if !inodes[ino as usize - 1].used {
                problems.push(format!("{entry} names unused inode {ino}"));
            } else if name.is_empty() || name.contains(['/', '\0']) {
                problems.push(format!("{entry} has a name no file can have"));
            } else if let Some((_, other)) = st.names.get(&name) {
                problems.push(format!(
                    "{entry}: the name is in directory entry {other} too"
                ));
            } else if let Some(other) = named[ino as usize - 1] {
                problems.push(format!(
                    "{entry} names inode {ino}, which directory entry {other} names too"
                ));
            } else {
                named[ino as usize - 1] = Some(slot);
                st.names.insert(name, (ino, slot));
            }
        }
        for ino in 1..=g.inodes {
            if inodes[ino as usize - 1].used && named[ino as usize - 1].is_none() {
                st.set_inode(ino, &Inode::default());
                st.inode_used[ino as usize - 1] = false;
                stats.orphans += 1;
            }
        }
        // The bitmap, rebuilt from the inodes (FastResponse: f-transactions do not log
        // it).
        for b in 0..g.data_start() {
            st.used[b as usize] = true;
        }
        for ino in 1..=g.inodes {
            let i = st.inode(ino);
            if !i.used {
                continue;
            }
            for b in st.blocks_of(&i) {
                // A block outside the device (damage) is left to `check` to report.
                if let Some(u) = st.used.get_mut(b as usize) {
                    *u = true;
                }
            }
        }
        for b in g.data_start()..g.blocks {
            let on = st.used[b as usize];
            if st.bit(b) != on {
                st.set_bit(b, on);
            }
        }
        st.stats = stats;
        // Every used inode's blocks in the data area and owned once (the bitmap was
        // rebuilt from them above, so its check holds).
        problems.extend(st.problems());
        refuse_damage(problems)?;
        // Metadata blocks go home as the state holds them (checked, inodes applied);
        // data blocks logged inline are not in it: their logged contents go.
        let home = home
            .into_iter()
            .map(|(b, v)| (b, (!st.meta.contains_key(&b)).then_some(v)))
            .collect();
        Ok(Loaded { st, home })
    }
}

/// What [`Store::load`] found: the state, and the blocks to write home (with their
/// contents for data blocks logged inline; metadata blocks go as the state holds them).
pub(super) struct Loaded {
    pub(super) st: State,
    pub(super) home: Vec<(u64, Option<Vec<u8>>)>,
}

/// The size of a used inode `ino`, which every walk of its map is bounded by: at most
/// the largest file. (Its pointers, the indirect blocks' entries included, are checked
/// with the ownership: `State::problems`.)
fn inode_bounds(ino: u32, i: &Inode, problems: &mut Vec<String>) {
    let max = MAX_FILE_BLOCKS * BLOCK as u64;
    if i.size > max {
        problems.push(format!(
            "inode {ino}: size {} bytes, over the largest file ({max} bytes)",
            i.size
        ));
    }
}

/// Refuse a store whose structure `problems` found damaged, naming the first few: a
/// crash cannot cause any of them (the journal keeps every metadata block until it is
/// home), so the image was damaged or edited, and a mount would lose or overwrite
/// data.
fn refuse_damage(problems: Vec<String>) -> Result<(), StoreError> {
    const SHOWN: usize = 8;
    if problems.is_empty() {
        return Ok(());
    }
    let more = match problems.len().saturating_sub(SHOWN) {
        0 => String::new(),
        n => format!("; and {n} more"),
    };
    Err(StoreError::Corrupt(format!(
        "the store's structure is damaged, so it was not mounted: {}{more}; restore the \
         image from a copy",
        problems[..problems.len().min(SHOWN)].join("; ")
    )))
}

/// With metadata checksums: every inode and directory entry, as recovery left them, is
/// intact — or the store is refused, naming the first damaged record. A crash cannot
/// damage one: the journal keeps every metadata block until it is home, and recovery
/// writes it again.
fn check_records(g: &Geometry, meta: &BTreeMap<u64, Vec<u8>>) -> Result<(), StoreError> {
    let damaged = |what: String, b: u64, off: usize| {
        StoreError::Corrupt(format!(
            "{what} (block {b}, byte {off}) fails its checksum: the store's metadata is \
             damaged, so it was not mounted; restore the image from a copy"
        ))
    };
    for ino in 1..=g.inodes {
        let (b, off) = g.inode_pos(ino);
        if !inode_intact(&meta[&b][off..]) {
            return Err(damaged(format!("inode {ino}"), b, off));
        }
    }
    for slot in 0..g.inodes {
        let (b, off) = g.dirent_pos(slot);
        if !dirent_intact(&meta[&b][off..]) {
            return Err(damaged(format!("directory entry {slot}"), b, off));
        }
    }
    Ok(())
}
