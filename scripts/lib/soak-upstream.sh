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
# $WORK/proxies.

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
    env "${vars[@]}" "$bin" serve --data-dir "$WORK/data$i" --config "$WORK/bench.toml" \
      --management-token bench-token --listen "127.0.0.1:$port" >"$WORK/proxy$i.log" 2>&1 &
    PIDS+=($!)
    echo "$label $! $port" >>"$WORK/proxies"
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
