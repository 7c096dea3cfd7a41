#!/usr/bin/env bash
# Builds Switchyard's Debian package with the tauri bundler: the desktop app
# (`switchyard-desktop`, with its menu entry and icons) plus the headless gateway
# CLI as /usr/bin/switchyard.
#
#   bash scripts/package.sh            # release build → prints the .deb's path
#   bash scripts/package.sh --check    # debug build (reuses the test build), then
#                                      # installs it into a scratch root and checks
#                                      # that `switchyard --version` runs and that
#                                      # `switchyard serve` starts and answers
#
# The release package holds the profile-guided builds (scripts/pgo-build.sh
# --with-desktop, docs/adr/0013-profile-guided-build.md): the CLI the benchmark
# measures (with the BOLT step when LLVM's BOLT is installed) and the desktop app
# built from the same profile. About 40 minutes on 2 cores, cold.
# SWITCHYARD_PGO=0 packages the plain release builds instead (about half the time).
#
# Install the package: sudo apt install ./Switchyard_<version>_amd64.deb
set -euo pipefail
cd "$(dirname "$0")/.."

check=0
profile=release
if [ "${1:-}" = "--check" ]; then
  check=1
  profile=debug
fi
target="${CARGO_TARGET_DIR:-$PWD/target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac

cargo_profile=()
tauri_profile=()
if [ "$profile" = release ]; then cargo_profile=(--release); else tauri_profile=(--debug); fi

[ -d node_modules ] || npm ci --no-audit --no-fund --loglevel=error
if [ "$profile" = release ] && [ "${SWITCHYARD_PGO:-1}" != 0 ]; then
  # Both binaries profile-guided, built by pgo-build.sh in its own target directory;
  # `tauri bundle` packages the desktop binary found there without building again.
  cli=$(bash scripts/pgo-build.sh --with-desktop)
  built="$target/pgo/optimized"
  extra=$(printf '{"bundle":{"linux":{"deb":{"files":{"/usr/bin/switchyard":"%s"}}}}}' "$cli")
  CARGO_TARGET_DIR="$built" npx --no-install tauri bundle --bundles deb --config "$extra" --ci
else
  # The headless CLI, bundled beside the desktop app.
  cargo build --locked "${cargo_profile[@]}" -p switchyard-gateway --bin switchyard
  cli="$target/$profile/switchyard"
  built="$target"
  extra=$(printf '{"bundle":{"linux":{"deb":{"files":{"/usr/bin/switchyard":"%s"}}}}}' "$cli")
  npx --no-install tauri build "${tauri_profile[@]}" --bundles deb --config "$extra" --ci
fi
deb=$(ls -t "$built/$profile/bundle/deb/"*.deb | head -n1)
echo "package: $deb"

[ "$check" = 1 ] || exit 0

# Install into a scratch root (what dpkg would unpack) and run what it installed.
root=$(mktemp -d)
data=$(mktemp -d)
cleanup() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null || true; rm -rf "$root" "$data"; }
trap cleanup EXIT
dpkg-deb -x "$deb" "$root"
dpkg-deb -f "$deb" Package Version Depends
for f in usr/bin/switchyard usr/bin/switchyard-desktop usr/share/applications/Switchyard.desktop; do
  [ -e "$root/$f" ] || { echo "missing from the package: /$f"; ls -R "$root" | head -50; exit 1; }
done
"$root/usr/bin/switchyard" --version

# Port 0: the gateway picks a free one and says which.
"$root/usr/bin/switchyard" serve --listen 127.0.0.1:0 --data-dir "$data" >"$data/serve.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  url=$(sed -n 's/^Switchyard gateway listening on \(http:\/\/[0-9.:]*\).*/\1/p' "$data/serve.log")
  if [ -n "$url" ]; then
    hostport=${url#http://}
    # Plain bash: no curl needed on a fresh machine.
    if exec 3<>"/dev/tcp/${hostport%:*}/${hostport##*:}" 2>/dev/null; then
      printf 'GET /api/hello HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' "$hostport" >&3
      if head -n1 <&3 | grep -q ' 200 '; then
        exec 3>&-
        echo "the packaged gateway started and answers on $url"
        exit 0
      fi
      exec 3>&-
    fi
  fi
  sleep 0.1
done
echo "the packaged gateway did not answer:"; cat "$data/serve.log"; exit 1
