#!/usr/bin/env bash
# The gateway's profile-guided release build (docs/adr/0013-profile-guided-build.md):
#
#   1. builds `switchyard` instrumented (-Cprofile-generate),
#   2. runs the training workload through it (`switchyard-bench train`: every client
#      format against both upstream formats, streamed and not, at an agent's pace and
#      under load; then a short benchmark run for the pool, flow-control and
#      many-stream paths), all against the benchmark's fake upstream on loopback,
#   3. merges the profile with the toolchain's own llvm-profdata (rustup's
#      llvm-tools component, installed when missing: a profile must be read by the
#      LLVM that wrote it, so Debian's llvm-profdata will not do),
#   4. builds `switchyard` again with -Cprofile-use.
#
#   bash scripts/pgo-build.sh            # prints the optimized binary's path
#
# Each build has its own target directory under $CARGO_TARGET_DIR/pgo (different
# RUSTFLAGS would otherwise rebuild the plain release build's dependencies every
# time). Takes two release builds plus about a minute of training: ~20 minutes cold
# on 2 cores, ~8 warm. Outputs, in $CARGO_TARGET_DIR/pgo: switchyard (the optimized
# binary), switchyard.profdata, train.log.
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-$PWD/target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
work="$target/pgo"
raw="$work/raw"
step() { printf '\n==> %s\n' "$*" >&2; }

host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
  command -v rustup >/dev/null 2>&1 || {
    echo "needs llvm-profdata of rustc's own LLVM ($profdata): rustup's llvm-tools component, and rustup is not installed" >&2
    exit 1
  }
  step "rustup component add llvm-tools (llvm-profdata of this toolchain's LLVM)"
  rustup component add llvm-tools >&2
fi

step "the benchmark (plain release build): drives the training"
CARGO_TARGET_DIR="$target" cargo build --release --locked -p switchyard-bench >&2
bench="$target/release/switchyard-bench"

step "instrumented gateway"
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$raw" CARGO_TARGET_DIR="$work/instrumented" \
  cargo build --release --locked -p switchyard-gateway --bin switchyard >&2
instrumented="$work/instrumented/release/switchyard"

step "training (log: $work/train.log)"
# Cleared after the build: RUSTFLAGS instruments build scripts and proc macros too,
# and their profiles, written while the build runs, are not the gateway's.
rm -rf "$raw"
mkdir -p "$raw"
{
  "$bench" train --gateway-bin "$instrumented"
  "$bench" --quick --gateway-bin "$instrumented"
} >"$work/train.log" 2>&1 || { tail -40 "$work/train.log" >&2; exit 1; }
ls "$raw"/*.profraw >/dev/null 2>&1 || { echo "the instrumented gateway wrote no profile" >&2; exit 1; }
"$profdata" merge -o "$work/switchyard.profdata" "$raw"/*.profraw >&2

step "optimized gateway (-Cprofile-use)"
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-use=$work/switchyard.profdata" CARGO_TARGET_DIR="$work/optimized" \
  cargo build --release --locked -p switchyard-gateway --bin switchyard >&2
cp "$work/optimized/release/switchyard" "$work/switchyard"
echo "$work/switchyard"
