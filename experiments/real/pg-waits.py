#!/usr/bin/env python3
"""Sample where PostgreSQL's backends wait, in the spirit of RCP's LatencyTOP table.

usage: pg-waits.py OUT_FILE SECONDS [INTERVAL_MS]

Every INTERVAL_MS (default 25) for SECONDS, for each PostgreSQL backend (comm
"postgres", command line with "[local]"): its state (R running/runnable, S sleeping, D
uninterruptible), the system call it is in (/proc/PID/syscall; "running" when in none)
and the kernel function it sleeps in (/proc/PID/wchan). One line per sample:
`epoch_seconds pid state syscall wchan`. Needs root. (scripts/real-postgres.sh)
"""
import os
import sys
import time

SYSCALLS = {0: "read", 1: "write", 3: "close", 7: "poll", 8: "lseek", 17: "pread64",
            18: "pwrite64", 44: "sendto", 45: "recvfrom", 64: "semop", 74: "fsync",
            75: "fdatasync", 76: "truncate", 77: "ftruncate", 82: "rename", 87: "unlink",
            202: "futex", 230: "clock_nanosleep", 232: "epoll_wait", 257: "openat",
            285: "fallocate", 295: "preadv", 296: "pwritev", 281: "epoll_pwait"}


def backends():
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            if open(f"/proc/{p}/comm").read().strip() != "postgres":
                continue
            if b"[local]" in open(f"/proc/{p}/cmdline", "rb").read():
                out.append(p)
        except OSError:
            pass
    return out


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    out, secs = sys.argv[1], float(sys.argv[2])
    step = (float(sys.argv[3]) if len(sys.argv) == 4 else 25) / 1000
    end = time.time() + secs
    pids, listed = [], 0.0
    with open(out, "w") as f:
        while (now := time.time()) < end:
            if now - listed > 1:
                pids, listed = backends(), now
            for p in pids:
                try:
                    st = open(f"/proc/{p}/stat").read()
                    state = st[st.rfind(")") + 2]
                    sc = open(f"/proc/{p}/syscall").read().split()[0]
                    wchan = open(f"/proc/{p}/wchan").read().strip() or "0"
                except OSError:
                    continue
                name = "running" if sc == "running" else SYSCALLS.get(int(sc), f"sys{sc}") if sc.lstrip("-").isdigit() else sc
                f.write(f"{now:.3f} {p} {state} {name} {wchan}\n")
            time.sleep(max(0.0, step - (time.time() - now)))


main()
