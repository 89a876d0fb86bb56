#!/usr/bin/env python3
"""Issue 11 A/B: two builds of examples/rt_randread (BEFORE, AFTER) on the same file,
alternating, ROUNDS rounds of SECS s: IOPS and CPU time (user + system, from
getrusage of the children) per I/O, their medians and the median of the per-round
after/before ratios. For a change of the runtime's I/O path, where `sluice run` or fio
is not the point of comparison.

  scripts/bench-runtime-ab.py BEFORE AFTER DIR CORES ROUNDS SECS [rt_randread options]

DIR must hold data.1g (rt_randread --file data.1g: an existing file, read-only).
"""
import re
import resource
import statistics
import subprocess
import sys

if len(sys.argv) < 7:
    sys.exit(__doc__)
old, new, d, cores, rounds, secs = sys.argv[1:7]
extra = sys.argv[7:]
res = {"before": [], "after": []}
for r in range(int(rounds)):
    for name, b in (("before", old), ("after", new)):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run(
            [b, "--real", d, "--file", "data.1g", "--qd", "32", "--secs", secs, "--cores", cores]
            + extra,
            capture_output=True, text=True, check=True).stdout
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        m = re.search(r"(\d+) I/Os in ([\d.]+) s = (\d+) IOPS", out)
        ios, iops = int(m.group(1)), int(m.group(3))
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        res[name].append((iops, cpu * 1e9 / ios))
        print(f"   round {r + 1} {name}: {iops} IOPS, {cpu * 1e9 / ios:.0f} ns CPU per I/O",
              flush=True)
med = statistics.median
for name, v in res.items():
    print(f"{name}: median {med(x[0] for x in v):.0f} IOPS, "
          f"median {med(x[1] for x in v):.0f} ns CPU per I/O")
ri = [a[0] / b[0] for a, b in zip(res["after"], res["before"])]
rc = [a[1] / b[1] for a, b in zip(res["after"], res["before"])]
print(f"after/before per round: IOPS {med(ri):.3f} ({' '.join(f'{x:.3f}' for x in ri)}); "
      f"CPU per I/O {med(rc):.3f} ({' '.join(f'{x:.3f}' for x in rc)})")
