//! The runner against a scripted port: what it asks of the world, in order.

use super::*;
use sluice_core::ReqId;
use sluice_workload::{parse_str, ParseOptions};

fn jobs(text: &str) -> Vec<JobSpec> {
    parse_str(text, "test", &ParseOptions::default())
        .expect("a valid job file")
        .jobs
}

/// A port that keeps what the runner asked for.
#[derive(Default)]
struct Script {
    submits: Vec<(u32, NewRequest)>,
    wakes: Vec<(u32, Nanos)>,
    ends: Vec<(u32, Nanos)>,
    samples: Vec<Sample>,
    done: Vec<(usize, Nanos)>,
    exits: Vec<(u32, Vec<u32>)>,
    /// Part scope: threads of each job still live over "all parts".
    live: Vec<u32>,
}

impl Port for Script {
    fn submit(&mut self, s: Submit<'_>) {
        self.submits.push((s.thread, s.req));
    }
    fn wake_at(&mut self, thread: u32, at: Nanos) {
        self.wakes.push((thread, at));
    }
    fn end_at(&mut self, job: u32, at: Nanos) {
        self.ends.push((job, at));
    }
    fn record(&mut self, s: &Sample) {
        self.samples.push(*s);
    }
    fn record_error(&mut self, _job: usize, _thread: u32, _op: Op, _errno: i32) {}
    fn thread_end(&mut self, _job: usize, _thread: u32, _at: Nanos) {}
    fn job_done(&mut self, job: usize, at: Nanos) {
        self.done.push((job, at));
    }
    fn exit_all(&mut self, job: u32, others: &[u32]) {
        self.exits.push((job, others.to_vec()));
    }
    fn thread_done(&mut self, job: u32) -> bool {
        self.live[job as usize] -= 1;
        self.live[job as usize] == 0
    }
}

fn setups(specs: &[JobSpec]) -> Vec<ThreadSetup> {
    let mut v = Vec::new();
    for (j, s) in specs.iter().enumerate() {
        for t in 0..s.numjobs {
            v.push(ThreadSetup {
                job: j as u32,
                index: t,
                base: (v.len() as u64) << 20,
                hwq: 0,
            });
        }
    }
    v
}

/// A runner of `specs` over the whole of one world (one thread set, seed 1).
fn whole_runner(specs: &[JobSpec]) -> Runner {
    Runner::new(specs, &flows(specs), &setups(specs), 1, Scope::Whole, false)
}

fn flows(specs: &[JobSpec]) -> Vec<FlowId> {
    (0..specs.len() as u32).map(FlowId).collect()
}

/// The completion of `req`, submitted at `at`, done at `done`.
fn finished(req: &NewRequest, at: Nanos, done: Nanos, class: IoClass) -> Finished {
    Finished {
        id: ReqId(0),
        token: 0,
        op: req.op,
        len: req.len,
        offset: req.offset,
        class,
        submit_ns: at,
        admit_ns: at,
        dispatch_ns: at,
        device_done_ns: done,
        ok: true,
    }
}

#[test]
fn a_thread_issues_to_its_depth_in_its_file_and_stops_at_its_size() {
    let specs = jobs("[a]\nrw=read\nbs=4k\nsize=16k\niodepth=2\n");
    let mut r = whole_runner(&specs);
    let mut p = Script::default();
    r.start_group(0, 0, &mut p);
    assert_eq!(p.wakes, vec![(0, 0)]);
    assert!(r.wake(0, 0, &mut p));
    assert_eq!(p.submits.len(), 2, "iodepth=2");
    let mut t = 0;
    while let Some((th, req)) = (!p.submits.is_empty()).then(|| p.submits.remove(0)) {
        assert!(req.offset < 16 << 10, "inside its file at base 0");
        t += 10;
        r.complete(th, &finished(&req, 0, t, IoClass::Normal), t, None, &mut p);
    }
    assert_eq!(p.samples.len(), 4, "16 KiB in 4 KiB reads");
    assert_eq!(
        p.done,
        vec![(0, 40)],
        "the job ends with its last completion"
    );
    assert_eq!(r.group(), 1, "every group ran");
}

#[test]
fn a_stonewall_group_starts_when_the_group_before_it_is_done() {
    let specs = jobs(
        "[a]\nrw=read\nbs=4k\nsize=4k\n[b]\nstonewall\nrw=read\nbs=4k\nsize=4k\nstartdelay=5us\n",
    );
    let mut r = whole_runner(&specs);
    let mut p = Script::default();
    r.start_group(0, 0, &mut p);
    assert_eq!(p.wakes, vec![(0, 0)], "only the first group's thread");
    r.wake(0, 0, &mut p);
    let (_, req) = p.submits.remove(0);
    r.complete(
        0,
        &finished(&req, 0, 100, IoClass::Normal),
        100,
        None,
        &mut p,
    );
    // b starts at a's end plus its startdelay.
    assert_eq!(p.wakes.last(), Some(&(1, 5_100)));
    assert_eq!(r.start_ns(1), 5_100);
    assert!(p.submits.is_empty(), "b waits for its startdelay");
    r.wake(1, 5_100, &mut p);
    assert_eq!(
        p.submits[0].1.offset,
        1 << 20,
        "b's file starts at its base"
    );
}

#[test]
fn exitall_ends_the_other_jobs_of_the_group_and_runtime_ends_are_asked_for() {
    let specs = jobs(
        "[a]\nrw=read\nbs=4k\nsize=1m\nruntime=1ms\ntime_based\nexitall\n[b]\nrw=read\nbs=4k\nsize=1m\n",
    );
    let mut r = whole_runner(&specs);
    let mut p = Script::default();
    r.start_group(0, 0, &mut p);
    assert_eq!(p.ends, vec![(0, 1_000_000)]);
    r.wake(0, 0, &mut p);
    r.wake(1, 0, &mut p);
    r.end_job(0, 1_000_000, &mut p);
    assert_eq!(p.exits, vec![(0, vec![1])]);
    assert_eq!(p.done, vec![(0, 1_000_000)]);
    // A completion after the end is not sampled.
    let (th, req) = p.submits.remove(0);
    assert_eq!(th, 0);
    r.complete(
        0,
        &finished(&req, 0, 1_000_100, IoClass::Normal),
        1_000_100,
        None,
        &mut p,
    );
    assert!(p.samples.is_empty(), "no sample after a time-based end");
}

#[test]
fn thinktime_runs_from_the_reap_and_the_sample_takes_the_block_layers_class() {
    let specs = jobs("[a]\nrw=read\nbs=4k\nsize=8k\nthinktime=7\n");
    let mut r = whole_runner(&specs);
    let mut p = Script::default();
    r.start_group(0, 0, &mut p);
    r.wake(0, 0, &mut p);
    let (_, req) = p.submits.remove(0);
    assert_eq!(req.class, IoClass::Normal);
    // Promoted on its way (RCP): the sample says critical.
    r.complete(
        0,
        &finished(&req, 0, 90, IoClass::Critical),
        100,
        None,
        &mut p,
    );
    assert_eq!(p.samples[0].class, IoClass::Critical);
    assert_eq!(
        (p.samples[0].device_done_ns, p.samples[0].reaped_ns),
        (90, 100)
    );
    assert_eq!(p.wakes.last(), Some(&(0, 7_100)), "7 µs after the reap");
    assert!(p.submits.is_empty(), "nothing before the think time ends");
    assert!(!r.wake(0, 7_099, &mut p), "not due yet");
    assert!(r.wake(0, 7_100, &mut p));
    assert_eq!(p.submits.len(), 1);
}

#[test]
fn a_part_ends_a_job_only_when_the_world_says_its_last_thread_is_done() {
    // Two threads; this part has thread 0 only, another part has thread 1.
    let specs = jobs("[a]\nrw=read\nbs=4k\nsize=4k\nnumjobs=2\n");
    let mine = &setups(&specs)[..1];
    let mut r = Runner::new(&specs, &flows(&specs), mine, 1, Scope::Part, false);
    let mut p = Script {
        live: vec![2],
        ..Script::default()
    };
    r.start_group(0, 0, &mut p);
    r.wake(0, 0, &mut p);
    let (_, req) = p.submits.remove(0);
    r.complete(0, &finished(&req, 0, 10, IoClass::Normal), 10, None, &mut p);
    assert!(p.done.is_empty(), "the other part's thread still runs");
    assert_eq!(r.active(), 0, "this part is done");
    assert_eq!(r.group(), 0, "a part does not chain groups");
}

#[test]
fn an_interrupt_drains_the_group_and_starts_no_later_one() {
    let specs = jobs("[a]\nrw=read\nbs=4k\nsize=1m\n[b]\nstonewall\nrw=read\nbs=4k\nsize=4k\n");
    let mut r = whole_runner(&specs);
    let mut p = Script::default();
    r.start_group(0, 0, &mut p);
    r.wake(0, 0, &mut p);
    let (_, req) = p.submits.remove(0);
    r.interrupt(50, &mut p);
    assert_eq!(p.done, vec![(0, 50)], "the job ends at the interrupt");
    r.complete(0, &finished(&req, 0, 60, IoClass::Normal), 60, None, &mut p);
    assert!(p.submits.is_empty(), "nothing after the interrupt");
    assert_eq!(r.group(), r.groups(), "the run is over: b never starts");
    assert!(!p.wakes.iter().any(|&(t, _)| t == 1));
}

#[test]
fn cmdprio_gives_the_ios_drawn_high_their_own_class_and_leaves_the_stream_alone() {
    let run = |text: &str| {
        let specs = jobs(text);
        let mut r = whole_runner(&specs);
        let mut p = Script::default();
        r.start_group(0, 0, &mut p);
        r.wake(0, 0, &mut p);
        let mut out = Vec::new();
        let mut t = 0;
        while let Some((th, req)) = (!p.submits.is_empty()).then(|| p.submits.remove(0)) {
            out.push((req.offset, req.class));
            t += 10;
            r.complete(th, &finished(&req, 0, t, req.class), t, None, &mut p);
        }
        out
    };
    let base = "[a]\nrw=randread\nbs=4k\nsize=1m\nio_size=4m\nprioclass=3\n";
    let plain = run(base);
    let prio = run(&format!("{base}cmdprio_percentage=30\ncmdprio_class=1\n"));
    assert_eq!(plain.len(), 1024);
    assert!(plain.iter().all(|x| x.1 == IoClass::Idle));
    let offsets = |v: &[(u64, IoClass)]| v.iter().map(|x| x.0).collect::<Vec<_>>();
    assert_eq!(offsets(&plain), offsets(&prio), "the same offsets");
    let critical = prio.iter().filter(|x| x.1 == IoClass::Critical).count();
    assert!(
        (250..370).contains(&critical),
        "{critical} of 1024 critical"
    );
    assert_eq!(
        prio.iter().filter(|x| x.1 == IoClass::Idle).count(),
        1024 - critical,
        "the others keep the job's class"
    );
}

#[test]
fn wait_for_starts_the_waiter_when_its_waitee_is_done_while_others_run() {
    let specs = jobs(
        "[w]\nrw=write\nbs=4k\nsize=8k\n[long]\nrw=read\nbs=4k\nsize=64k\n\
         [r]\nwait_for=w\nrw=read\nbs=4k\nsize=4k\n",
    );
    assert_eq!(specs[2].wait_for, Some(0));
    let mut r = whole_runner(&specs);
    let mut p = Script::default();
    r.start_group(0, 0, &mut p);
    assert_eq!(p.wakes, vec![(0, 0), (1, 0)], "r waits; w and long start");
    assert_eq!(r.active(), 3, "the waiting thread keeps the group open");
    r.wake(0, 0, &mut p);
    r.wake(1, 0, &mut p);
    let mut t = 0;
    let mut r_start = None;
    while let Some((th, req)) = (!p.submits.is_empty()).then(|| p.submits.remove(0)) {
        t += 10;
        r.complete(th, &finished(&req, 0, t, IoClass::Normal), t, None, &mut p);
        if r_start.is_none() && p.wakes.iter().any(|w| w.0 == 2) {
            r_start = Some(t);
            r.wake(2, t, &mut p);
        }
    }
    let w_done = p.done.iter().find(|d| d.0 == 0).expect("w done").1;
    assert_eq!(r_start, Some(w_done), "r starts when w's last I/O is done");
    assert_eq!(r.start_ns(2), w_done);
    assert!(
        p.done.iter().find(|d| d.0 == 1).unwrap().1 > w_done,
        "long still ran when r started"
    );
    assert!(p.done.iter().any(|d| d.0 == 2), "r ran");
    assert_eq!(r.group(), 1);
}

#[test]
fn token_flows_keep_the_jobs_io_counts_in_the_ratio_of_their_weights() {
    let run = |extra: &str| {
        let specs = jobs(&format!(
            "[global]\nrw=randread\nbs=4k\nsize=1m\nio_size=100m\n{extra}\n\
             [a]\nflow=3\n[b]\nflow=1\n"
        ));
        let mut r = whole_runner(&specs);
        let mut p = Script::default();
        r.start_group(0, 0, &mut p);
        let mut t = 0;
        let mut counts = [0u32; 2];
        for _ in 0..4000 {
            // Wake whoever asked, then complete the oldest request.
            let wakes = std::mem::take(&mut p.wakes);
            for (th, at) in wakes {
                r.wake(th, at.max(t), &mut p);
            }
            if p.submits.is_empty() {
                continue;
            }
            let (th, req) = p.submits.remove(0);
            counts[th as usize] += 1;
            // Depth 1 each, completed in order: without flow control they alternate 1:1.
            t += if th == 0 { 50 } else { 10 };
            r.complete(th, &finished(&req, 0, t, IoClass::Normal), t, None, &mut p);
        }
        counts
    };
    let [a, b] = run("");
    let ratio = a as f64 / b as f64;
    assert!((2.7..3.3).contains(&ratio), "a {a}, b {b}: 3:1 expected");
    let [a2, b2] = run("flow_sleep=100");
    assert!(
        (2.5..3.5).contains(&(a2 as f64 / b2 as f64)),
        "with flow_sleep: a {a2}, b {b2}"
    );
}

#[test]
fn latency_target_starts_at_depth_one_and_the_search_ends_the_thread() {
    let run = |extra: &str| {
        let specs = jobs(&format!(
            "[a]\nrw=randread\nbs=4k\nsize=1m\nio_size=64m\niodepth=16\n{extra}\n"
        ));
        let mut r = whole_runner(&specs);
        let mut p = Script::default();
        r.start_group(0, 0, &mut p);
        r.wake(0, 0, &mut p);
        let first = p.submits.len();
        let (mut t, mut n, mut max_in_flight) = (1_000_000, 0u64, 0usize);
        while !p.submits.is_empty() && n < 20_000 {
            max_in_flight = max_in_flight.max(p.submits.len());
            // Latency grows with the depth: 300 ns per request in flight.
            let lat = 300 * p.submits.len() as u64;
            let (th, req) = p.submits.remove(0);
            t += lat / 4;
            r.complete(
                th,
                &finished(&req, t - lat, t, IoClass::Normal),
                t,
                None,
                &mut p,
            );
            n += 1;
        }
        (first, max_in_flight, n)
    };
    assert_eq!(run("").0, 16, "without a target: the full depth at once");
    let (first, max, n) = run("latency_target=1us\nlatency_window=20us\n");
    assert_eq!(first, 1, "the search starts at depth 1");
    assert!(
        max <= 4,
        "1 µs allows 3 in flight (300 ns each): at most {max}"
    );
    assert!(
        n < 16_384,
        "the thread ended when its depth was found ({n} I/Os)"
    );
}

/// fio's depth maps: the first turn fills the depth (one submission of 4 I/Os at
/// depths 1–4), each completion then issues one (a submission of 1 at depth 4); two
/// completions reaped at one instant are one reaping.
#[test]
fn the_depth_maps_count_as_fios() {
    let specs = jobs("[a]\nrw=read\nbs=4k\nsize=32k\niodepth=4\n");
    let mut r = whole_runner(&specs);
    let mut p = Script::default();
    r.start_group(0, 0, &mut p);
    assert!(r.wake(0, 0, &mut p));
    assert_eq!(p.submits.len(), 4);
    // Reap two at t = 10 (each issues one), then the rest one at a time.
    let mut t = 10;
    let mut reaped = 0;
    while let Some((th, req)) = (!p.submits.is_empty()).then(|| p.submits.remove(0)) {
        if reaped >= 2 {
            t += 10;
        }
        reaped += 1;
        r.complete(th, &finished(&req, 0, t, IoClass::Normal), t, None, &mut p);
    }
    let facts: Vec<_> = r.queue_facts().collect();
    assert_eq!(facts.len(), 1);
    let (job, thread, d, lat) = &facts[0];
    assert_eq!((*job, *thread, *lat), (0, 0, None));
    // 8 I/Os: depths 1, 2, 3, 4 at the start (buckets 1, 2–3, 4–7), then 4 more each
    // at depth 4.
    assert_eq!(d.level, [1, 2, 5, 0, 0, 0, 0]);
    // Submissions: the start's 4 (bucket 1–4) and one per completion that issued.
    assert_eq!(d.submit, [0, 5, 0, 0, 0, 0, 0]);
    // Reapings: the two at t = 10 as one, the other six alone: 7 of 1–4.
    assert_eq!(d.complete, [0, 7, 0, 0, 0, 0, 0]);
    let mut c = sluice_metrics::Collector::new(sluice_metrics::RunSetup::for_jobs(
        &specs,
        &[sluice_core::Flow {
            id: FlowId(0),
            name: "a".into(),
            weight: 1,
        }],
        &flows(&specs),
        None,
    ));
    r.report_queue_facts(&mut c);
    let rep = c.finish(t, "none");
    assert_eq!(rep.jobs[0].iodepth_level.0[2], ("4", 62.5));
    assert_eq!(rep.jobs[0].latency.latency_depth, 4);
}

/// Run `text`'s one job over the scripted port, failing every `fail_every`-th I/O
/// that is a write; each recorded sample's `ok`, in order.
fn run_failing_writes(text: &str, fail_every: usize) -> Vec<bool> {
    let specs = jobs(text);
    let mut r = whole_runner(&specs);
    let mut p = Script::default();
    r.start_group(0, 0, &mut p);
    r.wake(0, 0, &mut p);
    let (mut t, mut n) = (0, 0);
    while let Some((th, req)) = (!p.submits.is_empty()).then(|| p.submits.remove(0)) {
        t += 10;
        n += 1;
        let mut f = finished(&req, 0, t, IoClass::Normal);
        f.ok = !(req.op == Op::Write && n % fail_every == 0);
        r.complete(th, &f, t, None, &mut p);
    }
    p.samples.iter().map(|s| s.ok).collect()
}

#[test]
fn a_failed_io_ends_the_thread_unless_continue_on_error_names_it() {
    let job = "[a]\nrw=randrw\nbs=4k\nsize=1m\niodepth=4\n";
    // fio's default (none): the thread stops at the first failed write; only what it
    // had in flight (at most iodepth − 1 more) completes after it.
    let oks = run_failing_writes(job, 10);
    let first = oks.iter().position(|ok| !ok).expect("a write failed");
    assert!(
        oks.len() - first <= 4,
        "{} I/Os after the first failure",
        oks.len() - first - 1
    );
    assert!(oks.len() < 256);
    // Writes named: it does its whole 1 MiB, every failure counted.
    for v in ["write", "io", "all", "1"] {
        let oks = run_failing_writes(&format!("{job}continue_on_error={v}\n"), 10);
        assert_eq!(oks.len(), 256, "continue_on_error={v}");
        assert!(
            oks.iter().filter(|ok| !**ok).count() >= 10,
            "continue_on_error={v}"
        );
    }
    // Only reads named: a failed write still ends it.
    let oks = run_failing_writes(&format!("{job}continue_on_error=read\n"), 10);
    assert!(
        oks.len() < 256,
        "continue_on_error=read: {} I/Os",
        oks.len()
    );
}

#[test]
fn exitall_on_one_job_is_for_every_job_and_exit_what_names_whom_it_ends() {
    // fio's `exitall` is one flag of the run (`exitall_on_terminate`): b's `exitall`
    // makes a's end end the others too.
    let specs = jobs("[a]\nrw=read\nbs=4k\nsize=8k\n[b]\nrw=read\nbs=4k\nsize=1m\nexitall\n");
    let mut r = whole_runner(&specs);
    let mut p = Script::default();
    r.start_group(0, 0, &mut p);
    r.end_job(0, 1_000, &mut p);
    assert_eq!(p.exits, vec![(0, vec![1])]);
    // exit_what=group (the default) ends the reporting group, which `new_group`
    // splits; `stonewall` ends every job running (the stonewall group).
    let file = "[global]\nrw=read\nbs=4k\nsize=1m\nexitall\n[a]\n[b]\nnew_group\n[c]\n";
    let specs = jobs(file);
    let mut r = whole_runner(&specs);
    let mut p = Script::default();
    r.start_group(0, 0, &mut p);
    r.end_job(0, 1_000, &mut p);
    assert!(p.exits.is_empty(), "a is alone in its reporting group");
    r.end_job(1, 2_000, &mut p);
    assert_eq!(p.exits, vec![(1, vec![2])]);
    let specs = jobs(&file.replace("[a]\n", "[a]\nexit_what=stonewall\n"));
    let mut r = whole_runner(&specs);
    let mut p = Script::default();
    r.start_group(0, 0, &mut p);
    r.end_job(0, 1_000, &mut p);
    assert_eq!(p.exits, vec![(0, vec![1, 2])]);
}
