#!/usr/bin/env bash
# Starts Switchyard. Today that is the headless gateway (`switchyard serve`) with its
# management API; the desktop tray app will be started from here where a display
# exists once it lands. Extra arguments go to `switchyard serve`, e.g.
#
#   bash scripts/start.sh --config ~/.config/switchyard/switchyard.toml
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo run --release --locked -p switchyard-gateway --bin switchyard -- serve "$@"
