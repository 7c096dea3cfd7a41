#!/usr/bin/env bash
# The soak (issue 10): a release gateway under a steady open-loop load, by default
# 30 minutes at 500 requests/s, its RSS, descriptors, threads, latency and request
# log sampled every minute; exits non-zero when memory or descriptors grow, a request
# fails or the log misses rows (checks and why: crates/switchyard-bench/src/soak.rs).
#
#   scripts/soak.sh [switchyard-bench soak ARGS...]
#
# e.g. `scripts/soak.sh --write-docs` records the result in docs/reliability.md;
# `scripts/soak.sh --minutes 2 --sample-secs 10` is a quick look. Run it on an
# otherwise quiet machine: the report states the CPU other processes took.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${CARGO_TARGET_DIR:-}" ]; then
  if mkdir -p /var/cache/switchyard/target 2>/dev/null && [ -w /var/cache/switchyard/target ]; then
    export CARGO_TARGET_DIR=/var/cache/switchyard/target
  else
    export CARGO_TARGET_DIR="$PWD/target"
  fi
fi
nice cargo build --release --locked -p switchyard-gateway -p switchyard-bench
exec "$CARGO_TARGET_DIR/release/switchyard-bench" soak "$@"
