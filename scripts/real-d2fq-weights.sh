#!/usr/bin/env bash
# Issue 4, real device: D2FQ's weighted fairness on this machine's disk. Four flows with
# weights 8, 6, 4, 2, one thread each reading 8 KB at random at QD32
# (jobs/real/d2fq-weights.fio), --workers 1 (one policy instance sees every flow) and
# --ring-cap RING_CAP (default 32): D2FQ only picks a queue class per request, and the
# engine's software WRR arbiter (H,M,L = 252,126,42) reorders only when more is offered
# (128) than the ring may hold. none and mqfq run beside it for contrast.
# Goal: under d2fq each flow's bandwidth share within 10 % (relative) of its weight share.
#
#   scripts/real-d2fq-weights.sh             ROUNDS=3 RUNTIME=4 (about 1 minute)
#   RING_CAP=16 ROUNDS=5 scripts/real-d2fq-weights.sh
#
# Prints the median share of each flow over ROUNDS per policy, its error against the
# weight share, and for d2fq the commands each class sent to the ring and the H/L ratio.
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-4}
RING_CAP=${RING_CAP:-32}
source "$(dirname "$0")/real-lib.sh"
POLICIES=${POLICIES:-d2fq,none,mqfq}

real_job jobs/real/d2fq-weights.fio "$WORK/w.fio"
real_machine
echo "== $ROUNDS rounds x ($POLICIES), ${RUNTIME}s each, --workers 1 --ring-cap $RING_CAP"
for r in $(seq 1 "$ROUNDS"); do
    real_run "$WORK/w.fio" "$WORK/w.r$r.json" "$POLICIES" --workers 1 --ring-cap "$RING_CAP"
    echo "   round $r done"
done

python3 - "$WORK" "$ROUNDS" "$POLICIES" <<'PY'
import json, statistics, sys
work, rounds, pols = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
med = statistics.median
runs = {p: [] for p in pols}
for r in range(1, rounds + 1):
    for run in json.load(open(f"{work}/w.r{r}.json"))["runs"]:
        runs[run["policy"]].append(run)
flows = [f["name"] for f in runs[pols[0]][0]["flows"]]
wshare = {f["name"]: f["weight_share"] for f in runs[pols[0]][0]["flows"]}
print()
print("| policy | " + " | ".join(f"{f} share (target {wshare[f]:.2f})" for f in flows)
      + " | max share error | total MiB/s | goal (d2fq ≤ 10 %) |")
print("|---|" + "---|" * (len(flows) + 3))
fail = False
for p in pols:
    share = {f: med([next(x for x in run["flows"] if x["name"] == f)["share"] for run in runs[p]])
             for f in flows}
    err = {f: share[f] / wshare[f] - 1 for f in flows}
    worst = max(abs(e) for e in err.values())
    mib = med([sum(x["bw_bytes"] for x in run["flows"]) for run in runs[p]]) / 2**20
    goal = ""
    if p.split(":")[0] == "d2fq":
        goal = "pass" if worst <= 0.10 else "FAIL"
        fail |= worst > 0.10
    print(f"| {p} | " + " | ".join(f"{share[f]:.3f} ({err[f]:+.1%})" for f in flows)
          + f" | {worst:.1%} | {mib:.0f} | {goal} |")
for p in pols:
    if p.split(":")[0] != "d2fq":
        continue
    last = runs[p][len(runs[p]) // 2]["extra"]
    fetched = last["arbiter_fetched_per_class"]
    print(f"\n{p} (middle round): commands to the ring per class {fetched}, "
          f"fast path {last['arbiter_fast_path']}, H/L ratio {last.get('policy', {}).get('hl_ratio')}")
print("\nper-round max share error:", {p: [f"{max(abs(x['share_error']) for x in run['flows']):.1%}"
                                          for run in runs[p]] for p in pols})
sys.exit(1 if fail else 0)
PY
