//! Why the default job's percentiles differ (`docs/devices.md`, "Service-time
//! variation" and "The transfer"). `ull` shares its host transfer among the commands in
//! flight (`controller.transfer = "shared"`): under `none` the critical reader's 4 KiB
//! moves beside ≈ 127 writes of 128 KiB, at 1/128 of the bandwidth, after waiting for
//! a controller slot that a write's completion frees; its latency is that share plus
//! that wait, and both vary with how the writes' varied transfers overlap. On a FIFO
//! front end (the second test) the reader instead waits for the whole backlog to
//! drain, a sum of ≈ 127 write transfers: each varies with the write body's log-normal
//! σ, so by the central limit theorem `p99 − p50 ≈ 2.326 · √n · t · sd`, and without
//! the variation the percentiles collapse.

use sluice::cli::{load_jobs, simulate};
use sluice::core::policy::PolicySpec;
use sluice::device::DeviceProfile;
use sluice::sim::SimConfig;

/// (p50, p99) of the critical reader's completion latency under `none`, ns.
fn reader_p50_p99(profile: &DeviceProfile) -> (f64, f64) {
    let (jobs, _) = load_jobs(None, false, &[]).expect("the default job parses");
    let spec: PolicySpec = "none".parse().expect("policy");
    let out = simulate(&jobs, profile, &spec, &SimConfig::default(), &mut |_| {})
        .expect("the default job runs");
    let reader = out
        .report
        .jobs
        .iter()
        .find(|j| j.jobname == "critical-reader")
        .expect("critical reader");
    let p = &reader.read.lat_ns.percentile;
    (
        p.get(50.0).expect("p50") as f64,
        p.get(99.0).expect("p99") as f64,
    )
}

#[test]
fn on_the_shared_link_the_reader_waits_for_its_share_not_the_backlog() {
    let ull = DeviceProfile::builtin("ull").unwrap();
    let (p50, p99) = reader_p50_p99(&ull);
    let n = ull.controller.max_outstanding as f64;
    let share = n * 4096.0 * 1e9 / ull.media.bus_bandwidth_bytes as f64;
    let backlog = (n - 1.0) * 131072.0 * 1e9 / ull.media.bus_bandwidth_bytes as f64;
    eprintln!("ull none: reader p50 {p50} p99 {p99}; its share {share:.0} ns, the backlog {backlog:.0} ns");
    assert!(p50 < p99, "p50 {p50} p99 {p99}");
    // Its transfer at 1/n of the link, the fixed stages and a slot's wait: above the
    // share, far below the backlog's drain.
    assert!(
        p50 > share && p50 < 1.5 * share,
        "p50 {p50}, share {share:.0}"
    );
    assert!(p99 < 0.1 * backlog, "p99 {p99}, backlog {backlog:.0}");
}

#[test]
fn on_a_fifo_front_end_percentiles_come_from_varied_write_transfers() {
    let mut ull = DeviceProfile::builtin("ull").unwrap();
    ull.controller.transfer = sluice::device::Transfer::Fifo;
    let (p50, p99) = reader_p50_p99(&ull);
    // The CLT prediction: n = max_outstanding − 1 writes ahead, t = 128 KiB over the bus.
    let sigma = ull.service.as_ref().unwrap().write.sigma;
    let n = (ull.controller.max_outstanding - 1) as f64;
    let t = 131072.0 * 1e9 / ull.media.bus_bandwidth_bytes as f64;
    let sd = ((sigma * sigma).exp() - 1.0).sqrt();
    let want = 2.326 * n.sqrt() * t * sd;
    let got = p99 - p50;
    eprintln!("ull none: reader p50 {p50} p99 {p99}; p99 − p50 {got} ns, predicted {want:.0} ns");
    assert!(p50 < p99, "p50 {p50} p99 {p99}");
    assert!(
        (0.6..=1.6).contains(&(got / want)),
        "p99 − p50 = {got} ns, the CLT predicts {want:.0} ns"
    );
    // The drain time itself: ≈ n transfers (within 5 %).
    assert!((p50 / (n * t) - 1.0).abs() < 0.05, "p50 {p50} vs {}", n * t);

    // The same device without write variation: the backlog drains in a fixed time, and
    // the percentiles collapse (what `sluice sim` printed before the transfers varied).
    let mut fixed = ull.clone();
    fixed.service.as_mut().unwrap().write.sigma = 0.0;
    let (f50, f99) = reader_p50_p99(&fixed);
    eprintln!("ull, write σ = 0: reader p50 {f50} p99 {f99}");
    assert!(f99 - f50 < 0.2 * want, "p50 {f50} p99 {f99}");
}
