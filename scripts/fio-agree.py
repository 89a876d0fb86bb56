#!/usr/bin/env python3
"""Agreement of `sluice run --policy none` with fio itself on fio's own example job
files (issue 41): each example that runs in both worlds on this machine is run by fio
and by sluice on files in a fresh temporary directory, alternating which goes first
(ROUNDS rounds). Both tools run the same copy of the example, written into the
temporary directory, with `runtime=RUN_SECS` set in every job section (fio: a job
section's own `runtime` overrides the global one, so each job section gets its own; a
shorter `runtime`/`timeout` the example gives a section is kept), and end on their
own: each tool's runtime counts from when a job starts its I/O, after its files are
laid out (fio lays out every job's files before the first job starts, its default
`create_serialize`; `sluice run` too, and its runtime clock starts after that), so both
measure RUN_SECS per stonewall group and every group is reached. A Ctrl-C (SIGINT)
stays only as a backstop: after RUN_SECS per job section plus GRACE seconds (layout of
10 GiB files included), then SIGKILL 60 s later. fio's report entries are compared one to one, in order (a `numjobs` job
without `group_reporting` is one entry per thread, with the job's name, in both):
per entry, read+write IOPS and bandwidth (the mean over the rounds); an entry agrees
when both are within 15 %. A different number of entries, other names in order or a
different number of groups is reported as a difference of the example; the JSON
fields present per entry are compared too.

    scripts/fio-agree.py EXAMPLES_DIR [EXAMPLE.fio[@SECTION] ...]
    scripts/fio-agree.py --check     # the job-file rewrite's own checks (no I/O)

    RUN_SECS=10 ROUNDS=2 GRACE=180 SLUICE=target/release/sluice FIO=fio SLUICE_ARGS="..."

`EXAMPLE.fio@SECTION` runs only that job section (and `[global]`) in both tools (fio's
`--section`; the xNVMe examples name theirs in their header comment).

SLUICE_ARGS are more options for `sluice run` (e.g. `--single-dirty-limit`, Linux's one
dirty limit for every writer, where sluice's default is RCP's class-aware limits).

Removing fio's files can take long: fio allocates a write-only job's file instead of
laying it out, so its random writes leave the file in as many extents as writes, and on
a file system mounted with `discard` each is discarded when the file is deleted (a
10 GiB `fio-rand-write.fio` file took longer than nine minutes here). Measure such
examples on a file system without `discard` (TMPDIR).

An example naming an absolute path (`filename=/tmp/testfile`, `directory=/data1`,
`filename_format=/a/b.$jobnum`) or a device (`/dev/sda`; not `/dev/null`, `/dev/zero`)
runs, in both tools, on the copy with each such path mapped into the temporary
directory, as scripts/fio-examples.sh maps them for `sluice run`; neither tool writes
outside it. When a path is mapped and the example gives no size (`size`, `filesize`,
`io_size`, `io_limit`), the copy starts with a `[global]` section of `size=1g`
(fio, and sluice as fio, refuse a new regular file without a size — a device has
one — so neither tool would otherwise run what the example means). A
job fio reports with a non-zero `error` is marked so in the table. Prints a
markdown table (docs/workloads.md carries it) and the count that agree.
"""
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile

RUN_SECS = int(os.environ.get("RUN_SECS", "10"))
ROUNDS = int(os.environ.get("ROUNDS", "2"))
GRACE = int(os.environ.get("GRACE", "180"))
SLUICE = os.path.abspath(os.environ.get("SLUICE", "target/release/sluice"))
FIO = os.environ.get("FIO", "fio")
SLUICE_ARGS = shlex.split(os.environ.get("SLUICE_ARGS", ""))
TOL = 0.15
PATH_KEY = re.compile(r"(\s*(filename|directory|filename_format)\s*=\s*)([^\s;#]+)(.*)")
SIZE_KEY = re.compile(r"\s*(size|filesize|io_size|io_limit)\s*=")


def mappable(p):
    """A path to map: absolute, but not /dev/null, /dev/zero (no file behind them) nor
    /dev/shm (a memory file system)."""
    return p.startswith("/") and p not in ("/dev/null", "/dev/zero") and \
        not p.startswith("/dev/shm/")


def map_line(line, work):
    """`line` with each absolute path of a filename/directory/filename_format value (each
    of a `:` list; a value with an escaped colon `\\:` is one path) mapped under
    `work/paths`, the directories made; the line and the paths mapped."""
    m = PATH_KEY.fullmatch(line)
    if not m:
        return line, []
    key, val = m.group(2), m.group(3)
    parts = [val] if "\\:" in val else val.split(":")
    mapped, out = [], []
    for p in parts:
        if mappable(p):
            new = os.path.join(work, "paths") + p
            os.makedirs(new if key == "directory" else os.path.dirname(new), exist_ok=True)
            mapped.append(p)
            p = new
        out.append(p)
    return m.group(1) + ":".join(out) + m.group(4), mapped


def make_dirs(path, work):
    """Create the relative `directory=` entries the example names, inside `work`."""
    for line in open(path, errors="replace"):
        m = re.match(r"\s*directory\s*=\s*(\S+)", line)
        if m:
            for d in m.group(1).split(":"):
                if d and not d.startswith("/"):
                    os.makedirs(os.path.join(work, d), exist_ok=True)


SECTION = re.compile(r"\s*\[([^\]]+)\]")
RUNTIME = re.compile(r"\s*(runtime|timeout)\s*=\s*(\S+)")


def seconds(value):
    """fio's time value in seconds (no unit: seconds), or None when not understood."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(us|ms|s|m|h|d)?", value.strip().lower())
    if not m:
        return None
    scale = {"us": 1e-6, "ms": 1e-3, "s": 1, None: 1, "m": 60, "h": 3600, "d": 86400}
    return float(m.group(1)) * scale[m.group(2)]


def timed_copy(path, work):
    """Write `path` into `work` with `runtime=RUN_SECS` in every job section (a shorter
    runtime of the section's own is kept) and its absolute paths mapped into `work`
    (`map_line`); the copy's path, its job sections' count and the paths mapped.
    The global section's runtime is left as it is: each job section's own overrides it."""
    lines = open(path, errors="replace").read().splitlines()
    out = []
    sections = 0
    mapped = []
    sized = False
    cur = None  # the current section's name
    for line in lines:
        text = line.split(";", 1)[0].split("#", 1)[0]
        sized = sized or bool(SIZE_KEY.match(text))
        m = SECTION.match(text)
        if m:
            cur = m.group(1).strip()
            out.append(line)
            if cur != "global":
                sections += 1
                out.append(f"runtime={RUN_SECS}")
            continue
        r = RUNTIME.match(text)
        if r and cur is not None and cur != "global":
            own = seconds(r.group(2))
            if own is None or own > RUN_SECS:
                continue  # the section's runtime=RUN_SECS stands
        line, got = map_line(line, work)
        mapped += got
        out.append(line)  # a shorter runtime of its own comes later and wins
    if not sized and mapped:
        out = ["[global]", "size=1g"] + out
    copy = os.path.join(work, "job.fio")
    with open(copy, "w") as f:
        f.write("\n".join(out) + "\n")
    return copy, sections, mapped


def run(cmd, cwd, limit):
    """Run `cmd` in `cwd`, Ctrl-C after `limit` seconds (a backstop: the job file's
    runtimes end it before); the exit status and its stderr.
    stderr goes to a file (a helper process fio leaves behind must not hold a pipe)."""
    err_path = os.path.join(cwd, "stderr.txt")
    with open(err_path, "wb") as err:
        p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err,
                             start_new_session=True)
        try:
            p.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGINT)
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    text = open(err_path, errors="replace").read()
    # The last line says why (warnings come first).
    return p.returncode, (text.strip().splitlines() or [""])[-1]


def load(path):
    """fio-style JSON: its entries in order, each (name, iops, bw KiB/s, groupid,
    fields, error)."""
    try:
        text = open(path).read()
    except OSError:
        return None
    # fio may print notices before the JSON.
    text = text[text.find("{"):]
    try:
        d = json.loads(text)
    except ValueError:
        return None
    out = []
    for j in d.get("jobs", []):
        iops = sum(j.get(k, {}).get("iops", 0.0) for k in ("read", "write", "trim"))
        bw = sum(j.get(k, {}).get("bw", 0) for k in ("read", "write", "trim"))
        out.append((j["jobname"], iops, bw, j.get("groupid", 0), set(j.keys()),
                    j.get("error", 0)))
    return out


def labels(entries):
    """Each entry's label: its name, with `#k` for the k-th of a name that several
    entries share (a job's threads)."""
    names = [e[0] for e in entries]
    seen = {}
    out = []
    for n in names:
        k = seen.get(n, 0)
        seen[n] = k + 1
        out.append(n if names.count(n) == 1 else f"{n}#{k + 1}")
    return out


def check():
    """The rewrite's checks: every job section gets RUN_SECS, a shorter runtime (or
    `timeout`) of a section's own is kept after it, a longer one dropped, `[global]`
    untouched, comments and options kept; absolute paths and devices mapped into the
    temporary directory (not /dev/null), a size given when a device without one was."""
    example = """; a comment
[global]
timeout=60
size=1m
[a]
rw=read
[b]
runtime=900 ; longer
stonewall
[c]
timeout=1s
"""
    work = tempfile.mkdtemp(prefix="sluice-agree-check-")
    try:
        src = os.path.join(work, "in.fio")
        with open(src, "w") as f:
            f.write(example)
        out, n, mapped = timed_copy(src, os.path.join(work))
        got = open(out).read().splitlines()
        with open(src, "w") as f:
            f.write("[a]\nfilename=/dev/sda:/dev/null:rel ; c\n[b]\ndirectory=/data1\n")
        out, _, mapped2 = timed_copy(src, work)
        got2 = open(out).read().splitlines()
        made = os.path.isdir(os.path.join(work, "paths/data1"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    want = ["; a comment", "[global]", "timeout=60", "size=1m",
            "[a]", f"runtime={RUN_SECS}", "rw=read",
            "[b]", f"runtime={RUN_SECS}", "stonewall",
            "[c]", f"runtime={RUN_SECS}"] + (["timeout=1s"] if RUN_SECS >= 1 else [])
    assert n == 3, f"job sections counted: {n}, want 3"
    assert mapped == [], f"mapped {mapped} in an example without absolute paths"
    p = os.path.join(work, "paths")
    want2 = ["[global]", "size=1g", "[a]", f"runtime={RUN_SECS}",
             f"filename={p}/dev/sda:/dev/null:rel ; c", "[b]", f"runtime={RUN_SECS}",
             f"directory={p}/data1"]
    assert got2 == want2, f"mapped rewrite gave {got2}, want {want2}"
    assert mapped2 == ["/dev/sda", "/data1"] and made, f"mapped {mapped2}, dirs made {made}"
    assert got == want, f"rewrite gave {got}, want {want}"
    assert seconds("2m") == 120 and seconds("500ms") == 0.5 and seconds("20") == 20
    print("fio-agree checks: ok")


def main():
    if sys.argv[1:] == ["--check"]:
        check()
        return
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    ex_dir = sys.argv[1]
    names = sys.argv[2:] or sorted(f for f in os.listdir(ex_dir) if f.endswith(".fio"))
    print("| example | entry | fio IOPS | sluice IOPS | fio MiB/s | sluice MiB/s | agrees |")
    print("|---|---|---|---|---|---|---|")
    agree = total = differ = 0
    for arg in names:
        # EXAMPLE.fio@SECTION: run only that job section (with [global]) in both
        # tools, fio's --section (the xNVMe examples name theirs in their header).
        name, _, section = arg.partition("@")
        only = ["--section=" + section] if section else []
        path = os.path.join(ex_dir, name)
        res = {"fio": [], "sluice": []}
        failed = None
        for r in range(ROUNDS):
            order = ["fio", "sluice"] if r % 2 == 0 else ["sluice", "fio"]
            for tool in order:
                work = tempfile.mkdtemp(prefix="sluice-agree-")
                make_dirs(path, work)
                job, sections, _ = timed_copy(path, work)
                try:
                    out = os.path.join(work, "out.json")
                    if tool == "fio":
                        cmd = [FIO, "--output-format=json", "--output=" + out] + only + [job]
                    else:
                        cmd = [SLUICE, "run", job] + only + ["--policy", "none", "--quiet",
                               "--directory", work, "--json", out] + SLUICE_ARGS
                    rc, err = run(cmd, work, RUN_SECS * max(sections, 1) + GRACE)
                    sys.stdout.flush()
                    got = load(out)
                    if got is None:
                        failed = f"{tool} gave no results (exit {rc}: {err.strip()[:120]})"
                    else:
                        res[tool].append(got)
                finally:
                    shutil.rmtree(work, ignore_errors=True)
            if failed:
                break
        if failed:
            print(f"| `{name}` | — | | | | | not compared: {failed} |")
            continue
        fio_e = res["fio"][0]
        sl_e = res["sluice"][0]
        counts = [len(x) for x in res["fio"] + res["sluice"]]
        if len(set(counts)) != 1 or [e[0] for e in fio_e] != [e[0] for e in sl_e]:
            print(f"| `{name}` | — | | | | | entries differ: fio {len(fio_e)} "
                  f"{[e[0] for e in fio_e]}, sluice {len(sl_e)} {[e[0] for e in sl_e]} |")
            differ += 1
            continue
        groups = (len({e[3] for e in fio_e}), len({e[3] for e in sl_e}))
        for k, label in enumerate(labels(fio_e)):
            def mean(tool, i):
                v = [x[k][i] for x in res[tool]]
                return sum(v) / len(v)
            fi, si = mean("fio", 1), mean("sluice", 1)
            fb, sb = mean("fio", 2) / 1024, mean("sluice", 2) / 1024
            if fi == 0 and si == 0 and fb == 0 and sb == 0:
                # Neither did I/O in RUN_SECS (both were laying out the files).
                print(f"| `{name}` | {label} | 0 | 0 | 0 | 0 | not measured: no I/O in {RUN_SECS} s |")
                continue
            ok = all(abs(s - f) <= TOL * max(f, 1e-9) for f, s in ((fi, si), (fb, sb)))
            notes = []
            if fio_e[k][3] != sl_e[k][3]:
                notes.append(f"group {fio_e[k][3]} vs {sl_e[k][3]}")
            if k == 0 and groups[0] != groups[1]:
                notes.append(f"groups: fio {groups[0]}, sluice {groups[1]}")
            errs = [x[k][5] for x in res["fio"]], [x[k][5] for x in res["sluice"]]
            if any(errs[0]) or any(errs[1]):
                notes.append(f"error: fio {errs[0]}, sluice {errs[1]}")
            missing = fio_e[k][4] - sl_e[k][4]
            if missing:
                notes.append("JSON fields sluice lacks: " + ", ".join(sorted(missing)[:6]))
            total += 1
            agree += ok
            verdict = ("yes" if ok else "no") + ("; " + "; ".join(notes) if notes else "")
            print(f"| `{name}` | {label} | {fi:.0f} | {si:.0f} | {fb:.1f} | {sb:.1f} | {verdict} |")
    print()
    print(f"entries compared: {total}; within 15 % in IOPS and bandwidth: {agree}; "
          f"examples whose entries differ in number or names: {differ}")


if __name__ == "__main__":
    main()
