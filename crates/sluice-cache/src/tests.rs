use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

type Cache = PageCache<Vec<u8>>;

fn cfg(pages: usize) -> CacheConfig {
    CacheConfig {
        pages,
        ..CacheConfig::default()
    }
}

fn key(index: u64) -> PageKey {
    PageKey { file: 0, index }
}

fn page(v: u8) -> Vec<u8> {
    vec![v; PAGE as usize]
}

#[test]
fn class_limits_throttle_background_writers_only() {
    let mut c = Cache::new(cfg(1000));
    assert_eq!(c.config().dirty_limit(IoClass::Normal), 10);
    assert_eq!(c.config().dirty_limit(IoClass::Critical), 200);
    for i in 0..10 {
        assert!(c.may_dirty(IoClass::Normal));
        assert!(c.reserve());
        c.write(key(i), 0, &page(1), Some(page(0)));
    }
    assert!(!c.may_dirty(IoClass::Normal), "background writer at 1 %");
    assert!(
        c.may_dirty(IoClass::Critical),
        "critical writer not throttled"
    );
    let off = Cache::new(CacheConfig {
        class_limits: false,
        ..cfg(1000)
    });
    assert_eq!(off.config().dirty_limit(IoClass::Normal), 200);
}

#[test]
fn writeback_cleans_and_a_writer_waits_for_it() {
    let mut c = Cache::new(cfg(64));
    assert!(c.reserve());
    c.write(key(3), 0, &page(7), Some(page(0)));
    let (k, f) = c.start_writeback(None).unwrap();
    assert_eq!(k, key(3));
    c.set_token(f, 42);
    assert_eq!(c.check_write(k, 0, 512), WriteCheck::WaitWriteback(42));
    assert_eq!(c.writebacks_in(PageRange::file(0)), vec![(k, 42)]);
    let mut out = [0u8; 16];
    c.read(f, 0, &mut out);
    assert_eq!(out, [7; 16], "a page under writeback is readable");
    assert!(!c.end_writeback(k, 41, true), "not this page's writeback");
    assert!(c.end_writeback(k, 42, true));
    assert!(!c.end_writeback(k, 42, true), "ended once");
    assert_eq!(
        c.check_write(k, 0, 512),
        WriteCheck::Ready { new_dirty: true }
    );
    assert_eq!(c.dirty_pages() + c.writeback_pages(), 0);
}

#[test]
fn a_failed_writeback_leaves_the_page_dirty() {
    let mut c = Cache::new(cfg(64));
    assert!(c.reserve());
    c.write(key(1), 0, &page(7), Some(page(0)));
    let (k, f) = c.start_writeback(Some(PageRange::file(0))).unwrap();
    c.set_token(f, 1);
    c.end_writeback(k, 1, false);
    assert!(c.dirty_in(PageRange::file(0)));
    assert_eq!(c.stats().writeback_errors, 1);
}

#[test]
fn clock_evicts_clean_pages_only_and_gives_referenced_ones_a_second_chance() {
    let mut c = Cache::new(cfg(16));
    for i in 0..16 {
        assert!(c.begin_read(key(i)));
        assert!(matches!(
            c.insert_read(key(i), page(i as u8)),
            ReadDone::Indexed(_)
        ));
    }
    // Every page is referenced: the hand clears the bits, then evicts page 0.
    assert!(c.begin_read(key(16)));
    assert!(matches!(
        c.insert_read(key(16), page(0)),
        ReadDone::Indexed(_)
    ));
    assert!(c.lookup(key(0)).is_none());
    // Page 1 is referenced again: it gets a second chance, page 2 goes.
    assert!(c.lookup(key(1)).is_some());
    assert!(c.begin_read(key(17)));
    assert!(matches!(
        c.insert_read(key(17), page(0)),
        ReadDone::Indexed(_)
    ));
    assert!(c.lookup(key(2)).is_none());
    assert!(c.lookup(key(1)).is_some());
    assert_eq!(c.stats().evictions, 2);
    // All dirty: no room.
    let mut d = Cache::new(CacheConfig {
        dirty_ratio_normal: 1.0,
        ..cfg(16)
    });
    for i in 0..16 {
        assert!(d.reserve());
        d.write(key(i), 0, &page(1), Some(page(0)));
    }
    assert!(!d.reserve(), "dirty pages are never evicted");
}

#[test]
fn a_duplicate_read_is_abandoned_and_the_reader_gets_the_indexed_page() {
    let mut c = Cache::new(cfg(64));
    assert!(c.begin_read(key(5)));
    assert!(c.begin_read(key(5)));
    let f = match c.insert_read(key(5), page(9)) {
        ReadDone::Indexed(f) => f,
        other => panic!("{other:?}"),
    };
    match c.insert_read(key(5), page(9)) {
        ReadDone::Abandoned(g, buf) => {
            assert_eq!(g, f);
            assert_eq!(buf.len(), PAGE as usize);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(c.stats().duplicate_reads, 1);
    assert_eq!(c.pages(), 1);
}

#[test]
fn forgetting_a_page_makes_its_read_in_flight_stale() {
    let mut c = Cache::new(cfg(64));
    assert!(c.begin_read(key(3)));
    assert!(c.insert_clean(key(7), page(1)));
    // A write went around the cache: the clean copy goes, the read's data is old.
    c.forget_clean(PageRange::bytes(0, 0, 8 * PAGE));
    assert!(!c.contains(key(7)));
    assert!(matches!(c.insert_read(key(3), page(2)), ReadDone::Stale(_)));
    assert!(!c.contains(key(3)));
    // A large range goes through the index; other files' pages stay.
    assert!(c.insert_clean(key(100), page(1)));
    assert!(c.insert_clean(
        PageKey {
            file: 1,
            index: 100
        },
        page(1)
    ));
    c.forget_clean(PageRange::file(0));
    assert!(!c.contains(key(100)));
    assert!(c.contains(PageKey {
        file: 1,
        index: 100
    }));
    assert_eq!(c.pages(), 1);
}

#[test]
fn insert_clean_replaces_a_clean_copy_and_never_a_dirty_one() {
    let mut c = Cache::new(cfg(16));
    assert!(c.insert_clean(key(0), page(1)));
    assert!(c.insert_clean(key(0), page(2)));
    let mut out = vec![0u8; 4];
    let f = c.lookup(key(0)).expect("cached");
    c.read(f, 0, &mut out);
    assert_eq!(out, vec![2u8; 4]);
    assert!(c.reserve());
    c.write(key(1), 0, &[5u8; 4096], Some(page(0)));
    assert!(
        !c.insert_clean(key(1), page(3)),
        "a dirty page is the newer copy"
    );
    for i in 2..16 {
        assert!(c.insert_clean(key(i), page(4)));
    }
    // Full: a clean page is evicted for a new one, never the dirty one.
    assert!(c.insert_clean(key(16), page(4)));
    assert!(c.contains(key(1)));
    assert_eq!(c.pages(), 16);
    assert_eq!(c.stats().evictions, 1);
}

#[derive(Clone, Debug)]
enum Step {
    Read(u64),
    Complete(usize),
    Write(u64, u8),
    Writeback,
    EndWriteback(usize),
    Evict,
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    let s = prop_oneof![
        (0u64..20).prop_map(Step::Read),
        (0usize..8).prop_map(Step::Complete),
        (0u64..20, 1u8..255).prop_map(|(k, v)| Step::Write(k, v)),
        Just(Step::Writeback),
        (0usize..8).prop_map(Step::EndWriteback),
        Just(Step::Evict),
    ];
    prop::collection::vec(s, 1..400)
}

proptest! {
    /// Lazy indexing never returns stale data: whatever the interleaving of reads
    /// (completing in any order), writes, writebacks and evictions, every read gives
    /// the last value written to its page.
    #[test]
    fn reads_never_return_stale_data(steps in steps()) {
        let mut c = Cache::new(CacheConfig { dirty_ratio_normal: 1.0, ..cfg(16) });
        let mut device: BTreeMap<u64, u8> = BTreeMap::new();
        let mut latest: BTreeMap<u64, u8> = BTreeMap::new();
        // Reads in flight: (page, the device's value when the device served it).
        let mut reads: Vec<(u64, u8)> = Vec::new();
        let mut wbs: Vec<(PageKey, u64, u8)> = Vec::new();
        for s in steps {
            match s {
                Step::Read(k) => {
                    if let Some(f) = c.lookup(key(k)) {
                        let mut b = [0u8; 1];
                        c.read(f, 0, &mut b);
                        prop_assert_eq!(b[0], latest.get(&k).copied().unwrap_or(0));
                    } else if c.begin_read(key(k)) {
                        reads.push((k, device.get(&k).copied().unwrap_or(0)));
                    }
                }
                Step::Complete(i) if !reads.is_empty() => {
                    let (k, v) = reads.remove(i % reads.len());
                    let got = match c.insert_read(key(k), page(v)) {
                        ReadDone::Indexed(f) | ReadDone::Abandoned(f, _) => {
                            let mut b = [0u8; 1];
                            c.read(f, 0, &mut b);
                            Some(b[0])
                        }
                        ReadDone::Stale(_) => None,
                    };
                    if let Some(g) = got {
                        prop_assert_eq!(g, latest.get(&k).copied().unwrap_or(0));
                    }
                }
                Step::Write(k, v) => {
                    if c.check_write(key(k), 0, PAGE as usize) == (WriteCheck::Ready { new_dirty: true })
                        && c.lookup(key(k)).is_none()
                    {
                        if c.reserve() {
                            c.write(key(k), 0, &page(v), Some(page(0)));
                            latest.insert(k, v);
                        }
                    } else if matches!(c.check_write(key(k), 0, PAGE as usize), WriteCheck::Ready { .. }) {
                        c.write(key(k), 0, &page(v), None);
                        latest.insert(k, v);
                    }
                }
                Step::Writeback => {
                    if let Some((k, f)) = c.start_writeback(None) {
                        let mut b = [0u8; 1];
                        c.read(f, 0, &mut b);
                        c.set_token(f, 7);
                        wbs.push((k, k.index, b[0]));
                    }
                }
                Step::EndWriteback(i) if !wbs.is_empty() => {
                    let (key, k, v) = wbs.remove(i % wbs.len());
                    device.insert(k, v);
                    prop_assert!(c.end_writeback(key, 7, true));
                }
                Step::Evict if c.reserve() => c.unreserve(),
                _ => {}
            }
            prop_assert!(c.pages() <= 16, "bounded: {} pages", c.pages());
        }
    }
}
