#!/usr/bin/env bash
# Step 5 of scripts/pgo-build.sh: BOLT, LLVM's post-link optimizer, lays the
# profile-guided binary's code out again from a profile of that very binary
# (docs/adr/0013-profile-guided-build.md, "BOLT").
#
#   bash scripts/lib/bolt-layout.sh LLVM_BOLT WORK BENCH
#
# LLVM_BOLT: the resolved path of llvm-bolt (its merge-fdata and instrumentation
# runtime are found beside it, as Debian's bolt-NN package installs them). Reads
# WORK/optimized/release/switchyard, which must have been linked with
# --emit-relocs; writes WORK/bolted, WORK/switchyard.fdata and the logs
# WORK/bolt.log, WORK/bolt-train.log, WORK/bolt-smoke.log. BENCH drives the
# training and the smoke run. Exits non-zero, with the reason, if any step fails or
# the rewritten binary fails its smoke run; the caller then keeps its input.
set -euo pipefail
cd "$(dirname "$0")/../.."
bolt=$1 work=$2 bench=$3
input="$work/optimized/release/switchyard"
log="$work/bolt.log"
fdata="$work/bolt-fdata"
merge="$(dirname "$bolt")/merge-fdata"
runtime="$(dirname "$bolt")/../lib/libbolt_rt_instr.a"
step() { printf '\n==> %s\n' "$*" >&2; }
fail() { echo "bolt-layout: $*" >&2; exit 1; }

[ -x "$merge" ] || fail "no merge-fdata beside $bolt"
[ -f "$runtime" ] || fail "no instrumentation runtime at $runtime"
# Without the link's relocations BOLT could only reorder blocks inside each
# function, in place: most of the gain is moving functions.
readelf -SW "$input" | grep -q ' \.rela\.text' || fail "$input was linked without --emit-relocs"
: >"$log"

step "BOLT: instrumented gateway ($(basename "$bolt"))"
rm -rf "$fdata" && mkdir -p "$fdata"
"$bolt" "$input" -o "$work/bolt-instrumented" -instrument \
  -instrumentation-file="$fdata/prof" -instrumentation-file-append-pid >>"$log" 2>&1 ||
  { tail -20 "$log" >&2; fail "instrumenting failed"; }

step "BOLT: training (log: $work/bolt-train.log)"
source scripts/lib/pgo-train.sh
pgo_train "$bench" "$work/bolt-instrumented" "$work/bolt-train.log" || fail "training failed"
ls "$fdata"/prof.*.fdata >/dev/null 2>&1 || fail "the instrumented gateway wrote no profile"
"$merge" "$fdata"/prof.*.fdata >"$work/switchyard.fdata" 2>>"$log" || fail "merge-fdata failed"

step "BOLT: rewriting the layout"
# ext-tsp: blocks ordered for fall-through and i-cache; cdsort: functions ordered by
# the profile's calls so callers and callees share lines and pages; split-*: each
# function's cold blocks (and landing pads) moved out of the hot range; icf: identical
# functions folded. Not -use-gnu-stack: it reuses the PT_GNU_STACK program header
# for the new code segment, and without that header glibc maps every thread's stack
# executable. BOLT writes a new header table instead (a 2 MB page of its own before
# the hot code, which is why the huge-page mover follows anchors, not the first
# chunk). The output has no DWARF (BOLT 19 cannot rewrite all of rustc's:
# -update-debug-sections drops attributes it does not know, which would leave wrong
# line tables); the symbol table is rewritten, so backtraces and profilers still
# name the functions.
"$bolt" "$input" -o "$work/bolted" -data="$work/switchyard.fdata" \
  -reorder-blocks=ext-tsp -reorder-functions=cdsort -split-functions -split-all-cold -split-eh \
  -icf=1 >>"$log" 2>&1 ||
  { tail -20 "$log" >&2; fail "the rewrite failed"; }
# The stack must stay non-executable (PT_GNU_STACK present, flags RW).
stack=$(readelf -lW "$work/bolted" | awk '$1 == "GNU_STACK" { print $7 }')
[ "$stack" = RW ] || fail "the rewritten binary's stack is not marked non-executable (GNU_STACK: ${stack:-missing})"

step "BOLT: smoke run of the rewritten binary (log: $work/bolt-smoke.log)"
# Every client format against both upstream formats, streamed and not: train stops
# on the first combination that does not answer 2xx with a body.
"$bench" train --phase-secs 2 --gateway-bin "$work/bolted" >"$work/bolt-smoke.log" 2>&1 ||
  { tail -20 "$work/bolt-smoke.log" >&2; fail "the rewritten binary failed the smoke run"; }
# The training never runs TLS (the fake upstreams are plain HTTP), so its code was
# not profiled; check that the rewrite left it working.
bash scripts/lib/tls-smoke.sh "$work/bolted" >>"$work/bolt-smoke.log" 2>&1 ||
  { tail -20 "$work/bolt-smoke.log" >&2; fail "the rewritten binary failed the TLS check"; }
