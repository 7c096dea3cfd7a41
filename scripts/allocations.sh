#!/usr/bin/env bash
# Heap allocations a request makes on the connection lanes, by call site (issue 16).
# At an agent's pace every allocation is memory touched cold (the block, the
# allocator's bin for its size class) and, now and then, the allocator's slow path
# (jemalloc's thread-cache collection runs every 64 KB allocated), so the count and
# where each one comes from say what to keep, share or build once.
#
#   scripts/allocations.sh [RATE] [SECS]      (defaults: 20 requests/s, 10 s counted)
#
# How: perf uprobes on jemalloc's entry points (`_rjem_malloc`, `_rjem_mallocx`,
# `_rjem_calloc`, `_rjem_realloc`) with DWARF call stacks, on the gateway of
# `switchyard-bench soak` (the benchmark's ~1 KB chat request, keep-alive, 4
# connections), after a warm-up; `perf script` resolves the stacks with their
# inlined frames, and scripts/lib/fold_allocations.py names each allocation by the
# first three frames that are not the allocator's or the standard library's
# plumbing. Per request = counted ÷ (RATE × SECS). GATEWAY=/path/to/switchyard
# measures another build. Needs perf (with uprobes: run as root) and python3.
set -euo pipefail
# The gateway's hot code stays file-backed here: moved onto huge pages (its default,
# crates/switchyard-huge-text) it is anonymous memory, where perf finds no symbols.
export SWITCHYARD_HUGE_TEXT=false
cd "$(dirname "$0")/.."
RATE=${1:-20}
SECS=${2:-10}
TARGET=${CARGO_TARGET_DIR:-/var/cache/switchyard/target}
BENCH=$TARGET/release/switchyard-bench
GATEWAY=$(realpath "${GATEWAY:-$TARGET/release/switchyard}")
for tool in perf python3; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
[ -x "$BENCH" ] && [ -x "$GATEWAY" ] || { echo "build first: cargo build --release -p switchyard-gateway -p switchyard-bench" >&2; exit 1; }

WORK=$(mktemp -d)
SOAK=
GROUP=switchyard_alloc
cleanup() {
  perf probe -q -d "$GROUP:*" 2>/dev/null || true
  [ -n "$SOAK" ] && kill "$SOAK" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

source scripts/lib/soak-gateway.sh
start_soak_gateway "$RATE" "$GATEWAY"

events=()
for fn in _rjem_malloc _rjem_mallocx _rjem_calloc _rjem_realloc; do
  perf probe -q -x "$GATEWAY" "$GROUP:$fn=$fn" >/dev/null
  events+=(-e "$GROUP:$fn")
done
sleep 5  # warm-up
perf record -q "${events[@]}" --call-graph dwarf,16384 -p "$PID" -o "$WORK/perf.data" -- sleep "$SECS" \
  2>"$WORK/record.log"
perf script -i "$WORK/perf.data" -F comm,ip,sym 2>/dev/null >"$WORK/stacks.txt"
python3 scripts/lib/fold_allocations.py "$WORK/stacks.txt" "$((RATE * SECS))"
echo "(chat requests at $RATE/s, $SECS s counted, 4 keep-alive connections; lanes only)"
