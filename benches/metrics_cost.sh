#!/usr/bin/env bash
# What observing a request costs, on one build, in one run: `ReadVar` (1 KB) round trips over
# stdio with logging at `warn` (no request span), at the default filter (`synapse_mcp=info,warn`:
# the request span), and at the default with `serve --metrics 127.0.0.1:0` (the span and the
# Prometheus recorder):
#   benches/metrics_cost.sh [BINARY] [ROUNDS]
# The three are alternated within each round so that whatever else loads the machine weighs on
# them alike. The client is examples/load_driver.rs (2,000 sequential calls after 200 unmeasured,
# 2,000 pipelined with 8 in flight); the store is memory.
set -euo pipefail
repository=$(cd "$(dirname "$0")/.." && pwd)
source "$repository/benches/awake.sh"
binary=$(realpath "${1:-$repository/target/release/synapse-mcp}")
rounds=${2:-3}
driver=${DRIVER:-$repository/target/release/examples/load_driver}
results=${RESULTS:-$(mktemp -d)}
mkdir -p "$results"

hold_cpus_awake
echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
value=$(python3 -c 'print("x" * 1024)')

measure() {
  local label=$1
  shift
  "$driver" --label "$label" --tool ReadVar --setup WriteVar "{\"name\":\"kb\",\"value\":\"$value\"}" \
    --arguments '{"name":"kb"}' --calls 2000 --starts 1 -- "$binary" --store memory "$@" \
    >"$results/$label.json"
  python3 - "$results/$label.json" <<'EOF'
import json, sys
figures = json.load(open(sys.argv[1]))
sequential = figures["sequential"]
print(f'{figures["label"]:<16} p50 {sequential["p50_us"]:>7.1f} µs  p99 {sequential["p99_us"]:>8.1f} µs  '
      f'pipelined {figures["pipelined"]["calls_per_second"]:>8.0f}/s  '
      f'cpu/call {figures["server_cpu_per_call_us"]} µs  failures {figures["failures"]}')
EOF
}

for round in $(seq 1 "$rounds"); do
  measure "warn-$round" --log-level warn
  measure "default-$round"
  measure "metrics-$round" serve --metrics 127.0.0.1:0
done
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
