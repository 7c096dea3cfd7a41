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
#   4. builds `switchyard` again with -Cprofile-use,
#   5. when LLVM's BOLT is installed (Debian: `apt install bolt-19`), lays that
#      binary's code out again after the link: instruments it (llvm-bolt
#      -instrument), runs the same training through it, and rewrites it from that
#      profile (hot blocks and functions packed together, cold parts split off: the
#      request path's code on fewer cache lines and pages). The rewritten binary
#      must then pass a smoke run (`switchyard-bench train --phase-secs 2`, and a
#      TLS request when openssl and python3 are there) or the step-4 binary is kept
#      (scripts/lib/bolt-layout.sh).
#      SWITCHYARD_BOLT=0 skips the step.
#
#   bash scripts/pgo-build.sh                  # prints the optimized binary's path
#   bash scripts/pgo-build.sh --with-desktop   # also the desktop app (scripts/package.sh)
#
# --with-desktop builds `switchyard-desktop` (with the UI embedded) in the same two
# cargo invocations as the CLI, and the desktop binary is built with the profile the
# CLI was trained on: the gateway code in both binaries is the same compiled crate,
# so the same symbol names, and a profile is matched to functions by their symbol
# names. (Built in separate invocations, the gateway crate gets different metadata
# hashes, so different symbol names, and the profile would match nothing.) The
# training runs the CLI only: the desktop app needs a display, and its gateway is
# the CLI's. The desktop binary gets no BOLT step (that profile is of one binary's
# own addresses). Adds the desktop's dependencies to both builds.
#
# Each build has its own target directory under $CARGO_TARGET_DIR/pgo (different
# RUSTFLAGS would otherwise rebuild the plain release build's dependencies every
# time). Takes two release builds plus about a minute of training (two with BOLT):
# ~20 minutes cold on 2 cores, ~12 warm. Outputs, in $CARGO_TARGET_DIR/pgo:
# switchyard (the optimized binary), switchyard.profdata, train.log; with BOLT also
# switchyard.fdata, bolt-train.log, bolt.log; with --with-desktop also
# switchyard-desktop (and the desktop's build in optimized/release, where
# `tauri bundle` finds it).
set -euo pipefail
cd "$(dirname "$0")/.."

with_desktop=0
case "${1:-}" in
  "") ;;
  --with-desktop) with_desktop=1 ;;
  *) echo "usage: bash scripts/pgo-build.sh [--with-desktop]" >&2; exit 2 ;;
esac

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

# What each of the two builds compiles: the CLI, and with --with-desktop the desktop
# app in the same invocation (see the top).
binaries=(-p switchyard-gateway --bin switchyard)
if [ "$with_desktop" = 1 ]; then
  binaries+=(-p switchyard-desktop --bin switchyard-desktop --features switchyard-desktop/custom-protocol)
  step "the settings UI (embedded in the desktop app)"
  [ -d node_modules ] || npm ci --no-audit --no-fund --loglevel=error >&2
  npm run --silent ui:build >&2
fi

step "instrumented gateway"
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$raw" CARGO_TARGET_DIR="$work/instrumented" \
  cargo build --release --locked "${binaries[@]}" >&2
instrumented="$work/instrumented/release/switchyard"

source scripts/lib/pgo-train.sh
step "training (log: $work/train.log)"
# Cleared after the build: RUSTFLAGS instruments build scripts and proc macros too,
# and their profiles, written while the build runs, are not the gateway's.
rm -rf "$raw"
mkdir -p "$raw"
pgo_train "$bench" "$instrumented" "$work/train.log"
ls "$raw"/*.profraw >/dev/null 2>&1 || { echo "the instrumented gateway wrote no profile" >&2; exit 1; }
"$profdata" merge -o "$work/switchyard.profdata" "$raw"/*.profraw >&2

# BOLT, if installed: `llvm-bolt`, or the newest `llvm-bolt-NN` on the PATH.
bolt=
if [ "${SWITCHYARD_BOLT:-1}" != 0 ]; then
  bolt=$(command -v llvm-bolt || compgen -c llvm-bolt- | grep -E '^llvm-bolt-[0-9]+$' | sort -t- -k3 -n | tail -1 || true)
  [ -n "$bolt" ] && bolt=$(readlink -f "$(command -v "$bolt")")
  [ -n "$bolt" ] || step "no llvm-bolt on the PATH: the post-link layout step is skipped (Debian: apt install bolt-19)"
fi

step "optimized gateway (-Cprofile-use)"
# BOLT moves whole functions only in a binary that kept its link-time relocations
# (crates/switchyard-gateway/build.rs adds --emit-relocs on this variable).
SWITCHYARD_EMIT_RELOCS=$([ -n "$bolt" ] && echo 1 || echo 0) \
  RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-use=$work/switchyard.profdata" CARGO_TARGET_DIR="$work/optimized" \
  cargo build --release --locked "${binaries[@]}" >&2
cp "$work/optimized/release/switchyard" "$work/switchyard"
if [ "$with_desktop" = 1 ]; then
  cp "$work/optimized/release/switchyard-desktop" "$work/switchyard-desktop"
fi
if [ -n "$bolt" ]; then
  if bash scripts/lib/bolt-layout.sh "$bolt" "$work" "$bench"; then
    cp "$work/bolted" "$work/switchyard"
  else
    step "warning: the BOLT step failed (above; log: $work/bolt.log): keeping the profile-guided binary"
  fi
fi
echo "$work/switchyard"
