#!/usr/bin/env bash
# The cost of a call through synapse-mcp to another MCP server over calling that server directly,
# in one run on one machine, with the same client (examples/load_driver.rs: plain JSON-RPC over
# pipes). The upstream is examples/upstream_server.rs (rmcp, tool `echo`); synapse-mcp serves it
# as `bench__echo` (auto-approved, memory store, the whole pipeline: references, gates, the result
# and arguments cached as variables). Runs alternate direct / proxied ROUNDS times, so that a
# change in the machine's load hits both; each prints p50 and p99 of the sequential round trips
# and the CPU time per call of the process the driver talks to.
#
# Then, unless INSTRUCTIONS=no, the instructions each costs, which the machine's load does not
# change: valgrind (callgrind) counts the instructions of synapse-mcp alone (its upstream runs
# natively) and of the upstream alone over two runs of CALLS/10 and 2×CALLS/10 calls; the
# difference divided by CALLS/10 is the cost of one call.
#
# Manual, never in CI. Needs cargo (release builds) and, for the counts, valgrind. Usage:
#   benches/upstream.sh
#   ROUNDS=5 CALLS=5000 benches/upstream.sh
set -euo pipefail
cd "$(dirname "$0")/.."
repository=$PWD

rounds=${ROUNDS:-3}
calls=${CALLS:-3000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

say() { printf '== %s\n' "$*" >&2; }

say "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"
say "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
source "$repository/benches/awake.sh"
hold_cpus_awake >&2

say "building the release binaries"
cargo build --release --quiet --bin synapse-mcp --example upstream_server --example load_driver
synapse=$repository/target/release/synapse-mcp
upstream=$repository/target/release/examples/upstream_server
driver=$repository/target/release/examples/load_driver

cat >"$work/config.toml" <<EOF
[[upstream]]
name = "bench"
command = "$upstream"
execution = "auto"
EOF

arguments='{"text":"hello"}'
direct() {
  "$driver" --label direct --tool echo --arguments "$arguments" --calls "$1" --in-flight 0 --starts 1 \
    -- "$upstream"
}
proxied() {
  "$driver" --label proxied --tool bench__echo --arguments "$arguments" --calls "$1" --in-flight 0 \
    --starts 1 -- "$synapse" --store memory --log-level warn --config "$work/config.toml"
}

figures() {
  python3 -c '
import json, sys
report = json.load(sys.stdin)
sequential = report["sequential"]
label, cpu, failures = report["label"], report["server_cpu_per_call_us"], report["failures"]
p50, p99 = sequential["p50_us"], sequential["p99_us"]
print(f"{label:8} p50 {p50:7.1f} µs  p99 {p99:7.1f} µs  cpu {cpu} µs/call  failures {failures}")
'
}

say "round trips: $rounds rounds of $calls sequential calls each, direct then proxied"
for round in $(seq "$rounds"); do
  direct "$calls" | tee "$work/direct-$round.json" | figures
  proxied "$calls" | tee "$work/proxied-$round.json" | figures
done
python3 - "$work" "$rounds" <<'EOF'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def p50(label):
    return [json.load(open(f"{work}/{label}-{r}.json"))["sequential"]["p50_us"] for r in range(1, rounds + 1)]
direct, proxied = p50("direct"), p50("proxied")
overheads = [p - d for d, p in zip(direct, proxied)]
print(f"overhead of a proxied call, p50 per round: {', '.join(f'{o:.1f}' for o in overheads)} µs; "
      f"median {statistics.median(overheads):.1f} µs (direct {statistics.median(direct):.1f}, proxied {statistics.median(proxied):.1f})")
EOF

if [[ "${INSTRUCTIONS:-yes}" == no ]] || ! command -v valgrind >/dev/null; then
  say "instruction counts skipped (INSTRUCTIONS=no, or no valgrind)"
  exit 0
fi

# Total instructions of one process under callgrind, serving `calls` calls.
instructions() {
  local label=$1 count=$2
  shift 2
  local out="$work/callgrind-$label-$count"
  "$driver" --label "$label" --tool "$tool" --arguments "$arguments" --calls "$count" --warmup 0 \
    --in-flight 0 --starts 1 -- valgrind --tool=callgrind --callgrind-out-file="$out" "$@" >/dev/null
  grep -m1 '^summary:\|^totals:' "$out" | awk '{print $2}'
}
small=$((calls / 10))
large=$((2 * small))
say "instructions (valgrind --tool=callgrind), $small and $large calls"
tool=echo
direct_small=$(instructions direct "$small" "$upstream")
direct_large=$(instructions direct "$large" "$upstream")
tool=bench__echo
proxied_small=$(instructions proxied "$small" "$synapse" --store memory --log-level warn --config "$work/config.toml")
proxied_large=$(instructions proxied "$large" "$synapse" --store memory --log-level warn --config "$work/config.toml")
python3 - "$small" "$direct_small" "$direct_large" "$proxied_small" "$proxied_large" <<'EOF'
import sys
calls, direct_small, direct_large, proxied_small, proxied_large = map(int, sys.argv[1:])
upstream = (direct_large - direct_small) / calls
synapse = (proxied_large - proxied_small) / calls
print(f"instructions per call: the upstream alone {upstream:,.0f}; synapse-mcp proxying it {synapse:,.0f} "
      f"(its own work, the upstream not counted)")
EOF
