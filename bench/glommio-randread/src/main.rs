//! 4 KiB random reads at a fixed depth with glommio's `DmaFile` (one executor, one
//! core): `glommio-randread FILE QD SECS` prints IOPS. The same shape as sluice's
//! `examples/rt_randread.rs`: QD tasks, each one read at a time.

use std::rc::Rc;
use std::time::{Duration, Instant};

use glommio::io::DmaFile;
use glommio::{LocalExecutorBuilder, Placement};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (path, qd, secs) = (
        args[1].clone(),
        args[2].parse::<u64>().unwrap(),
        args[3].parse::<u64>().unwrap(),
    );
    let ex = LocalExecutorBuilder::new(Placement::Unbound).make().unwrap();
    let ios = ex.run(async move {
        let f = Rc::new(DmaFile::open(&path).await.unwrap());
        let blocks = f.file_size().await.unwrap() / 4096;
        let end = Instant::now() + Duration::from_secs(secs);
        let mut tasks = Vec::new();
        for k in 0..qd {
            let f = f.clone();
            tasks.push(glommio::spawn_local(async move {
                let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ (k + 1).wrapping_mul(0xA24B_AED4_963E_E407);
                let mut n = 0u64;
                while Instant::now() < end {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let r = f.read_at_aligned((x % blocks) * 4096, 4096).await.unwrap();
                    assert_eq!(r.len(), 4096);
                    n += 1;
                }
                n
            }));
        }
        let mut total = 0;
        for t in tasks {
            total += t.await;
        }
        total
    });
    println!("glommio randread qd={qd}: {ios} I/Os in {secs} s = {:.0} IOPS", ios as f64 / secs as f64);
}
