#!/usr/bin/env bash
# Where a request's CPU goes at an agent's pace (issue 16), thread by thread: each
# proxy's threads' on-CPU time and context switches per request, from the scheduler's
# own counters (/proc/PID/task/TID/schedstat, nanoseconds; `status` for switches), over
# a steady load, beside the reference relay's, in one run.
#
#   scripts/thread-cpu.sh [RATE] [SECS] [LABEL=BIN[@VAR=VALUE]] ...
#
# Defaults: 10 requests/s for 30 s, one gateway: the release build in
# $CARGO_TARGET_DIR (default /var/cache/switchyard/target). Several LABEL=BIN
# arguments compare builds (or one build under an environment variable, after `@`);
# the relay is always added last. RATE is each proxy's own: the client sends every
# proxy RATE requests a second over one keep-alive connection, in turn.
# A BIN named switchyard-desktop* is the desktop app, hosting its gateway under a
# display of its own (Xvfb; see scripts/lib/soak-upstream.sh); its other
# threads (GTK, WebKit's) are listed beside the lanes.
#
# KIND=agent sends a ~50 KB request shaped like a coding agent's
# (scripts/lib/agent_body.py) instead of the benchmark's ~1 KB chat request.
#
# IDLE=SECS switches to the benchmark's pattern (switchyard-bench interleaves its
# ways in 1 s turns): each proxy in turn gets a 1 s turn of RATE requests, evenly
# spaced, then nobody sends for SECS seconds (the other ways' turns), so every
# proxy also idles between its turns, as in the benchmark's CPU-per-request rows.
#
# Threads of the same name are summed (a gateway's lanes, SQLite's workers). The
# first 3 s are warm-up and not counted. Requests are spaced evenly, one at a time
# (RATE × proxies a second in all), so each comes after a pause: a round sent back
# to back ran its first request cold and the rest warm, which put ~150 µs between
# two runs of the same binary. Needs python3 and the release binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${1:-10}
SECS=${2:-30}
shift $(( $# >= 2 ? 2 : $# ))
TARGET=${CARGO_TARGET_DIR:-/var/cache/switchyard/target}
BENCH=$TARGET/release/switchyard-bench
[ $# -gt 0 ] || set -- "gateway=$TARGET/release/switchyard"
[ -x "$BENCH" ] || { echo "build first: cargo build --release -p switchyard-gateway -p switchyard-bench" >&2; exit 1; }

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  pkill -f "$WORK" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# The soak's own gateway (it hosts the fake upstream): the first CLI among the
# arguments, else the release build.
SOAK_GATEWAY=$TARGET/release/switchyard
for spec in "$@"; do
  bin=${spec#*=}; bin=${bin%%@*}
  [[ $(basename "$bin") == switchyard-desktop* ]] || { SOAK_GATEWAY=$bin; break; }
done
source scripts/lib/soak-upstream.sh
start_soak_upstream "$SOAK_GATEWAY"

# One process per proxy, the relay last: "label pid port" lines in $WORK/proxies.
start_proxies "$@"

python3 - "$RATE" "$SECS" "$KEY" "$WORK/proxies" <<'PY'
import http.client, json, os, sys, time
rate, secs, key, proxies = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4]
if os.environ.get("KIND", "chat") == "agent":
    sys.path.insert(0, "scripts/lib")
    from agent_body import agent_body
    body = agent_body()
else:
    body = json.dumps({"model": "bench-model", "max_tokens": 64, "messages": [
        {"role": "system", "content": "You are a terse assistant."}, {"role": "user", "content": "x" * 900}]})
procs = []
for line in open(proxies):
    label, pid, port = line.split()
    conn = http.client.HTTPConnection("127.0.0.1", int(port))
    procs.append((label, int(pid), conn))

def threads(pid):
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            name = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
            ns = int(open(f"/proc/{pid}/task/{tid}/schedstat").read().split()[0])
            sw = 0
            for l in open(f"/proc/{pid}/task/{tid}/status"):
                if l.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    sw += int(l.split()[1])
            minflt = int(open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()[7])
        except (FileNotFoundError, ProcessLookupError):
            continue
        out[tid] = (name, ns, sw, minflt)
    return out

def faults(pid):
    # minflt and majflt: fields 10 and 12 of /proc/PID/stat (after the command name).
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[7]), int(fields[9])

def send(label, conn):
    for retry in (False, True):
        try:
            conn.request("POST", "/v1/chat/completions", body,
                         {"content-type": "application/json", "authorization": "Bearer " + key})
            response = conn.getresponse(); response.read()
            break
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            # A keep-alive connection idle past the gateway's header timeout was
            # closed: open another once, as any client's pool does.
            if retry:
                raise
            conn.close()
    if response.status != 200:
        sys.exit(f"{label}: status {response.status}")

idle = float(os.environ.get("IDLE", "0"))
start = time.monotonic(); sent = 0; before = None; sent_before = 0
if idle:
    # The benchmark's pattern: a 1 s turn per proxy, then `idle` seconds of nothing.
    while time.monotonic() - start < secs:
        if before is None and time.monotonic() - start >= 3:
            before = {label: threads(pid) for label, pid, _ in procs}
            faults_before = {label: faults(pid) for label, pid, _ in procs}
            sent_before = sent
        for label, _, conn in procs:
            turn = time.monotonic()
            for i in range(max(1, round(rate))):
                send(label, conn); sent += 1
                pause = turn + (i + 1) / rate - time.monotonic()
                if pause > 0: time.sleep(pause)
        time.sleep(idle)
else:
    # One request at a time, evenly spaced, to each proxy in turn: every request
    # comes after a pause, as an agent's do. (Sending a round back to back ran the
    # first of each round cold and the rest warm: ~150 µs between two runs of the
    # same binary.)
    while time.monotonic() - start < secs:
        if before is None and time.monotonic() - start >= 3 and sent % len(procs) == 0:
            before = {label: threads(pid) for label, pid, _ in procs}
            faults_before = {label: faults(pid) for label, pid, _ in procs}
            sent_before = sent
        label, _, conn = procs[sent % len(procs)]
        send(label, conn); sent += 1
        pause = start + sent / (rate * len(procs)) - time.monotonic()
        if pause > 0: time.sleep(pause)
    while sent % len(procs):
        label, _, conn = procs[sent % len(procs)]
        send(label, conn); sent += 1
counted = (sent - sent_before) // len(procs)
after = {label: threads(pid) for label, pid, _ in procs}
faults_after = {label: faults(pid) for label, pid, _ in procs}
print(f"CPU per request by thread at {rate:g} requests/s per proxy, {counted} requests counted "
      "(µs of on-CPU time, context switches and minor page faults per request)\n")
for label, _, _ in procs:
    by_name = {}
    for tid, (name, ns, sw, flt) in after[label].items():
        ns0, sw0, flt0 = before[label].get(tid, (name, 0, 0, 0))[1:]
        cpu, n, f = by_name.get(name, (0, 0, 0))
        by_name[name] = (cpu + ns - ns0, n + sw - sw0, f + flt - flt0)
    total = sum(v[0] for v in by_name.values())
    minor = faults_after[label][0] - faults_before[label][0]
    major = faults_after[label][1] - faults_before[label][1]
    print(f"{label}: {total / counted / 1e3:.1f} µs  (page faults per request: "
          f"{minor / counted:.2f} minor, {major / counted:.2f} major)")
    for name, (ns, sw, flt) in sorted(by_name.items(), key=lambda kv: -kv[1][0]):
        if ns:
            print(f"  {name:<18} {ns / counted / 1e3:8.1f} µs  {sw / counted:5.2f} switches"
                  f"  {flt / counted:5.2f} faults")
PY
