#!/usr/bin/env bash
# Issue 10, real device: one block layer per device whatever the number of engine
# workers. Two checks on this machine's disk, each with the default worker count
# (min(cores, job threads)) and, for contrast, --workers 1:
#  1. D2FQ's weighted shares: jobs/real/d2fq-weights.fio (flows 8:6:4:2, QD32 each) with
#     --ring-cap RING_CAP (default 32), so the software WRR arbiter decides.
#     Goal: every d2fq flow's share within 10 % (relative) of its weight share.
#  2. LD's token bound: jobs/real/ld-tokens.fio (four non-critical QD32 readers).
#     Goal: under ld the peak of pieces in flight (extra.block.peak_inflight) ≤ 8.
#
#   scripts/real-one-block-layer.sh          ROUNDS=3 RUNTIME=3 (about 1.5 minutes)
#
# Prints medians over ROUNDS; exits 1 if a goal fails.
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-3}
RING_CAP=${RING_CAP:-32}
source "$(dirname "$0")/real-lib.sh"

real_job jobs/real/d2fq-weights.fio "$WORK/w.fio"
real_job jobs/real/ld-tokens.fio "$WORK/ld.fio"
real_machine
for r in $(seq 1 "$ROUNDS"); do
    for w in default 1; do
        wflag=()
        [ "$w" = 1 ] && wflag=(--workers 1)
        real_run "$WORK/w.fio" "$WORK/w.$w.r$r.json" d2fq,none --ring-cap "$RING_CAP" "${wflag[@]}"
        real_run "$WORK/ld.fio" "$WORK/ld.$w.r$r.json" ld,none "${wflag[@]}"
    done
    echo "   round $r done"
done

python3 - "$WORK" "$ROUNDS" <<'PY'
import json, statistics, sys


def with_jobs(d):
    """sluice's JSON: each run of `runs` with its jobs (fio's `jobs`, by groupid)."""
    return [dict(r, jobs=[j for j in d["jobs"] if j["groupid"] == i]) for i, r in enumerate(d["runs"])]
work, rounds = sys.argv[1], int(sys.argv[2])
med = statistics.median
fail = False
def runs(name, w):
    out = {}
    for r in range(1, rounds + 1):
        for run in with_jobs(json.load(open(f"{work}/{name}.{w}.r{r}.json"))):
            out.setdefault(run["policy"], []).append(run)
    return out
print("\n1. D2FQ weighted shares (flows 8:6:4:2), medians of", rounds, "rounds")
print("| workers | policy | w8 | w6 | w4 | w2 | max share error | MiB/s | goal (d2fq ≤ 10 %) |")
print("|---|---|---|---|---|---|---|---|---|")
for w in ["default", "1"]:
    rs = runs("w", w)
    for p in ["d2fq", "none"]:
        nw = rs[p][0]["extra"]["workers"]
        flows = [f["name"] for f in rs[p][0]["flows"]]
        share = {f: med([next(x for x in run["flows"] if x["name"] == f)["share"] for run in rs[p]]) for f in flows}
        ws = {f["name"]: f["weight_share"] for f in rs[p][0]["flows"]}
        worst = max(abs(share[f] / ws[f] - 1) for f in flows)
        mib = med([sum(x["bw_bytes"] for x in run["flows"]) for run in rs[p]]) / 2**20
        goal = ""
        if p == "d2fq":
            goal = "pass" if worst <= 0.10 else "FAIL"
            fail |= worst > 0.10
        cells = " | ".join(f"{share[f]:.3f} ({share[f]/ws[f]-1:+.1%})" for f in flows)
        print(f"| {nw} ({w}) | {p} | {cells} | {worst:.1%} | {mib:.0f} | {goal} |")
print("\n2. LD's token pool (8 tokens), four QD32 readers, medians of", rounds, "rounds")
print("| workers | policy | peak pieces in flight | IOPS | mean latency | goal (ld ≤ 8) |")
print("|---|---|---|---|---|---|")
for w in ["default", "1"]:
    rs = runs("ld", w)
    for p in ["ld", "none"]:
        nw = rs[p][0]["extra"]["workers"]
        peak = med([run["extra"]["block"]["peak_inflight"] for run in rs[p]])
        iops = med([sum(j["read"]["iops"] for j in run["jobs"]) for run in rs[p]])
        lat = med([statistics.mean(j["read"]["lat_ns"]["mean"] for j in run["jobs"]) for run in rs[p]]) / 1e3
        goal = ""
        if p == "ld":
            worst = max(run["extra"]["block"]["peak_inflight"] for run in rs[p])
            goal = "pass" if worst <= 8 else "FAIL"
            fail |= worst > 8
        print(f"| {nw} ({w}) | {p} | {peak:.0f} | {iops:.0f} | {lat:.0f} µs | {goal} |")
sys.exit(1 if fail else 0)
PY
