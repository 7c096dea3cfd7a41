#!/usr/bin/env bash
# Sizes of the request path's futures (issue 16). axum boxes every handler's future
# (an allocation and a copy of all of it per request), and an open stream keeps its
# relay's; an async fn keeps a by-value argument twice and holds its largest awaited
# sub-future inline, so one rare path can grow every request. rustc reports each
# type's layout with -Zprint-type-sizes (a nightly flag; RUSTC_BOOTSTRAP=1 lets the
# stable compiler take it, for this one diagnostic build).
#
#   scripts/future-sizes.sh [PATTERN]   (default: the request path's async fns)
#
# Builds the gateway library in release into its own target directory
# ($CARGO_TARGET_DIR-ts, first run ~5 min: the flag must not touch the normal build's
# fingerprints) and prints "bytes  async fn", largest first. Details of one future
# (its variants, each awaited sub-future and local):
#   grep -A40 '{async fn body of proxy::attempt::stages()}' "$OUT"
set -euo pipefail
cd "$(dirname "$0")/.."
PATTERN=${1:-'proxy::|http::inference'}
TARGET=${CARGO_TARGET_DIR:-/var/cache/switchyard/target}-ts
OUT=${OUT:-$(mktemp)}
RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=$TARGET cargo rustc --release -p switchyard-gateway --lib -- \
  -Zprint-type-sizes >"$OUT" 2>/dev/null
echo "handler (axum's boxed future): $(grep -E '^print-type-size type: `\{async block@[^`]*http/inference' "$OUT" |
  sed -E 's/.*`: ([0-9]+) bytes.*/\1/' | sort -rn | head -1) bytes"
grep -E '^print-type-size type: `\{async fn body of' "$OUT" |
  sed -E 's/print-type-size type: `\{async fn body of (.*)\}`: ([0-9]+) bytes.*/\2 \1/' |
  grep -E "$PATTERN" | sort -rn | awk '!seen[$2]++' | head -25
echo "(full report: $OUT)"
