//! Making a store over a file that held one before.

use crate::common;

use common::crash_after;
use sluice_runtime::File;
use sluice_store::{CommitMode, Geometry, Store};

/// A store made again over an old one starts empty: its journals' ids start at 1
/// again, so the old journal's records must not be taken for the new ones.
#[test]
fn a_store_made_over_an_old_one_replays_none_of_its_journal() {
    let image = crash_after(
        CommitMode::Compound,
        Geometry::new(4096),
        1,
        |s| async move {
            for name in ["a", "b", "c"] {
                let h = s.create(name).unwrap();
                s.write(h, 0, &[3; 9000]).await.unwrap();
                s.sync().await.unwrap();
            }
        },
    );
    let (files, stats) = common::on_image(image, |f: File| async move {
        Store::mkfs(&f, Geometry::new(4096)).await.unwrap();
        let s = Store::mount(&f, CommitMode::Compound).await.unwrap();
        assert_eq!(s.check(), Vec::<String>::new());
        (s.list(), s.stats())
    });
    assert_eq!((files, stats.redone), (Vec::new(), 0));
}
