#!/usr/bin/env bash
# Puts the headless gateway on the PATH: builds `switchyard` (release) and copies it
# to ~/.local/bin (or PREFIX/bin). For the desktop app, build and install the
# Debian package instead: `bash scripts/package.sh`, then `sudo apt install ./<deb>`.
#
#   bash scripts/install.sh                  # → ~/.local/bin/switchyard
#   PREFIX=/usr/local bash scripts/install.sh  # builds as you; only the copy uses sudo
set -euo pipefail
cd "$(dirname "$0")/.."

prefix="${PREFIX:-$HOME/.local}"
target="${CARGO_TARGET_DIR:-target}"
command -v cargo >/dev/null 2>&1 || { echo "cargo not found: install Rust 1.94 or newer (https://rustup.rs)"; exit 1; }
echo "building switchyard (release; the first build takes 5-15 minutes)"
cargo build --release --locked -p switchyard-gateway --bin switchyard
as_root=()
if ! mkdir -p "$prefix/bin" 2>/dev/null || [ ! -w "$prefix/bin" ]; then
  as_root=(sudo)
  echo "$prefix/bin is not writable by you: copying with sudo"
fi
"${as_root[@]}" install -d "$prefix/bin"
"${as_root[@]}" install -m 0755 "$target/release/switchyard" "$prefix/bin/switchyard"
echo "installed: $prefix/bin/switchyard ($("$prefix/bin/switchyard" --version))"
case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) echo "note: $prefix/bin is not on your PATH; add it (e.g. in ~/.profile): export PATH=\"$prefix/bin:\$PATH\"" ;;
esac
echo "start it: switchyard serve    (the settings UI needs the built UI: --ui-dir ui/dist after 'npm run ui:build')"
