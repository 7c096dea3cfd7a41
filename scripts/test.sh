#!/usr/bin/env bash
# Switchyard's one test command: installs what a fresh Debian machine lacks, then
# runs every check and test. Used by `.ci/run` and by developers alike.
#
#   bash scripts/test.sh
#
# Order (TOOLCHAIN.md): system packages and tools → npm ci → formatting → GUI-free
# dependency check → UI typecheck, unit tests and build → clippy and cargo tests
# (gateway, desktop bindings and IPC/REST parity) → bindings freshness → the e2e
# binaries → browser e2e (Playwright + Debian chromium against `switchyard serve`)
# → real-app e2e (the desktop binary via tauri-driver under Xvfb) → the .deb package,
# unpacked into a scratch root, runs.
#
# Environment:
#   CARGO_TARGET_DIR   reused when set; otherwise /var/cache/switchyard/target when
#                      that can be created (keeps CI warm), else ./target.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"

# --- system packages (only what is missing; needs root or sudo) -------------------
# Build tools; the desktop app's GUI libraries (the gateway crates need none of
# them); Xvfb, dbus and WebKitWebDriver for the real-app e2e; chromium for the
# browser e2e; Postgres for team mode's tests (each test starts its own throwaway
# cluster as a non-root user in a temp dir: switchyard_testkit::postgres).
apt_packages=(build-essential pkg-config
  libwebkit2gtk-4.1-dev libsoup-3.0-dev libgtk-3-dev libayatana-appindicator3-dev librsvg2-dev libxdo-dev
  xvfb xauth dbus webkit2gtk-driver chromium
  postgresql)
need_apt=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need_apt+=("$p")
done
command -v node >/dev/null 2>&1 || need_apt+=(nodejs)
# The translation tests' judges are the official Python SDKs, in a virtualenv.
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need_apt+=(python3 python3-venv)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
if ((${#need_apt[@]})); then
  step "apt-get install ${need_apt[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}"
fi

# --- cargo target directory and tools -----------------------------------------------
if [ -z "${CARGO_TARGET_DIR:-}" ]; then
  if mkdir -p /var/cache/switchyard/target 2>/dev/null && [ -w /var/cache/switchyard/target ]; then
    export CARGO_TARGET_DIR=/var/cache/switchyard/target
  fi
fi
echo "cargo target dir: ${CARGO_TARGET_DIR:-./target}"
# A reused target directory grows without bound: every dependency change gives each
# test binary (150-190 MB) a new hash and leaves the old one behind, and the shared
# cache once filled this machine's disk. Keep the newest binary of each name, and
# no incremental state (it is keyed to the clone's path: a fresh clone never reuses it).
# The workspace's own libraries get a new hash in every clone (their path is part of
# it), so those a fresh clone finds are all from earlier clones: they go too. (awk
# here is mawk, which has no `{16}` intervals: hence `+`.)
prune_target_dir() {
  local deps="$1/debug/deps"
  [ -d "$deps" ] || return 0
  find "$deps" -maxdepth 1 -type f -perm -u+x -regextype posix-extended -regex '.*/[^/]+-[0-9a-f]{16}' \
    -printf '%T@ %p\n' | sort -rn | awk '{ n = $2; sub(/-[0-9a-f]+$/, "", n); if (seen[n]++) print $2 }' \
    | xargs -r rm -f
  find "$deps" -maxdepth 1 -type f -regextype posix-extended \
    -regex '.*/(lib)?switchyard_[a-z_]+-[0-9a-f]{16}\.(rlib|rmeta|d)' -delete
  rm -rf "$1/debug/incremental" "$1/debug/bundle"
}
prune_target_dir "${CARGO_TARGET_DIR:-target}"
tools="${HOME}/.cargo"
if mkdir -p /var/cache/switchyard/cargo-tools 2>/dev/null && [ -w /var/cache/switchyard/cargo-tools ]; then
  tools=/var/cache/switchyard/cargo-tools
fi
export PATH="$tools/bin:$PATH"
if ! command -v tauri-driver >/dev/null 2>&1; then
  step "cargo install tauri-driver (into $tools)"
  cargo install tauri-driver --locked --root "$tools"
fi

# The desktop crate is always built with its UI embedded, so clippy, the tests and
# the e2e binary share one build of tauri.
desktop_features=(--features switchyard-desktop/custom-protocol)

# --- npm packages: UI toolchain, the real agents, webdriverio --------------------------
step "npm ci"
npm ci --no-audit --no-fund --loglevel=error

# --- the official SDKs that judge format translation (tests/python) -------------------
# A virtualenv per requirements file content, reused across runs when it can be cached.
req=tests/python/requirements.txt
venv_root=target
if mkdir -p /var/cache/switchyard 2>/dev/null && [ -w /var/cache/switchyard ]; then venv_root=/var/cache/switchyard; fi
venv="$venv_root/pyenv-$(sha256sum "$req" | cut -c1-12)"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import anthropic, openai' >/dev/null 2>&1; then
  step "python SDK judges: virtualenv in $venv (pip install -r $req)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
fi
export SWITCHYARD_PYTHON="$venv/bin/python" SWITCHYARD_REQUIRE_PYTHON=1
# Team mode's tests must not skip here: Postgres was installed above.
export SWITCHYARD_REQUIRE_POSTGRES=1

step "cargo fmt --check"
cargo fmt --all -- --check

step "the gateway builds without GUI libraries (no tauri/gtk/webkit in its dependency tree)"
gui=$(cargo tree --locked -e normal,build \
  -p switchyard-types -p switchyard-resilience -p switchyard-gateway -p switchyard-testkit -p switchyard-tests \
  --prefix none | grep -Ei '^(tauri|wry|tao|gtk|webkit2gtk|javascriptcore|soup3|libappindicator)' || true)
if [ -n "$gui" ]; then echo "GUI crates in the gateway's tree:"; echo "$gui"; exit 1; fi
grep -q '"src-tauri"' <(sed -n '/default-members/,/]/p' Cargo.toml) && { echo "src-tauri must not be a default member"; exit 1; }
echo "ok"

# --- UI ------------------------------------------------------------------------------
step "UI: typecheck, unit tests (Vitest + Testing Library), build"
npm run --silent ui:typecheck
npm run --silent ui:test
npm run --silent ui:build

# --- Rust ----------------------------------------------------------------------------
step "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --locked "${desktop_features[@]}" -- -D warnings

step "cargo test (workspace; real agents required; writes the IPC bindings)"
SWITCHYARD_REQUIRE_AGENTS=1 cargo test --workspace --locked "${desktop_features[@]}"

step "IPC bindings are fresh (ui/src/ipc/bindings.ts matches the Rust commands)"
if ! git diff --exit-code -- ui/src/ipc/bindings.ts; then
  echo "ui/src/ipc/bindings.ts is stale: run 'cargo test -p switchyard-desktop' and commit it"
  exit 1
fi

# --- end to end ----------------------------------------------------------------------
step "build the e2e binaries (switchyard, fake-upstream, switchyard-desktop with the UI embedded)"
# One build for all three (one feature resolution, so shared crates compile once).
cargo build --locked --workspace --exclude switchyard-bench --bins "${desktop_features[@]}"

step "browser e2e: Playwright + chromium against switchyard serve"
npm run --silent ui:e2e

step "real-app e2e: the desktop binary in its webview (tauri-driver, WebKitWebDriver, Xvfb)"
xvfb-run -a dbus-run-session -- node --test --test-concurrency=1 src-tauri/e2e/

step "package: the .deb (tauri bundler), installed into a scratch root, starts"
bash scripts/package.sh --check

step "all tests passed"
