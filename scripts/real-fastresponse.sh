#!/usr/bin/env bash
# Issue 6, real device: FastResponse (ICS '22) experiment 1, the block part of Fig. 12
# with the Terasort-like co-runner (jobs/real/fr-terasort.fio: the jobs of
# experiments/fastresponse-block/fig12-terasort.fio on one 1 GiB file): a critical
# 4 KB random reader at 2000 req/s beside bursty 128 KB reads and writes, under none,
# mq-deadline, kyber, ld and rcp (--workers 1: one policy instance sees every request,
# as the kernel's one scheduler per device).
# Goal: ld's critical p99 at most 0.5 x none's; the co-runner's throughput loss
# (1 - its read+write bytes/s / none's) is reported.
#
#   scripts/real-fastresponse.sh         ROUNDS=3 RUNTIME=10 (about 3 minutes)
#
# Prints medians over ROUNDS of the critical reader's mean, p50, p99, p99.9 and its
# device part, and the co-runner's throughput, and pass/fail of the goal.
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-10}
source "$(dirname "$0")/real-lib.sh"
POLICIES=${POLICIES:-none,mq-deadline,kyber,ld,rcp}

real_job jobs/real/fr-terasort.fio "$WORK/fr.fio"
real_machine
echo "== $ROUNDS rounds x ($POLICIES), ${RUNTIME}s each, --workers 1"
for r in $(seq 1 "$ROUNDS"); do
    real_run "$WORK/fr.fio" "$WORK/fr.r$r.json" "$POLICIES" --workers 1
    echo "   round $r done"
done

python3 - "$WORK" "$ROUNDS" "$POLICIES" <<'PY'
import json, statistics, sys


def with_jobs(d):
    """sluice's JSON: each run of `runs` with its jobs (fio's `jobs`, by groupid)."""
    return [dict(r, jobs=[j for j in d["jobs"] if j["groupid"] == i]) for i, r in enumerate(d["runs"])]
work, rounds, pols = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
med = statistics.median
rows = {p: [] for p in pols}
for r in range(1, rounds + 1):
    for run in with_jobs(json.load(open(f"{work}/fr.r{r}.json"))):
        crit = next(c for c in run["classes"] if c["class"] == "critical")
        lat = crit["lat_ns"]
        co = [j for j in run["jobs"] if j["class"] != "critical"]
        bw = sum(j["read"]["bw_bytes"] + j["write"]["bw_bytes"] for j in co)
        co_lat = [j[d]["lat_ns"]["mean"] for j in co for d in ("read", "write") if j[d]["lat_ns"]["N"]]
        rows[run["policy"]].append({
            "iops": crit["iops"], "mean": lat["mean"], "p50": lat["percentile"]["50.000000"],
            "p99": lat["percentile"]["99.000000"], "p999": lat["percentile"]["99.900000"],
            "dev": crit["device_ns"]["mean"], "sched": crit["sched_ns"]["mean"],
            "bw": bw, "co_lat": max(co_lat)})
m = {p: {k: med([x[k] for x in rows[p]]) for k in rows[p][0]} for p in pols}
base = m.get("none")
us = lambda ns: f"{ns / 1000:.0f} µs"
print()
print("| policy | critical IOPS | mean | p50 | p99 | p99.9 | device part (mean) | p99 / none's |"
      " co-runner MiB/s | throughput loss | co-runner mean lat (slowest job) |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for p in pols:
    x = m[p]
    rel = x["p99"] / base["p99"] if base else float("nan")
    loss = 1 - x["bw"] / base["bw"] if base else float("nan")
    print(f"| {p} | {x['iops']:.0f} | {us(x['mean'])} | {us(x['p50'])} | {us(x['p99'])} | "
          f"{us(x['p999'])} | {us(x['dev'])} | {rel:.2f} | {x['bw'] / 2**20:.0f} | {loss:+.1%} | "
          f"{x['co_lat'] / 1e6:.2f} ms |")
print("\nper-round critical p99 (µs): " + "; ".join(
    f"{p} " + "/".join(f"{x['p99'] / 1000:.0f}" for x in rows[p]) for p in pols))
if base and "ld" in m:
    rel = m["ld"]["p99"] / base["p99"]
    ok = rel <= 0.5
    print(f"goal: ld's critical p99 ≤ 0.5 × none's: {rel:.2f} → {'pass' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)
PY
