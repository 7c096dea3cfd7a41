# Sourced by the per-request counters (copies.sh, allocations.sh): a gateway run by
# `switchyard-bench soak` (the benchmark's fake upstream and ~1 KB chat request,
# keep-alive, 4 connections, no streams) at a steady rate.
#
#   start_soak_gateway RATE LAUNCHER
#
# LAUNCHER is $GATEWAY or a wrapper that execs it. Needs $BENCH, $GATEWAY and $WORK;
# sets SOAK (the soak's pid) and PID (the gateway's), and leaves the soak's output in
# $WORK/soak.log.

start_soak_gateway() {
  "$BENCH" soak --rate "$1" --minutes 10 --sample-secs 600 --stream-every 0 --connections 4 \
    --gateway-bin "$2" >"$WORK/soak.log" 2>&1 &
  SOAK=$!
  PID=
  for _ in $(seq 150); do
    PID=$(pgrep -f "^$GATEWAY serve" | head -1 || true)
    [ -n "$PID" ] && break
    sleep 0.2
  done
  [ -n "$PID" ] || { echo "the soak's gateway did not start:" >&2; cat "$WORK/soak.log" >&2; exit 1; }
}
