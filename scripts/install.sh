#!/usr/bin/env bash
# Puts the headless gateway on the PATH: builds `switchyard` and copies it to
# ~/.local/bin (or PREFIX/bin). The build is the profile-guided one
# (scripts/pgo-build.sh, docs/adr/0013-profile-guided-build.md: a fifth to a quarter
# less CPU per request; with LLVM's BOLT installed, Debian's `bolt-19`, its post-link
# layout step too); SWITCHYARD_PGO=0 builds the plain release binary instead, in
# half the time. If the profile-guided build fails (it needs rustup's llvm-tools
# component), the plain one is installed, with a warning. For the desktop app, build
# and install the Debian package instead: `bash scripts/package.sh`, then
# `sudo apt install ./<deb>`.
#
#   bash scripts/install.sh                  # → ~/.local/bin/switchyard
#   PREFIX=/usr/local bash scripts/install.sh  # builds as you; only the copy uses sudo
#   SWITCHYARD_PGO=0 bash scripts/install.sh   # the plain release build
set -euo pipefail
cd "$(dirname "$0")/.."

prefix="${PREFIX:-$HOME/.local}"
target="${CARGO_TARGET_DIR:-target}"
command -v cargo >/dev/null 2>&1 || { echo "cargo not found: install Rust 1.94 or newer (https://rustup.rs)"; exit 1; }
plain_build() {
  echo "building switchyard (release; the first build takes 5-15 minutes)"
  cargo build --release --locked -p switchyard-gateway --bin switchyard
  bin="$target/release/switchyard"
}
if [ "${SWITCHYARD_PGO:-1}" = 0 ]; then
  plain_build
else
  echo "building switchyard, profile-guided (two release builds and a minute of training:"
  echo "10-25 minutes the first time; SWITCHYARD_PGO=0 for the plain build)"
  if ! bin=$(bash scripts/pgo-build.sh); then
    echo "warning: the profile-guided build failed (above); installing the plain release build" >&2
    plain_build
  fi
fi
as_root=()
if ! mkdir -p "$prefix/bin" 2>/dev/null || [ ! -w "$prefix/bin" ]; then
  as_root=(sudo)
  echo "$prefix/bin is not writable by you: copying with sudo"
fi
"${as_root[@]}" install -d "$prefix/bin"
"${as_root[@]}" install -m 0755 "$bin" "$prefix/bin/switchyard"
echo "installed: $prefix/bin/switchyard ($("$prefix/bin/switchyard" --version))"
case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) echo "note: $prefix/bin is not on your PATH; add it (e.g. in ~/.profile): export PATH=\"$prefix/bin:\$PATH\"" ;;
esac
echo "start it: switchyard serve    (the settings UI needs the built UI: --ui-dir ui/dist after 'npm run ui:build')"
