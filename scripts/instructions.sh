#!/usr/bin/env bash
# Instructions per request, gateway against the reference relay (issue 16): both run
# under valgrind's callgrind and get the same load, so the figures are exact counts of
# user-space work, free of this VM's timing noise (a 2-vCPU VM moves CPU per request by
# ±10 % run to run; instruction counts repeat to within ~1.5 %: the
# allocator's periodic collections fall a little differently from run to run).
# What they do not show is the kernel's share (syscalls, wake-ups), cache misses and
# SHA-NI (valgrind has no SHA extensions, so the client-key hash runs in software here).
#
#   scripts/instructions.sh [RATE] [SECS]      (defaults: 50 requests/s for 30 s)
#
# KIND=stream sends the benchmark's streamed Messages request instead (`stream: true`,
# the fake upstream's 7-frame Anthropic SSE, read to the end): the path of the
# streaming time-to-first-byte row. KIND=agent sends a chat request the size and
# shape of a coding agent's (~50 KB, scripts/lib/agent_body.py), where the cost that
# grows with the body shows. Default KIND=chat (the benchmark's ~1 KB chat request).
#
# KEEP=DIR keeps the callgrind files there (gateway.cg.1-NN per thread, relay.cg.1-NN;
# read them with callgrind_annotate; names are written in full in every thread's file,
# not compressed across files, so each file reads on its own). CALLGRIND_OPTS adds
# callgrind options (e.g. "--dump-instr=yes --compress-pos=no" to count the code
# lines and pages a request runs). Needs valgrind and python3, and the release binaries in $CARGO_TARGET_DIR (default
# /var/cache/switchyard/target): `cargo build --release -p switchyard-gateway -p
# switchyard-bench`. GATEWAY=/path/to/switchyard measures another build.
#
# How: `switchyard-bench soak` runs a gateway (not measured) and its fake upstream;
# the script reads the soak's config, starts a second gateway on a copy of it under
# callgrind, and the relay (`switchyard-bench relay`) likewise, each against that fake
# upstream. A small keep-alive client (one connection, the benchmark's ~1 KB chat
# body) sends RATE requests a second. Counters are zeroed after a warm-up, so start-up
# (migrations, certificate loading) is not counted. Rows: instructions per request by
# thread (lanes: the connection runtimes; sqlite: SQLite's connection threads, the
# request log's own among them; other: the main runtime, the log writer's task among it).
set -euo pipefail
# The gateway's hot code stays file-backed here: moved onto huge pages (its default,
# crates/switchyard-huge-text) it is anonymous memory, where the tools below find no
# symbols for it.
export SWITCHYARD_HUGE_TEXT=false
cd "$(dirname "$0")/.."
RATE=${1:-50}
KIND=${KIND:-chat}
case "$KIND" in chat|stream|agent) ;; *) echo "KIND is chat, stream or agent" >&2; exit 2;; esac
SECS=${2:-30}
TARGET=${CARGO_TARGET_DIR:-/var/cache/switchyard/target}
BENCH=$TARGET/release/switchyard-bench
GATEWAY=${GATEWAY:-$TARGET/release/switchyard}
for tool in valgrind callgrind_annotate callgrind_control python3; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
[ -x "$BENCH" ] && [ -x "$GATEWAY" ] || { echo "build first: cargo build --release -p switchyard-gateway -p switchyard-bench" >&2; exit 1; }

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  pkill -f "$WORK" 2>/dev/null || true
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$WORK"/*.cg.1-* "$KEEP"/ 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# The fake upstream, hosted by the benchmark's soak (scripts/lib/soak-upstream.sh).
source scripts/lib/soak-upstream.sh
start_soak_upstream "$GATEWAY"

# load PORT SECS: keep-alive chat requests at RATE a second, one connection.
load() {
  python3 - "$1" "$RATE" "$2" "$KEY" "$KIND" <<'PY'
import http.client, json, sys, time
port, rate, secs, key, kind = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
if kind == "stream":
    path = "/v1/messages"
    body = json.dumps({"model": "claude-bench", "max_tokens": 64, "stream": True, "messages": [
        {"role": "assistant", "content": "Ready."}, {"role": "user", "content": "x" * 900}]})
elif kind == "agent":
    path = "/v1/chat/completions"
    sys.path.insert(0, "scripts/lib")
    from agent_body import agent_body
    body = agent_body()
else:
    path = "/v1/chat/completions"
    body = json.dumps({"model": "bench-model", "max_tokens": 64, "messages": [
        {"role": "system", "content": "You are a terse assistant."}, {"role": "user", "content": "x" * 900}]})
conn = http.client.HTTPConnection("127.0.0.1", port)
start = time.monotonic(); sent = 0
while time.monotonic() - start < secs:
    conn.request("POST", path, body, {"content-type": "application/json", "authorization": "Bearer " + key})
    response = conn.getresponse(); answer = response.read(); sent += 1
    if response.status != 200: sys.exit(f"status {response.status}")
    if kind == "stream" and b"message_stop" not in answer: sys.exit("the stream did not end with message_stop")
    pause = start + sent / rate - time.monotonic()
    if pause > 0: time.sleep(pause)
print(sent)
PY
}

# measure NAME COMMAND...: runs COMMAND under callgrind, warms it up, zeroes the
# counters, sends the load, and prints instructions per request by thread.
measure() {
  local name=$1; shift
  local port; port=$(free_port)
  local out="$WORK/$name.cg"
  # shellcheck disable=SC2068
  valgrind --tool=callgrind --separate-threads=yes --compress-strings=no --callgrind-out-file="$out" \
    ${CALLGRIND_OPTS:-} $@ --listen "127.0.0.1:$port" >"$WORK/$name.log" 2>&1 &
  local pid=$!
  PIDS+=($pid)
  for _ in $(seq 300); do
    python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null && break
    sleep 0.2
  done
  load "$port" 3 >/dev/null
  callgrind_control --zero "$pid" >/dev/null 2>&1
  local sent; sent=$(load "$port" "$SECS")
  callgrind_control --dump "$pid" >/dev/null 2>&1
  kill "$pid"; wait "$pid" 2>/dev/null || true
  python3 - "$name" "$sent" "$out" <<'PY'
import glob, re, subprocess, sys
name, sent, prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3]
groups = {}
# Only the dump taken after the load (`<out>.1-<thread>`); the files written at exit
# (`<out>-<thread>`) hold what ran after it, the shutdown.
for path in glob.glob(prefix + ".1-*"):
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
                          capture_output=True, text=True).stdout
    total = re.search(r"([\d,]+) \(100.0%\)\s+PROGRAM TOTALS", text)
    if not total:
        continue
    n = int(total.group(1).replace(",", ""))
    kind = ("lanes" if "conn::connection::serve" in text or "relay_connection" in text
            else "sqlite" if ("ConnectionWorker::establish::{{closure}}::{{closure}}" in text
                              or "log_thread.rs" in text) else "other")
    groups[kind] = groups.get(kind, 0) + n
total = sum(groups.values())
parts = ", ".join(f"{k} {v / sent:,.0f}" for k, v in sorted(groups.items(), key=lambda kv: -kv[1]))
print(f"{name}: {sent} requests, {total / sent:,.0f} instructions per request ({parts})")
PY
}

DATA=$WORK/data
mkdir -p "$DATA"
measure gateway "$GATEWAY" serve --data-dir "$DATA" --config "$WORK/bench.toml" --management-token bench-token
measure relay "$BENCH" relay --upstream "$UPSTREAM" --client reference
echo "($KIND requests at $RATE/s for $SECS s, one keep-alive connection)"
