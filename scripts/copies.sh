#!/usr/bin/env bash
# Bytes a request copies with memcpy, by function and by source line (issue 16).
# Rust moves futures and large values with memcpy: each `async fn` call builds its
# future and moves it into its caller's (a copy of its whole size), a value built and
# then boxed is copied into the box. At an agent's pace every byte copied is a cold
# cache line read and another written, so what a request copies, and where, says
# which types to shrink or box.
#
#   scripts/copies.sh [RATE] [SECS]      (defaults: 10 requests/s, 10 s counted)
#
# How: an LD_PRELOAD shim (scripts/lib/memcpy_count.c, built with cc) counts memcpy
# calls by return address and size on the connection lanes, between two SIGUSR2s,
# in the gateway of `switchyard-bench soak` (the benchmark's ~1 KB chat request,
# keep-alive, 4 connections); the addresses are resolved with nm and addr2line
# (the release profile keeps line tables). Per request = counted ÷ RATE × SECS.
# GATEWAY=/path/to/switchyard measures another build. Needs cc and binutils.
set -euo pipefail
# The gateway's hot code stays file-backed here: moved onto huge pages (its default,
# crates/switchyard-huge-text) it is anonymous memory, where the tools below find no
# symbols for it.
export SWITCHYARD_HUGE_TEXT=false
cd "$(dirname "$0")/.."
RATE=${1:-10}
SECS=${2:-10}
TARGET=${CARGO_TARGET_DIR:-/var/cache/switchyard/target}
BENCH=$TARGET/release/switchyard-bench
GATEWAY=$(realpath "${GATEWAY:-$TARGET/release/switchyard}")
for tool in cc nm addr2line c++filt python3; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
[ -x "$BENCH" ] && [ -x "$GATEWAY" ] || { echo "build first: cargo build --release -p switchyard-gateway -p switchyard-bench" >&2; exit 1; }

WORK=$(mktemp -d)
SOAK=
cleanup() {
  [ -n "$SOAK" ] && kill "$SOAK" 2>/dev/null || true
  pkill -f "$WORK" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

cc -O2 -shared -fPIC -o "$WORK/memcpy_count.so" scripts/lib/memcpy_count.c -ldl
printf '#!/bin/sh\nCOPIES_OUT=%s/copies LD_PRELOAD=%s/memcpy_count.so exec %s "$@"\n' "$WORK" "$WORK" "$GATEWAY" \
  >"$WORK/gateway"
chmod +x "$WORK/gateway"
source scripts/lib/soak-gateway.sh
start_soak_gateway "$RATE" "$WORK/gateway"
sleep 5  # warm-up
kill -USR2 "$PID"
sleep "$SECS"
kill -USR2 "$PID"
for _ in $(seq 50); do [ -f "$WORK/copies.$PID.maps" ] && break; sleep 0.1; done

python3 - "$GATEWAY" "$WORK/copies.$PID" "$((RATE * SECS))" "$RATE" "$SECS" <<'PY'
import bisect, collections, re, subprocess, sys
binary, out, requests = sys.argv[1], sys.argv[2], int(sys.argv[3])
base = next(int(line.split()[0].split("-")[0], 16) for line in open(out + ".maps")
            if line.split()[-1] == binary and line.split()[2] == "00000000")
symbols = []
for line in subprocess.run(["nm", "-n", "--defined-only", binary], capture_output=True, text=True).stdout.splitlines():
    parts = line.split()
    if len(parts) == 3 and parts[1] in "tTwW":
        symbols.append((int(parts[0], 16), parts[2]))
starts = [s for s, _ in symbols]
def function(offset):
    i = bisect.bisect_right(starts, offset) - 1
    return symbols[i][1] if i >= 0 else "?"
rows = []
for line in open(out):
    site, size, count = line.split()
    offset = int(site, 16) - base
    rows.append((offset, int(size), int(count)))
total = sum(s * c for _, s, c in rows)
calls = sum(c for *_, c in rows)
print(f"memcpy on the lanes: {calls / requests:.1f} calls and {total / requests:,.0f} bytes per request "
      f"({sys.argv[4]} requests/s for {sys.argv[5]} s)\n")
by_fn = collections.defaultdict(lambda: [0, 0])
for offset, size, count in rows:
    entry = by_fn[function(offset)]
    entry[0] += size * count; entry[1] += count
names = list(by_fn)
shown = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.splitlines()
print("bytes/req  calls/req  function")
for name, text in sorted(zip(names, shown), key=lambda kv: -by_fn[kv[0]][0])[:15]:
    b, c = by_fn[name]
    print(f"{b / requests:9,.0f}  {c / requests:9.1f}  {re.sub(r'::h[0-9a-f]{16}', '', text)[:120]}")
print("\nbytes  calls/req  site (innermost first, inlined frames after <-)")
for offset, size, count in sorted(rows, key=lambda r: -r[1] * r[2])[:25]:
    lines = subprocess.run(["addr2line", "-i", "-e", binary, hex(offset - 1)], capture_output=True,
                           text=True).stdout.split()
    lines = [re.sub(r"^.*/(crates|src|registry/src/[^/]+)/", "", l) for l in lines]
    print(f"{size:6}  {count / requests:9.1f}  " + " <- ".join(lines[:3]))
PY
