# Sourced by the measurement scripts (instructions.sh, latency-legs.sh, thread-cpu.sh): the fake
# upstream the benchmark uses, hosted by `switchyard-bench soak` for as long as the
# script runs (its own gateway sends it one request a second).
#
#   start_soak_upstream GATEWAY_BIN
#
# Needs $BENCH, $WORK and the PIDS array; sets SOAK_PID, $WORK/bench.toml (the soak's
# config: the upstream's connection and the client key), UPSTREAM (its address) and
# KEY (the client key). free_port prints a free loopback port. start_proxies
# LABEL=BIN[@VAR=VALUE]... starts each gateway against that upstream, then the
# reference relay, and waits until all listen: "label pid port" lines in
# $WORK/proxies. A BIN named switchyard-desktop* is the desktop app: it is started
# under a display of its own (Xvfb, and a session bus of its own so that two
# copies do not hand over to each other as a second launch would), configured by
# its environment variables, and its line names the app's own pid.

start_soak_upstream() {
  local gateway=$1 config=
  "$BENCH" soak --rate 1 --minutes 30 --sample-secs 600 --stream-every 0 --gateway-bin "$gateway" \
    >"$WORK/soak.log" 2>&1 &
  SOAK_PID=$!
  PIDS+=("$SOAK_PID")
  for _ in $(seq 150); do
    config=$(pgrep -af "$gateway serve" | grep -o -- '--config [^ ]*' | head -1 | cut -d' ' -f2 || true)
    [ -n "$config" ] && [ -f "$config" ] && break
    sleep 0.2
  done
  [ -n "$config" ] || { echo "the soak's gateway did not start:" >&2; cat "$WORK/soak.log" >&2; exit 1; }
  cp "$config" "$WORK/bench.toml"
  UPSTREAM=$(grep -m1 -o '127\.0\.0\.1:[0-9]*' "$WORK/bench.toml")
  KEY=$(grep -m1 -o 'key = "[^"]*"' "$WORK/bench.toml" | cut -d'"' -f2)
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_proxies() {
  local i=0 spec label rest bin port vars
  : >"$WORK/proxies"
  for spec in "$@"; do
    label=${spec%%=*}; rest=${spec#*=}; bin=${rest%%@*}; vars=()
    [[ $rest == *@* ]] && read -ra vars <<<"${rest#*@}"
    [ -x "$bin" ] || { echo "$label: no executable at $bin" >&2; exit 1; }
    port=$(free_port)
    mkdir -p "$WORK/data$i"
    if [[ $(basename "$bin") == switchyard-desktop* ]]; then
      start_desktop "$bin" "$i" "$port" "${vars[@]}"
      echo "$label $DESKTOP_PID $port" >>"$WORK/proxies"
    else
      env "${vars[@]}" "$bin" serve --data-dir "$WORK/data$i" --config "$WORK/bench.toml" \
        --management-token bench-token --listen "127.0.0.1:$port" >"$WORK/proxy$i.log" 2>&1 &
      PIDS+=($!)
      echo "$label $! $port" >>"$WORK/proxies"
    fi
    i=$((i + 1))
  done
  port=$(free_port)
  "$BENCH" relay --upstream "$UPSTREAM" --client reference --listen "127.0.0.1:$port" >"$WORK/relay.log" 2>&1 &
  PIDS+=($!)
  echo "relay $! $port" >>"$WORK/proxies"
  while read -r label _ port; do
    for _ in $(seq 150); do
      python3 -c "import socket; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null && break
      sleep 0.2
    done
  done <"$WORK/proxies"
}

# start_desktop BIN INDEX PORT [VAR=VALUE...]: the desktop app hosting a gateway on
# PORT with the soak's config (the same data the CLI gets through its flags); sets
# DESKTOP_PID to the app's own process (the one whose threads count).
start_desktop() {
  local bin=$1 i=$2 port=$3 pid= display=
  shift 3
  command -v Xvfb >/dev/null && command -v dbus-run-session >/dev/null ||
    { echo "the desktop app needs Xvfb and dbus-run-session" >&2; exit 1; }
  # A display of its own: Xvfb picks a free number and writes it to fd 3.
  Xvfb -displayfd 3 -screen 0 1280x1024x24 -nolisten tcp 3>"$WORK/display$i" 2>/dev/null &
  PIDS+=($!)
  for _ in $(seq 100); do
    display=$(cat "$WORK/display$i" 2>/dev/null || true)
    [ -n "$display" ] && break
    sleep 0.1
  done
  [ -n "$display" ] || { echo "Xvfb did not start" >&2; exit 1; }
  env "$@" DISPLAY=":$display" SWITCHYARD_DATA_DIR="$WORK/data$i" SWITCHYARD_CONFIG="$WORK/bench.toml" \
    SWITCHYARD_MANAGEMENT_TOKEN=bench-token SWITCHYARD_PORT="$port" \
    XDG_CONFIG_HOME="$WORK/config$i" XDG_DATA_HOME="$WORK/share$i" NO_AT_BRIDGE=1 \
    dbus-run-session -- "$bin" --hidden >"$WORK/proxy$i.log" 2>&1 &
  # Not in PIDS: when the app is stopped, dbus-run-session stops its bus and exits.
  for _ in $(seq 150); do
    pid=$(pgrep -f -n -x "$bin --hidden" || true)
    [ -n "$pid" ] && grep -qz "^SWITCHYARD_PORT=$port\$" "/proc/$pid/environ" 2>/dev/null && break
    pid=
    sleep 0.2
  done
  [ -n "$pid" ] || { echo "the desktop app $bin did not start:" >&2; cat "$WORK/proxy$i.log" >&2; exit 1; }
  PIDS+=("$pid")
  DESKTOP_PID=$pid
}
