//! What the store's tests share: the image's name and a recovery that checks the
//! structure.

use std::future::Future;
use std::rc::Rc;

use sluice_runtime::{DiskImage, File, Stack};
use sluice_store::{CommitMode, Store};

/// The store's file in the simulated stack.
pub const IMG: &str = "store.img";

/// Mount `image` on `nand` (recovery), check the structure, and run `check` on the
/// store.
pub fn recover<F, Fut, T>(mode: CommitMode, image: DiskImage, check: F) -> T
where
    F: FnOnce(Rc<Store>) -> Fut + 'static,
    Fut: Future<Output = T> + 'static,
    T: 'static,
{
    Stack::builder()
        .device("nand")
        .image(image)
        .build()
        .unwrap()
        .run(move || async move {
            let f = File::open(IMG).await.unwrap();
            let s = Store::mount(&f, mode).await.unwrap();
            assert_eq!(s.check(), Vec::<String>::new());
            check(s).await
        })
        .unwrap()
        .value
}
