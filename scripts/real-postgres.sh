#!/usr/bin/env bash
# real-postgres.sh DIR [options]: PostgreSQL under checkpoints, on `sluice mount` and on
# the kernel's stack (RCP, FAST '17, §7.2, Fig. 4 and Fig. 6).
#
# Debian's PostgreSQL (installed when missing), run as the `postgres` user. A pgbench
# TPC-B-like database (scale --scale) is made once in DIR/template; every run starts
# from a fresh copy of it in BACKING (DIR/backing/pgdata), its tables loaded into
# shared_buffers (pg_prewarm) so that reads are hits in every configuration, and
# checkpoints forced often (checkpoint_timeout 30 s, max_wal_size --max-wal).
#
# Configurations, in alternating order each round (the order rotates):
#   kernel  PostgreSQL on BACKING directly (the kernel's page cache and scheduler)
#   none, rcp, ld   on the mount (DIR/mnt) with experiments/real/postgres-classes.toml:
#                   backends critical, checkpointer, bgwriter, walwriter, autovacuum idle
# Phase 1, throughput: pgbench unlimited rate, --tput-secs each.
# Phase 2, latency: pgbench -R RATE (half of the slowest configuration's median
#   throughput of phase 1, or --rate), --rate-secs each, per-transaction log (-l).
# Reported per configuration (medians over rounds): tps; p50/p99/p99.9 latency from the
# scheduled start, and p99 without pgbench's schedule lag; checkpoints started and
# completed (the server log) and pg_stat_bgwriter's timed + requested; WAL written and
# pg_wal's size; for the mount, the flows' I/O per class (--json at unmount) and, unless
# --no-trace, where the daemon's time went per class (SLUICE_MOUNT_TRACE=1); unless
# --no-waits, where the backends waited during each rate run's worst stall
# (experiments/real/pg-waits.py samples their state, system call and kernel wait
# function every 25 ms, RCP's LatencyTOP table in spirit).
set -euo pipefail
usage() {
    cat <<EOF
usage: scripts/real-postgres.sh DIR [--rounds N] [--tput-secs S] [--rate-secs S]
       [--scale N] [--clients N] [--threads N] [--rate TPS] [--modes "kernel none rcp ld"]
       [--max-wal SIZE] [--shared-buffers SIZE] [--port P] [--no-trace] [--no-waits]
defaults: --rounds 2 --tput-secs 15 --rate-secs 30 --scale 20 --clients 8 --threads 2
          --max-wal 64MB --shared-buffers 512MB --port 54329
EOF
    exit 2
}
[ $# -ge 1 ] || usage
case $1 in -h | --help) usage ;; esac
ARG_DIR=$1
shift
ROUNDS=2 TPUT_SECS=15 RATE_SECS=30 SCALE=20 CLIENTS=8 THREADS=2 RATE= MODES="kernel none rcp ld"
MAX_WAL=64MB SHARED_BUFFERS=512MB PORT=54329 TRACE=1 WAITS=1
while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || [ "$1" = --no-trace ] || [ "$1" = --no-waits ] || usage
    case $1 in
    --rounds) ROUNDS=$2 ;;
    --tput-secs) TPUT_SECS=$2 ;;
    --rate-secs) RATE_SECS=$2 ;;
    --scale) SCALE=$2 ;;
    --clients) CLIENTS=$2 ;;
    --threads) THREADS=$2 ;;
    --rate) RATE=$2 ;;
    --modes) MODES=$2 ;;
    --max-wal) MAX_WAL=$2 ;;
    --shared-buffers) SHARED_BUFFERS=$2 ;;
    --port) PORT=$2 ;;
    --no-trace) TRACE=0; shift; continue ;;
    --no-waits) WAITS=0; shift; continue ;;
    *) echo "unknown option $1" >&2; usage ;;
    esac
    shift 2
done
for v in ROUNDS TPUT_SECS RATE_SECS SCALE CLIENTS THREADS PORT; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "$v must be a positive integer, not '${!v}'" >&2; exit 2; }
done
[ -z "$RATE" ] || [[ $RATE =~ ^[1-9][0-9]*$ ]] || { echo "--rate must be a positive integer" >&2; exit 2; }
for m in $MODES; do
    case $m in kernel | none | rcp | ld | d2fq | bfq | fios) ;; *) echo "unknown mode $m" >&2; exit 2 ;; esac
done

. "$(dirname "$0")/real-apps-lib.sh"
setup_dirs "$ARG_DIR"
RULES=$REPO/experiments/real/postgres-classes.toml

# PostgreSQL: Debian's package, its newest version's binaries.
if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then apt_need pg_ctl postgresql; fi
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
PGVER=$("$PGBIN/postgres" --version)
id postgres >/dev/null 2>&1 || die "no postgres user (the postgresql package makes it)"
runuser -u postgres -- test -x "$DIR" ||
    die "the postgres user cannot reach $DIR: make its parent directories searchable (chmod o+x) or choose a DIR under /tmp"
SOCK=$DIR/sock
mkdir -p "$SOCK"
chown postgres: "$SOCK" "$OUT"
asuser() { (cd / && runuser -u postgres -- "$@"); }
psqlq() { "$PGBIN/psql" -h "$SOCK" -p "$PORT" -U postgres -d postgres -XAtq -c "$1"; }

PGDATA_RUN=
stop_pg() {
    if [ -n "$PGDATA_RUN" ] && [ -f "$PGDATA_RUN/postmaster.pid" ]; then
        asuser "$PGBIN/pg_ctl" -D "$PGDATA_RUN" -m fast -w -t 120 stop >/dev/null || true
    fi
    PGDATA_RUN=
}
cleanup() { stop_pg; cleanup_mount; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# The template: initdb, the settings, pgbench -i, pg_prewarm; made once per scale.
TPL=$DIR/template-s$SCALE
if [ ! -f "$TPL/.ready" ]; then
    rm -rf "$TPL"
    mkdir -p "$TPL"
    chown postgres: "$TPL"
    asuser "$PGBIN/initdb" -D "$TPL" -A trust -U postgres >/dev/null
    cat >>"$TPL/postgresql.conf" <<EOF
# scripts/real-postgres.sh
listen_addresses = ''
shared_buffers = $SHARED_BUFFERS
checkpoint_timeout = 30s
max_wal_size = $MAX_WAL
min_wal_size = 32MB
log_checkpoints = on
autovacuum = on
EOF
    PGDATA_RUN=$TPL
    asuser "$PGBIN/pg_ctl" -D "$TPL" -o "-k $SOCK -p $PORT" -l "$OUT/template.log" -w -t 120 start >/dev/null
    echo "making the template: pgbench -i -s $SCALE" >&2
    "$PGBIN/pgbench" -h "$SOCK" -p "$PORT" -U postgres -i -s "$SCALE" -q postgres 2>"$OUT/init.log"
    psqlq "CREATE EXTENSION IF NOT EXISTS pg_prewarm"
    stop_pg
    touch "$TPL/.ready"
fi

# run MODE PHASE ROUND: one run from a fresh copy; results in $OUT/PHASE-MODE-rROUND.*
run() {
    local mode=$1 phase=$2 r=$3 tag=$2-$1-r$3 pgdata
    rm -rf "$B/pgdata"
    cp -a "$TPL" "$B/pgdata"
    rm -f "$B/pgdata/.ready" "$OUT/$tag".*
    if [ "$mode" = kernel ]; then
        pgdata=$B/pgdata
    else
        if [ "$TRACE" = 1 ]; then
            SLUICE_MOUNT_TRACE=1 mount_it "$mode" "$tag" --classes "$RULES" --cores 2
        else
            mount_it "$mode" "$tag" --classes "$RULES" --cores 2
        fi
        pgdata=$M/pgdata
    fi
    touch "$OUT/$tag.pglog"
    chown postgres: "$OUT/$tag.pglog"
    PGDATA_RUN=$pgdata
    asuser "$PGBIN/pg_ctl" -D "$pgdata" -o "-k $SOCK -p $PORT" -l "$OUT/$tag.pglog" -w -t 120 start >/dev/null
    psqlq "SELECT sum(pg_prewarm(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i')" >/dev/null
    psqlq "CHECKPOINT" >/dev/null
    psqlq "SELECT pg_stat_reset_shared('bgwriter')" >/dev/null
    local lsn0 log0 opts=() wpid=
    lsn0=$(psqlq "SELECT pg_current_wal_lsn()")
    log0=$(wc -l <"$OUT/$tag.pglog")
    if [ "$phase" = rate ]; then
        opts=(-T "$RATE_SECS" -R "$RATE" -l --log-prefix="$OUT/$tag.txlog")
        if [ "$WAITS" = 1 ]; then
            python3 "$REPO/experiments/real/pg-waits.py" "$OUT/$tag.waits" "$((RATE_SECS + 1))" &
            wpid=$!
        fi
    else
        opts=(-T "$TPUT_SECS")
    fi
    "$PGBIN/pgbench" -h "$SOCK" -p "$PORT" -U postgres -n -M prepared -c "$CLIENTS" -j "$THREADS" \
        "${opts[@]}" postgres >"$OUT/$tag.pgbench" 2>&1 ||
        { cat "$OUT/$tag.pgbench" >&2; die "pgbench failed ($tag)"; }
    [ -z "$wpid" ] || wait "$wpid"
    {
        echo "wal_bytes $(psqlq "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$lsn0')")"
        echo "stat $(psqlq "SELECT checkpoints_timed, checkpoints_req, buffers_checkpoint, buffers_clean, buffers_backend FROM pg_stat_bgwriter")"
        echo "pg_wal_bytes $(du -sb "$pgdata/pg_wal" | cut -f1)"
        echo "ckpt_complete $(tail -n +"$((log0 + 1))" "$OUT/$tag.pglog" | grep -c 'checkpoint complete' || true)"
        echo "ckpt_started $(tail -n +"$((log0 + 1))" "$OUT/$tag.pglog" | grep -c 'checkpoint starting' || true)"
        echo "load $(cut -d' ' -f1 /proc/loadavg)"
    } >"$OUT/$tag.pgstat"
    stop_pg
    [ "$mode" = kernel ] || unmount_it
    echo "round $r/$ROUNDS $phase $mode: $(grep -o 'tps = [0-9.]*' "$OUT/$tag.pgbench" | head -1)," \
        "checkpoints $(awk '/ckpt_complete/{print $2}' "$OUT/$tag.pgstat"), load $(awk '/^load/{print $2}' "$OUT/$tag.pgstat")" >&2
}

read -ra MODE_LIST <<<"$MODES"
rotated() { # ROUND: the modes, rotated by the round number
    local n=${#MODE_LIST[@]} i
    for ((i = 0; i < n; i++)); do echo "${MODE_LIST[$(((i + $1 - 1) % n))]}"; done
}
{
    echo "== scripts/real-postgres.sh $ARG_DIR --rounds $ROUNDS --tput-secs $TPUT_SECS --rate-secs $RATE_SECS --scale $SCALE --clients $CLIENTS --threads $THREADS --modes \"$MODES\" --max-wal $MAX_WAL --shared-buffers $SHARED_BUFFERS${RATE:+ --rate $RATE}"
    echo "$PGVER"
    machine_state
} | tee "$OUT/machine.txt" >&2

for ((r = 1; r <= ROUNDS; r++)); do
    for m in $(rotated "$r"); do run "$m" tput "$r"; done
done
if [ -z "$RATE" ]; then
    RATE=$(python3 - "$OUT" "$ROUNDS" $MODES <<'PY'
import re, statistics, sys
out, rounds, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def tps(m, r):
    t = open(f"{out}/tput-{m}-r{r}.pgbench").read()
    return float(re.search(r"tps = ([0-9.]+)", t).group(1))
slowest = min(statistics.median(tps(m, r) for r in range(1, rounds + 1)) for m in modes)
print(max(1, round(slowest / 2)))
PY
)
    echo "rate for the latency runs: $RATE tps (half of the slowest configuration's median)" | tee -a "$OUT/machine.txt" >&2
fi
for ((r = 1; r <= ROUNDS; r++)); do
    for m in $(rotated "$r"); do run "$m" rate "$r"; done
done
echo "after: uptime:$(uptime | sed 's/.*up/ up/')" | tee -a "$OUT/machine.txt" >&2

python3 "$REPO/scripts/real-postgres-report.py" "$OUT" "$ROUNDS" "$RATE" $MODES | tee "$OUT/report.txt"
