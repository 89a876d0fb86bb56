#!/usr/bin/env python3
"""The tables of scripts/real-postgres.sh: OUT ROUNDS RATE MODE..."""
import glob
import json
import os
import re
import statistics
import sys

out, rounds, rate, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
med = statistics.median


def tps(path):
    m = re.search(r"tps = ([0-9.]+)", open(path).read())
    return float(m.group(1)) if m else float("nan")


def pct(sorted_v, p):
    if not sorted_v:
        return float("nan")
    i = min(len(sorted_v) - 1, int(round(p / 100 * (len(sorted_v) - 1))))
    return sorted_v[i]


def txlog(tag):
    """Per-transaction latencies (ms): from the scheduled start (pgbench -R's `time`,
    which includes the schedule lag), and the service time (`time` - `schedule_lag`)."""
    lat, lag = [], []
    for f in glob.glob(f"{out}/{tag}.txlog.*"):
        for line in open(f):
            c = line.split()
            if len(c) < 6 or c[2] == "failed" or c[2] == "skipped":
                continue
            t = int(c[2]) / 1000
            lat.append(t)
            lag.append(t - (int(c[6]) / 1000 if len(c) > 6 else 0))
    return sorted(lat), sorted(lag)


def pgstat(tag):
    d = {}
    for line in open(f"{out}/{tag}.pgstat"):
        k, _, v = line.strip().partition(" ")
        d[k] = v
    timed, req = (int(x) for x in d["stat"].split("|")[:2])
    return {
        "wal_mb": int(d["wal_bytes"].split(".")[0]) / 2**20,
        "pg_wal_mb": int(d["pg_wal_bytes"]) / 2**20,
        "ckpt": int(d["ckpt_complete"]),
        "ckpt_started": int(d["ckpt_started"]),
        "ckpt_stat": timed + req,
        "load": float(d["load"]),
    }


def mount_json(tag):
    p = f"{out}/mount-{tag}.json"
    return json.load(open(p)) if os.path.exists(p) else None


rows = {}
for m in modes:
    r_tput = [tps(f"{out}/tput-{m}-r{r}.pgbench") for r in range(1, rounds + 1)]
    per = []
    for r in range(1, rounds + 1):
        tag = f"rate-{m}-r{r}"
        lat, lag = txlog(tag)
        s = pgstat(tag)
        per.append(
            {
                "tps": tps(f"{out}/{tag}.pgbench"),
                "p50": pct(lat, 50),
                "p99": pct(lat, 99),
                "p999": pct(lat, 99.9),
                "svc99": pct(lag, 99),
                "n": len(lat),
                **s,
            }
        )
    row = {k: med([p[k] for p in per]) for k in per[0]}
    row["tput"] = med(r_tput)
    row["tput_all"] = r_tput
    row["p99_all"] = [p["p99"] for p in per]
    row["svc99_all"] = [p["svc99"] for p in per]
    rows[m] = row

print(f"pgbench TPC-B-like; medians over {rounds} rounds; latency runs at -R {rate}")
print("p50/p99/p99.9: from each transaction's scheduled start (pgbench -R's latency, with")
print("the schedule lag); service p99: without the lag. checkpoints: 'checkpoint starting'")
print("and 'checkpoint complete' lines of the server log during pgbench; stat:")
print("pg_stat_bgwriter's checkpoints_timed + checkpoints_req (requested, not completed).")
print()
print("| config | unlimited tps | rate-run tps | p50 ms | p99 ms | p99.9 ms | service p99 ms | "
      "checkpoints started / completed / stat | WAL written MB | pg_wal MB | p99 per round |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for m, r in rows.items():
    print(f"| {m} | {r['tput']:.0f} | {r['tps']:.0f} | {r['p50']:.2f} | {r['p99']:.2f} | "
          f"{r['p999']:.2f} | {r['svc99']:.2f} | {r['ckpt_started']:.0f} / {r['ckpt']:.0f} / {r['ckpt_stat']:.0f} | "
          f"{r['wal_mb']:.0f} | {r['pg_wal_mb']:.0f} | "
          f"{' '.join(f'{x:.2f}' for x in r['p99_all'])} |")
print()

# Where the time went on the mount: per class and flow (the rate runs' --json).
print("On the mount, rate runs (round 1): I/O per flow (class) from --json at unmount")
print("| config | flow | class | op | IOs | MiB | p50 µs | p99 µs | p99.9 µs |")
print("|---|---|---|---|---|---|---|---|---|")
for m in modes:
    d = mount_json(f"rate-{m}-r1")
    if not d:
        continue
    for j in d["jobs"]:
        if not j["flow"].startswith("pg-"):
            continue
        op = j["jobname"].rsplit("/", 1)[1]
        x = j.get(op)
        if not isinstance(x, dict) or not x.get("total_ios"):
            continue
        pc = x["lat_ns"].get("percentile", {})
        print(f"| {m} | {j['flow']} | {j['class']} | {op} | {x['total_ios']} | "
              f"{x['io_bytes'] / 2**20:.1f} | {pc.get('50.000000', 0) / 1000:.0f} | "
              f"{pc.get('99.000000', 0) / 1000:.0f} | {pc.get('99.900000', 0) / 1000:.0f} |")
print()
print("Daemon stages per class, rate runs (round 1; SLUICE_MOUNT_TRACE=1), p50/p99 µs")
for m in modes:
    p = f"{out}/mount-rate-{m}-r1.err"
    if os.path.exists(p):
        for line in open(p):
            if line.startswith("trace "):
                print(f"  {m}: {line.strip()}")
print()


def waits(tag):
    """The backends' waits during the run's worst stall: the second in which most of
    the slowest 1 % of transactions completed, and the 1.5 s before it."""
    rows_ = []
    for f in glob.glob(f"{out}/{tag}.txlog.*"):
        for line in open(f):
            c = line.split()
            if len(c) >= 6 and c[2].isdigit():
                rows_.append((int(c[4]) + int(c[5]) / 1e6, int(c[2])))
    wf = f"{out}/{tag}.waits"
    if not rows_ or not os.path.exists(wf):
        return None
    lat = sorted(r[1] for r in rows_)
    p99 = lat[int(0.99 * (len(lat) - 1))]
    per_sec = {}
    for t, l in rows_:
        if l >= p99:
            per_sec[int(t)] = per_sec.get(int(t), 0) + 1
    sec = max(per_sec, key=per_sec.get)
    lo, hi = sec - 1.5, sec + 1
    hist, allh = {}, {}
    for line in open(wf):
        c = line.split()
        t = float(c[0])
        k = f"{c[2]} {c[3]} {c[4]}"
        allh[k] = allh.get(k, 0) + 1
        if lo <= t < hi:
            hist[k] = hist.get(k, 0) + 1
    return per_sec[sec], hist, allh


def top(h, n=5):
    tot = sum(h.values()) or 1
    return ", ".join(f"{k} {v / tot:.0%}" for k, v in sorted(h.items(), key=lambda x: -x[1])[:n])


print("Where the backends waited (state, system call, kernel function; samples every 25 ms)")
for m in modes:
    for r in range(1, rounds + 1):
        w = waits(f"rate-{m}-r{r}")
        if w:
            n, hist, allh = w
            print(f"  {m} r{r}: worst stall ({n} of the slowest 1 % finished in one second): {top(hist)}")
            print(f"  {m} r{r}: whole run: {top(allh)}")
print()

g = []
if "none" in rows and "rcp" in rows:
    n, c = rows["none"], rows["rcp"]
    g.append(("rcp p99 <= 0.5 x none's p99 (mount)", c["p99"] <= 0.5 * n["p99"],
              f"{c['p99']:.2f} vs {n['p99']:.2f} ms ({c['p99'] / n['p99']:.2f}x)"))
    g.append(("rcp unlimited tps >= 0.95 x none's", c["tput"] >= 0.95 * n["tput"],
              f"{c['tput']:.0f} vs {n['tput']:.0f} ({c['tput'] / n['tput']:.2f}x)"))
    g.append(("rcp checkpoints as frequent as none's", c["ckpt"] >= n["ckpt"],
              f"{c['ckpt']:.0f} vs {n['ckpt']:.0f} completed"))
if "kernel" in rows and "rcp" in rows:
    k, c = rows["kernel"], rows["rcp"]
    g.append(("rcp p99 < kernel's p99 (direct)", c["p99"] < k["p99"],
              f"{c['p99']:.2f} vs {k['p99']:.2f} ms"))
if "none" in rows and "rcp" in rows:
    pairs = zip(rows["rcp"]["p99_all"], rows["none"]["p99_all"])
    print("rcp p99 / none's p99, round by round: "
          + " ".join(f"{c / n:.2f}" for c, n in pairs))
    pairs = zip(rows["rcp"]["svc99_all"], rows["none"]["svc99_all"])
    print("rcp service p99 / none's, round by round: "
          + " ".join(f"{c / n:.2f}" for c, n in pairs))
for name, ok, why in g:
    print(f"goal {'MET' if ok else 'NOT met'}: {name}: {why}")
