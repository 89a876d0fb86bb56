#!/usr/bin/env bash
# Fuzz the job-file and policy-spec parsers (tests/fuzz.rs) and the store's mount and
# fsck over mutated images (crates/sluice-store/tests/fuzz_image.rs) for as long as one
# likes:
#   PROPTEST_CASES=200000 scripts/fuzz.sh
# A failure prints the minimal input that broke a parser and the proptest seed that
# replays it (proptest also keeps it under proptest-regressions/).
set -euo pipefail
cd "$(dirname "$0")/.."
export PROPTEST_CASES=${PROPTEST_CASES:-20000}
echo "== fuzzing the parsers with $PROPTEST_CASES cases per target"
cargo test --release --test integration fuzz:: -- --nocapture
echo "== fuzzing mount and fsck over mutated store images with $PROPTEST_CASES cases"
cargo test --release -p sluice-store --test integration fuzz_image:: -- --nocapture
