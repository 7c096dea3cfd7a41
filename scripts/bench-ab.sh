#!/usr/bin/env bash
# A/B added-latency benchmark (issue 9): the gateway built from this tree against the
# gateway of an older revision, measured in ONE run of switchyard-bench, so both see
# the same host and take turns slice by slice (the comparison and why it is fair:
# crates/switchyard-bench/src/ab.rs; the figure lands in docs/benchmarks.md).
#
#   scripts/bench-ab.sh [--candidate CREV] [REV] [switchyard-bench ARGS...]
#
# REV: the baseline revision. Default 1f49985, the last commit before issue 9's work
#   started ("Bindings export the ranges table ..."), so the default run answers
#   issue 9's "does not regress by more than 5 %".
# --candidate CREV: measure the gateway of revision CREV (built like the baseline, in
#   its own worktree) instead of this working tree's. Use it when the working tree is
#   being edited while you measure, or to A/B two commits.
# ARGS go to switchyard-bench as they are; --write-docs writes the report into
#   docs/benchmarks.md. --rates 2000 and --duration-secs 20 are added unless ARGS
#   set them (20 s per way = 20 paired 1 s rounds: enough for a 95 % interval).
#
# What it does:
#   1. REV's `switchyard` is built in a detached git worktree OUTSIDE this clone,
#      $AB_DIR/<rev>, with its own CARGO_TARGET_DIR next to it, $AB_DIR/<rev>-target,
#      so that build never invalidates this tree's target directory. AB_DIR defaults
#      to /var/cache/switchyard/ab, or a temp dir when that cannot be created. A
#      worktree and target dir left from an earlier run are reused (incremental); a
#      new target dir is seeded with a copy of another revision's, when there is one,
#      so that only what changed between them builds.
#   2. This tree's release `switchyard` (or, with --candidate, CREV's, as in 1) and
#      `switchyard-bench` are built in CARGO_TARGET_DIR (default
#      /var/cache/switchyard/target when it can be created, else ./target, as in
#      scripts/test.sh).
#   3. switchyard-bench runs with --baseline-bin <REV's switchyard>.
#
# Release builds take several minutes each on 2 cores (cold); they run under `nice`.
# The benchmark itself does not, so it competes on equal terms with whatever else
# runs; the report states the CPU others took.
#
# Remove the worktree with: git worktree remove --force "$AB_DIR/<rev>"
set -euo pipefail
cd "$(dirname "$0")/.."

candidate=""
if [ "${1:-}" = "--candidate" ]; then
  [ $# -ge 2 ] || { echo "bench-ab: --candidate needs a revision" >&2; exit 2; }
  candidate="$2"
  shift 2
fi
rev="1f49985"
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  rev="$1"
  shift
fi
short_of() {
  local sha
  sha="$(git rev-parse --verify --quiet "$1^{commit}")" || { echo "bench-ab: unknown revision '$1'" >&2; exit 2; }
  git rev-parse --short "$sha"
}
short="$(short_of "$rev")"

ab_dir="${AB_DIR:-/var/cache/switchyard/ab}"
if ! mkdir -p "$ab_dir" 2>/dev/null || [ ! -w "$ab_dir" ]; then
  ab_dir="$(mktemp -d -t switchyard-ab.XXXXXX)"
fi

if [ -z "${CARGO_TARGET_DIR:-}" ]; then
  if mkdir -p /var/cache/switchyard/target 2>/dev/null; then
    export CARGO_TARGET_DIR=/var/cache/switchyard/target
  else
    export CARGO_TARGET_DIR="$PWD/target"
  fi
fi

step() { printf '\n==> %s\n' "$*" >&2; }

# Builds the `switchyard` of revision $1 (short hash) in its worktree and target dir
# under $ab_dir; the binary ends up at $ab_dir/$1-target/release/switchyard.
build_rev() {
  local short="$1" worktree="$ab_dir/$1" target="$ab_dir/$1-target" seed
  git worktree prune
  if [ -e "$worktree/.git" ]; then
    step "$short: reusing the worktree $worktree"
    git -C "$worktree" checkout --quiet --detach "$short"
  else
    step "$short: git worktree at $worktree"
    git worktree add --detach "$worktree" "$short"
  fi
  if [ ! -d "$target" ]; then
    seed="$(find "$ab_dir" -mindepth 1 -maxdepth 1 -type d -name '*-target' | head -n 1)"
    if [ -n "$seed" ]; then
      step "$short: seeding $target from $seed"
      cp -a "$seed" "$target"
    fi
  fi
  step "$short: cargo build --release (CARGO_TARGET_DIR=$target)"
  (cd "$worktree" && CARGO_TARGET_DIR="$target" nice -n 10 \
    cargo build --release -p switchyard-gateway --bin switchyard)
}

# --- 1. the baseline -----------------------------------------------------------------
build_rev "$short"
baseline_bin="$ab_dir/$short-target/release/switchyard"

# --- 2. the candidate and the benchmark ----------------------------------------------
candidate_args=()
if [ -n "$candidate" ]; then
  cshort="$(short_of "$candidate")"
  build_rev "$cshort"
  candidate_args=(--gateway-bin "$ab_dir/$cshort-target/release/switchyard" --gateway-label "$cshort")
  step "benchmark: cargo build --release (CARGO_TARGET_DIR=$CARGO_TARGET_DIR)"
  nice -n 10 cargo build --release -p switchyard-bench --bin switchyard-bench
else
  candidate_args=(--gateway-bin "$CARGO_TARGET_DIR/release/switchyard")
  step "candidate (this tree) and benchmark: cargo build --release (CARGO_TARGET_DIR=$CARGO_TARGET_DIR)"
  nice -n 10 cargo build --release -p switchyard-gateway -p switchyard-bench \
    --bin switchyard --bin switchyard-bench
fi

# --- 3. the run ----------------------------------------------------------------------
has_arg() {
  local want="$1" a
  shift
  for a in "$@"; do
    case "$a" in "$want" | "$want"=*) return 0 ;; esac
  done
  return 1
}
defaults=()
has_arg --rates "$@" || defaults+=(--rates 2000)
has_arg --duration-secs "$@" || defaults+=(--duration-secs 20)

step "switchyard-bench: ${cshort:-this tree} against baseline $short"
exec "$CARGO_TARGET_DIR/release/switchyard-bench" "${candidate_args[@]}" \
  --baseline-bin "$baseline_bin" --baseline-label "$short" \
  "${defaults[@]}" "$@"
