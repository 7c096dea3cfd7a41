#!/usr/bin/env bash
# Starts Switchyard: the desktop tray app where a display exists, otherwise the
# headless gateway (`switchyard serve`) serving the same settings UI at /ui/.
#
#   bash scripts/start.sh                       # desktop app (or headless without a display)
#   SWITCHYARD_HEADLESS=1 bash scripts/start.sh --config switchyard.toml
#
# Extra arguments go to `switchyard serve` in headless mode. Both modes honour
# SWITCHYARD_DATA_DIR, SWITCHYARD_CONFIG and SWITCHYARD_MANAGEMENT_TOKEN; the desktop
# app also SWITCHYARD_PORT (else its preference, default 7821).
set -euo pipefail
cd "$(dirname "$0")/.."

build_ui() {
  if command -v npm >/dev/null 2>&1; then
    [ -d node_modules ] || npm ci --no-audit --no-fund --loglevel=error
    npm run --silent ui:build
  else
    echo "npm not found: starting without the settings UI (install Node.js 20 to get it)" >&2
  fi
}

has_display() { [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; }
has_gui_libs() { pkg-config --exists webkit2gtk-4.1 2>/dev/null; }

if [ -z "${SWITCHYARD_HEADLESS:-}" ] && has_display && has_gui_libs; then
  build_ui
  exec cargo run --release --locked -p switchyard-desktop --features custom-protocol
fi

if [ -z "${SWITCHYARD_HEADLESS:-}" ] && has_display; then
  echo "a display exists but the desktop libraries do not (see README: desktop app); starting headless" >&2
fi
build_ui
ui_args=()
[ -f ui/dist/index.html ] && ui_args=(--ui-dir ui/dist)
exec cargo run --release --locked -p switchyard-gateway --bin switchyard -- serve "${ui_args[@]}" "$@"
