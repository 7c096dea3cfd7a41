# Sourced by scripts/pgo-build.sh and scripts/lib/bolt-layout.sh: the training
# workload both profiles are taken from (docs/adr/0013-profile-guided-build.md).
#
#   pgo_train BENCH GATEWAY_BIN LOG
#
# `switchyard-bench train` (every client format against both upstream formats,
# streamed and not, at an agent's pace and under load), then a short benchmark run
# (the pool, flow-control and many-stream paths), through GATEWAY_BIN, logged to
# LOG; on failure prints the log's tail and returns non-zero.
pgo_train() {
  local bench=$1 gateway=$2 log=$3
  { "$bench" train --gateway-bin "$gateway" && "$bench" --quick --gateway-bin "$gateway"; } >"$log" 2>&1 ||
    { tail -40 "$log" >&2; return 1; }
}
