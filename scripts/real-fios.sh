#!/usr/bin/env bash
# Issue 5, real device: FIOS's 1 reader + 1 writer (4 KB) and 4 KB reader vs 128 KB
# reader (jobs/real/fios-*.fio) on this machine's disk under none, fios, quanta, cfq
# and sfqd (--workers 1). Each task's slowdown is its mean latency over its alone-run
# mean latency; the alone-runs (jobs/real/fios-*-alone.fio: each task by itself, one
# after the other) run under none in every round. Also FIOS's concurrent efficiency
# (Eq. 2: sum over tasks of IOPS together / IOPS alone). The definitions are those of
# sluice_metrics::fios_figures. No pass/fail: the disk is what it is; the proportional
# slowdown (2 tasks) is printed beside each task for reference.
#
#   scripts/real-fios.sh              ROUNDS=3 RUNTIME=3 (about 3 minutes)
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-3}
source "$(dirname "$0")/real-lib.sh"
POLICIES=${POLICIES:-none,fios,quanta,cfq,sfqd}

for c in fios-r1w1 fios-r4k-r128k; do
    real_job "jobs/real/$c.fio" "$WORK/$c.fio"
    real_job "jobs/real/$c-alone.fio" "$WORK/$c-alone.fio"
done
real_machine
echo "== $ROUNDS rounds x 2 cases x ($POLICIES) + alone-runs, ${RUNTIME}s each, --workers 1"
for r in $(seq 1 "$ROUNDS"); do
    for c in fios-r1w1 fios-r4k-r128k; do
        real_run "$WORK/$c-alone.fio" "$WORK/$c-alone.r$r.json" none --workers 1
        real_run "$WORK/$c.fio" "$WORK/$c.r$r.json" "$POLICIES" --workers 1
    done
    echo "   round $r done"
done

python3 - "$WORK" "$ROUNDS" "$POLICIES" <<'PY'
import json, statistics, sys


def with_jobs(d):
    """sluice's JSON: each run of `runs` with its jobs (fio's `jobs`, by groupid)."""
    return [dict(r, jobs=[j for j in d["jobs"] if j["groupid"] == i]) for i, r in enumerate(d["runs"])]
work, rounds = sys.argv[1], int(sys.argv[2])
# The policies as the runs name them (a spec with parameters holds commas itself, so the
# list is read from the results rather than split from the command line).
pols = []
med = statistics.median

def lat_iops(job):
    n = sum(job[d]["lat_ns"]["N"] for d in ("read", "write", "sync"))
    s = sum(job[d]["lat_ns"]["mean"] * job[d]["lat_ns"]["N"] for d in ("read", "write", "sync"))
    return s / n, sum(job[d]["iops"] for d in ("read", "write", "sync"))

# A round's alone-run is one noisy sample of the disk, so the slowdown is taken from
# the medians over rounds: median concurrent latency / median alone latency (and the
# per-round ratios are printed too).
for c, title in (("fios-r1w1", "1 reader + 1 writer, 4 KB"),
                 ("fios-r4k-r128k", "4 KB reader + 128 KB reader")):
    alone, conc, per_round = {}, {}, {}
    for r in range(1, rounds + 1):
        a = {j["jobname"]: lat_iops(j) for j in json.load(open(f"{work}/{c}-alone.r{r}.json"))["jobs"]}
        for t, v in a.items():
            alone.setdefault(t, []).append(v)
        for run in with_jobs(json.load(open(f"{work}/{c}.r{r}.json"))):
            p = run["policy"]
            if p not in pols:
                pols.append(p)
            conc.setdefault(p, {})
            per_round.setdefault(p, {})
            for j in run["jobs"]:
                t = j["jobname"]
                v = lat_iops(j)
                conc[p].setdefault(t, []).append(v)
                per_round[p].setdefault(t, []).append(v[0] / a[t][0])
    tasks = list(alone)
    a_lat = {t: med([x[0] for x in alone[t]]) for t in tasks}
    a_iops = {t: med([x[1] for x in alone[t]]) for t in tasks}
    print(f"\n{title}: alone (none) mean latency " + ", ".join(
        f"{t} {a_lat[t] / 1000:.0f} µs ({a_iops[t]:.0f} IOPS)" for t in tasks))
    print("\n| policy | " + " | ".join(f"{t}: slowdown (mean lat)" for t in tasks)
          + " | proportional slowdown | concurrent efficiency (Eq. 2) |")
    print("|---|" + "---|" * (len(tasks) + 2))
    for p in pols:
        lat = {t: med([x[0] for x in conc[p][t]]) for t in tasks}
        eff = sum(med([x[1] for x in conc[p][t]]) / a_iops[t] for t in tasks)
        print(f"| {p} | " + " | ".join(
            f"{lat[t] / a_lat[t]:.2f} ({lat[t] / 1000:.0f} µs)" for t in tasks)
            + f" | {len(tasks)} | {eff:.2f} |")
    print("per-round slowdowns (against that round's alone-run): " + "; ".join(
        f"{p}: " + ", ".join(f"{t} " + "/".join(f"{x:.2f}" for x in per_round[p][t]) for t in tasks)
        for p in pols))
PY
