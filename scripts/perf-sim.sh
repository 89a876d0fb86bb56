#!/usr/bin/env bash
# Simulator throughput and memory (docs/perf.md): simulated I/Os per second of wall time
# for `none` on `ull` with 8 jobs at QD32, and peak RSS for 1 s and 10 s of simulated time.
# Usage: scripts/perf-sim.sh [ROUNDS]   (default 3 rounds; prints the median)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
cargo build --release --quiet
bin=${CARGO_TARGET_DIR:-target}/release/sluice
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for secs in 1 10; do
  sed "s/^runtime=.*/runtime=${secs}s/" jobs/perf-8x32.fio > "$tmp/job${secs}.fio"
  rates=()
  rss=()
  for _ in $(seq "$rounds"); do
    # taskset pins the run to one core; /usr/bin/time reports the peak RSS.
    line=$( { /usr/bin/time -f 'RSS %M' taskset -c 0 "$bin" sim "$tmp/job${secs}.fio" --device ull --policy none > /dev/null; } 2>&1 )
    rates+=("$(grep -o '([0-9.]* M I/O/s)' <<<"$line" | tr -d '(' | awk '{print $1}')")
    rss+=("$(awk '/^RSS/ {print $2}' <<<"$line")")
  done
  med_rate=$(printf '%s\n' "${rates[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  med_rss=$(printf '%s\n' "${rss[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  echo "simulated ${secs}s: median ${med_rate} M simulated I/O/s of wall time (rounds: ${rates[*]}), peak RSS ${med_rss} KiB"
done
