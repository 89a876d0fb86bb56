#!/usr/bin/env bash
# Issue 4 item 6 (D2FQ FAST '21, Fig. 16 and Fig. 12): the CPU cost of scheduling on
# the real engine — nanoseconds per I/O spent inside the policy's calls (admit,
# enqueue, dispatch, complete, timer), as the engine measures them with the TSC around
# each call (extra.policy_ns_per_io; the brackets' own cost subtracted; docs/engine.md)
# — for none, d2fq, mqfq and bfq (max_budget=256, as in the D2FQ experiments), at one
# flow with QD 1, 2, 4, 8, 16 (8 KB random reads, as Fig. 16) and at the Fig. 11 loads
# (jobs/real/cpu-*.fio), all with --workers 1 on a 1 GiB file.
# Goal: d2fq adds at most 0.55 x what mqfq adds over none, in every case.
#
#   scripts/real-policy-cpu.sh                 ROUNDS=5 RUNTIME=1 (about 4 minutes)
#   ROUNDS=7 RUNTIME=2 DATA_DIR=/mnt/x scripts/real-policy-cpu.sh
#
# Prints per case the medians over ROUNDS of policy ns/I/O, the adds over none, their
# ratio and pass/fail; also the process CPU per I/O (user+sys) and IOPS, for context.
# Exit status 1 if a case fails.
ROUNDS=${ROUNDS:-5}
RUNTIME=${RUNTIME:-1}
source "$(dirname "$0")/real-lib.sh"
POLICIES=none,d2fq,mqfq,bfq:max_budget=256

CASES=()
for qd in 1 2 4 8 16; do
    real_job jobs/real/cpu-1flow.fio "$WORK/1flow-qd$qd.fio" "$qd"
    CASES+=("1flow-qd$qd")
done
for f in fig11a fig11b fig11c; do
    real_job "jobs/real/cpu-$f.fio" "$WORK/$f.fio"
    CASES+=("$f")
done

real_machine
echo "== $ROUNDS rounds x ${#CASES[@]} cases x 4 policies, ${RUNTIME}s each"
for r in $(seq 1 "$ROUNDS"); do
    for c in "${CASES[@]}"; do
        real_run "$WORK/$c.fio" "$WORK/$c.r$r.json" "$POLICIES" --workers 1
    done
    echo "   round $r done"
done

python3 - "$WORK" "$ROUNDS" "${CASES[@]}" <<'PY'
import json, statistics, sys


def with_jobs(d):
    """sluice's JSON: each run of `runs` with its jobs (fio's `jobs`, by groupid)."""
    return [dict(r, jobs=[j for j in d["jobs"] if j["groupid"] == i]) for i, r in enumerate(d["runs"])]
work, rounds, cases = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
pols = ["none", "d2fq", "mqfq", "bfq:max_budget=256"]
label = {"1flow-qd1": "1 flow QD1", "1flow-qd2": "1 flow QD2", "1flow-qd4": "1 flow QD4",
         "1flow-qd8": "1 flow QD8", "1flow-qd16": "1 flow QD16",
         "fig11a": "Fig. 11a 4K vs 8K, 4+4 thr x QD16",
         "fig11b": "Fig. 11b 2 vs 6 thr 8K x QD16",
         "fig11c": "Fig. 11c 8:6:4:2, 2 thr each x QD16"}
med = statistics.median
print()
print("| case | none | d2fq | mqfq | bfq | d2fq − none | mqfq − none | ratio | goal ≤ 0.55 |"
      " IOPS none/d2fq/mqfq/bfq | process CPU/I/O none/d2fq/mqfq/bfq |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
fails = 0
overhead, calls = [], {}
for c in cases:
    v = {p: [] for p in pols}
    iops = {p: [] for p in pols}
    cpu = {p: [] for p in pols}
    for r in range(1, rounds + 1):
        for run in with_jobs(json.load(open(f"{work}/{c}.r{r}.json"))):
            e = run["extra"]
            p = run["policy"]
            v[p].append(e["policy_ns_per_io"])
            iops[p].append(sum(j["read"]["iops"] + j["write"]["iops"] for j in run["jobs"]))
            cpu[p].append(e["cpu_ns_per_io"])
            overhead.append(e["policy_timing_overhead_ns"])
            calls.setdefault(p, []).append(e["policy_calls_per_io"])
    m = {p: med(v[p]) for p in pols}
    d2, mq = m["d2fq"] - m["none"], m["mqfq"] - m["none"]
    ratio = d2 / mq if mq > 0 else float("inf")
    ok = ratio <= 0.55
    fails += not ok
    print(f"| {label.get(c, c)} | {m['none']:.0f} | {m['d2fq']:.0f} | {m['mqfq']:.0f} | "
          f"{m['bfq:max_budget=256']:.0f} | {d2:+.0f} | {mq:+.0f} | {ratio:.2f} | "
          f"{'pass' if ok else 'FAIL'} | "
          + " / ".join(f"{med(iops[p]):.0f}" for p in pols) + " | "
          + " / ".join(f"{med(cpu[p]) / 1000:.1f} µs" for p in pols) + " |")
print()
print(f"policy ns/I/O: medians of {rounds} rounds; the TSC bracket costs "
      f"{med(overhead):.1f} ns per call (subtracted); calls per I/O (median): "
      + ", ".join(f"{p.split(':')[0]} {med(calls[p]):.2f}" for p in pols))
print(f"{len(cases) - fails}/{len(cases)} cases pass")
sys.exit(1 if fails else 0)
PY
