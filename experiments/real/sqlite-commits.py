#!/usr/bin/env python3
"""A write-heavy SQLite tenant: small transactions in WAL mode with synchronous=FULL.

usage: sqlite-commits.py DB SECONDS LATENCIES_FILE

Each transaction inserts one row (a 200-byte payload) and updates a counter row, then
commits; with synchronous=FULL in WAL mode every commit fsyncs the WAL. It runs for
SECONDS and writes each transaction's latency (BEGIN to COMMIT returned, µs), one per
line, to LATENCIES_FILE; it prints the count. (scripts/real-sqlite.sh)
"""
import os
import sqlite3
import sys
import time

if len(sys.argv) != 4:
    sys.exit(__doc__)
db, secs, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
con = sqlite3.connect(db, isolation_level=None)
if con.execute("PRAGMA journal_mode=WAL").fetchone()[0] != "wal":
    sys.exit(f"{db}: WAL mode refused")
con.execute("PRAGMA synchronous=FULL")
con.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v BLOB)")
con.execute("CREATE TABLE IF NOT EXISTS c (id INTEGER PRIMARY KEY, n INTEGER)")
con.execute("INSERT OR IGNORE INTO c VALUES (1, 0)")
payload = os.urandom(200)
lat = []
end = time.monotonic() + secs
while True:
    t0 = time.monotonic()
    if t0 >= end:
        break
    con.execute("BEGIN")
    con.execute("INSERT INTO t (v) VALUES (?)", (payload,))
    con.execute("UPDATE c SET n = n + 1 WHERE id = 1")
    con.execute("COMMIT")
    lat.append(time.monotonic() - t0)
con.close()
with open(out, "w") as f:
    f.write("".join(f"{x * 1e6:.0f}\n" for x in lat))
print(len(lat))
