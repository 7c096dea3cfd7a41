#!/usr/bin/env bash
# Where a request's added latency goes at an agent's pace (issue 16): the gateway's
# request taken apart into its legs by the kernel's own timestamps, beside the
# reference relay's, in one run. Instruction counts (scripts/instructions.sh) say how
# much code runs; this says how long it takes when it runs cold, which at 10 requests
# a second is what the added p50 is made of.
#
#   scripts/latency-legs.sh [RATE] [SECS] [LABEL=BIN[@VAR=VALUE]] ...
#
# Defaults: 10 requests/s for 40 s, one gateway: the release build in
# $CARGO_TARGET_DIR (default /var/cache/switchyard/target). Several LABEL=BIN
# arguments compare builds (or one build under an environment variable, after `@`)
# in the same run; the relay is always added last. RATE is the total: the proxies
# take the requests in turn, one keep-alive connection each, so each sees RATE/n.
#
# Legs, p50 in µs, from `perf record` of the scheduler and syscall tracepoints:
#   client → proxy runs   the client's send to the proxy's first event (wake-up)
#   proxy inbound         the proxy's read of the request to its write upstream
#   upstream              the proxy's write to the fake upstream's answer (its own
#                         work: the same code for every proxy, so a difference here
#                         is what the proxy left in the caches it shares)
#   upstream → proxy      the upstream's write to the proxy's read of it
#   proxy outbound        the proxy's read of the answer to its write to the client
#   proxy → client        that write to the client's read returning
#   total                 the client's send of the body to its read of the answer
#
# Needs perf (tracepoints: run as root or with kernel.perf_event_paranoid ≤ -1) and
# python3, and the release binaries: `cargo build --release -p switchyard-gateway -p
# switchyard-bench`. The fake upstream is hosted by `switchyard-bench soak` (whose own
# gateway sends it one request a second; the p50s do not see it). OUT=DIR keeps the
# trace (trace.data, events.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${1:-10}
SECS=${2:-40}
shift $(( $# >= 2 ? 2 : $# ))
TARGET=${CARGO_TARGET_DIR:-/var/cache/switchyard/target}
BENCH=$TARGET/release/switchyard-bench
[ $# -gt 0 ] || set -- "gateway=$TARGET/release/switchyard"
for tool in perf python3; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
[ -x "$BENCH" ] || { echo "build first: cargo build --release -p switchyard-gateway -p switchyard-bench" >&2; exit 1; }
[ "$SECS" -ge 10 ] || { echo "SECS is at least 10 (5 s of warm-up and wind-down are not traced)" >&2; exit 2; }

WORK=$(mktemp -d)
OUT=${OUT:-$WORK/out}
mkdir -p "$OUT"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  pkill -f "$WORK" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

FIRST=${1#*=}; FIRST=${FIRST%%@*}
# The fake upstream, hosted by the benchmark's soak (scripts/lib/soak-upstream.sh).
source scripts/lib/soak-upstream.sh
start_soak_upstream "$FIRST"
UPSTREAM_PID=$SOAK_PID

# One process per proxy, the relay last: "label pid port" lines in $WORK/proxies.
start_proxies "$@"

# The client: RATE requests a second in turn over the proxies (the benchmark's ~1 KB
# chat body), writing "fd label" for each proxy's connection.
python3 - "$RATE" "$SECS" "$KEY" "$WORK/proxies" "$WORK/fds" <<'PY' &
import http.client, json, sys, time
rate, secs, key, proxies, fds = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
body = json.dumps({"model": "bench-model", "max_tokens": 64, "messages": [
    {"role": "system", "content": "You are a terse assistant."}, {"role": "user", "content": "x" * 900}]})
conns = []
with open(proxies) as f, open(fds, "w") as out:
    for line in f:
        label, _, port = line.split()
        conn = http.client.HTTPConnection("127.0.0.1", int(port))
        conn.connect()
        out.write(f"{conn.sock.fileno()} {label}\n")
        conns.append(conn)
start = time.monotonic(); sent = 0
while time.monotonic() - start < secs:
    conn = conns[sent % len(conns)]
    conn.request("POST", "/v1/chat/completions", body, {"content-type": "application/json", "authorization": "Bearer " + key})
    response = conn.getresponse(); response.read(); sent += 1
    if response.status != 200: sys.exit(f"status {response.status}")
    pause = start + sent / rate - time.monotonic()
    if pause > 0: time.sleep(pause)
PY
CLIENT=$!
PIDS+=("$CLIENT")
sleep 3
# perf's own events left out (each event selector takes its own --exclude-perf):
# with them the trace grows by its own writes, to gigabytes a minute.
perf record -q -a -e sched:sched_switch --exclude-perf -e sched:sched_wakeup --exclude-perf \
  -e raw_syscalls:sys_enter --exclude-perf -e raw_syscalls:sys_exit --exclude-perf \
  -o "$OUT/trace.data" -- sleep $((SECS - 5)) >/dev/null 2>&1
wait "$CLIENT"
perf script -i "$OUT/trace.data" -F pid,tid,comm,cpu,time,event,trace 2>/dev/null \
  | grep -v '^ *perf ' >"$OUT/events.txt"

python3 - "$OUT/events.txt" "$WORK/proxies" "$WORK/fds" "$CLIENT" "$UPSTREAM_PID" "$RATE" <<'PY'
import re, statistics, sys
events, proxies, fds, client, upstream, rate = sys.argv[1:7]
pid_of = {}
order = []
for line in open(proxies):
    label, pid, _ = line.split()
    pid_of[label] = pid
    order.append(label)
label_of_fd = {}
for line in open(fds):
    fd, label = line.split()
    label_of_fd[int(fd)] = label
# x86-64 syscall numbers: sendto 44, recvfrom 45, writev 20.
SENDTO, RECVFROM, WRITEV = 44, 45, 20
line_re = re.compile(r'^\s*\S+\s+(\d+)/(\d+)\s+\[\d+\]\s+([\d.]+):\s+raw_syscalls:sys_(enter|exit):\s+NR (\d+) (.*)$')
cycles, cur = [], None
for line in open(events):
    m = line_re.match(line)
    if not m:
        continue
    pid, _, t, kind, nr, rest = m.groups()
    t, nr = float(t) * 1e6, int(nr)
    if pid == client:
        # The body goes out in its own sendto (http.client sends the head first).
        if kind == "enter" and nr == SENDTO:
            args = rest.strip("()").split(", ")
            if int(args[2], 16) > 1000:
                cur = {"label": label_of_fd.get(int(args[0], 16)), "t0": t, "events": []}
        elif kind == "exit" and nr == RECVFROM and cur is not None:
            cur["t1"] = t
            cycles.append(cur)
            cur = None
    elif cur is not None:
        cur["events"].append((t, pid, kind, nr, rest))
legs = {label: [] for label in order}
for c in cycles:
    proxy = pid_of.get(c["label"])
    if proxy is None:
        continue
    s = {}
    for t, pid, kind, nr, rest in c["events"]:
        if pid == proxy:
            s.setdefault("first", t)
            if "in" not in s and kind == "exit" and nr == RECVFROM and int(rest.split("= ")[1]) > 1000:
                s["in"] = t
            elif "in" in s and "up" not in s and kind == "enter" and nr == WRITEV:
                s["up"] = t
            elif "answer" in s and "back" not in s and kind == "exit" and nr == RECVFROM:
                s["back"] = t
            elif "back" in s and "out" not in s and kind == "enter" and nr == WRITEV:
                s["out"] = t
        elif pid == upstream and "up" in s and "answer" not in s and kind == "enter" and nr == WRITEV:
            s["answer"] = t
    if len(s) == 6:
        legs[c["label"]].append((s["first"] - c["t0"], s["up"] - s["in"], s["answer"] - s["up"],
                                 s["back"] - s["answer"], s["out"] - s["back"], c["t1"] - s["out"],
                                 c["t1"] - c["t0"]))
names = ["client → proxy runs", "proxy inbound", "upstream", "upstream → proxy", "proxy outbound",
         "proxy → client", "total"]
print(f"Legs of a request at {rate} requests/s in all (p50 µs; n = requests traced)\n")
print("| Leg | " + " | ".join(order) + " |")
print("|---|" + "---:|" * len(order))
for i, name in enumerate(names):
    cells = []
    for label in order:
        values = [row[i] for row in legs[label]]
        cells.append(f"{statistics.median(values):.1f}" if values else "–")
    print(f"| {name} | " + " | ".join(cells) + " |")
print("| n | " + " | ".join(str(len(legs[label])) for label in order) + " |")
PY
