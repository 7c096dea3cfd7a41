#!/usr/bin/env bash
# Switchyard's one test command: installs what a fresh Debian machine lacks, then
# runs every check and test. Used by `.ci/run` and by developers alike.
#
#   bash scripts/test.sh
#
# Environment:
#   CARGO_TARGET_DIR   reused when set; otherwise /var/cache/switchyard/target when
#                      that can be created (keeps CI warm), else ./target.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

# --- system packages (only what is missing; needs root or sudo) -------------------
need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
command -v node >/dev/null 2>&1 || need_apt+=(nodejs)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
if ((${#need_apt[@]})); then
  step "apt-get install ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}"
fi

# --- cargo target directory ---------------------------------------------------------
if [ -z "${CARGO_TARGET_DIR:-}" ]; then
  if mkdir -p /var/cache/switchyard/target 2>/dev/null && [ -w /var/cache/switchyard/target ]; then
    export CARGO_TARGET_DIR=/var/cache/switchyard/target
  fi
fi
echo "cargo target dir: ${CARGO_TARGET_DIR:-./target}"

# --- npm packages: the real agents (Claude Code, Codex) used by tests/tests/agents.rs --
step "npm ci"
npm ci --no-audit --no-fund --loglevel=error

# --- Rust ---------------------------------------------------------------------------
step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo test (workspace; real agents required)"
SWITCHYARD_REQUIRE_AGENTS=1 cargo test --workspace --locked

step "all tests passed"
