//! Why the default job's percentiles differ (`docs/devices.md`, "Service-time
//! variation"): under `none` the critical reader waits behind ≈ 127 queued 128 KiB
//! writes on `ull`'s front end, so its latency is the drain time of that backlog, a sum
//! of ≈ 127 write transfers. Each transfer varies with the write body's log-normal σ,
//! so by the central limit theorem the sum's spread is `√n · t · sd` and
//! `p99 − p50 ≈ 2.326 · √n · t · sd`. Without the variation the percentiles collapse.

use sluice::cli::{load_jobs, simulate};
use sluice::core::policy::PolicySpec;
use sluice::device::DeviceProfile;
use sluice::sim::SimConfig;

/// (p50, p99) of the critical reader's completion latency under `none`, ns.
fn reader_p50_p99(profile: &DeviceProfile) -> (f64, f64) {
    let (jobs, _) = load_jobs(None, false).expect("the default job parses");
    let spec: PolicySpec = "none".parse().expect("policy");
    let out = simulate(&jobs, profile, &spec, &SimConfig::default(), &mut |_| {})
        .expect("the default job runs");
    let reader = out
        .report
        .jobs
        .iter()
        .find(|j| j.jobname == "critical-reader")
        .expect("critical reader");
    let p = &reader.read.clat_ns.percentile;
    (
        p.get(50.0).expect("p50") as f64,
        p.get(99.0).expect("p99") as f64,
    )
}

#[test]
fn default_job_percentiles_come_from_varied_write_transfers() {
    let ull = DeviceProfile::builtin("ull").unwrap();
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
