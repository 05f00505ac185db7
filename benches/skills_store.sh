#!/usr/bin/env bash
# SkillLoad and SkillSearch round trips on the default (SQLite) store, for two builds side by side:
#   benches/skills_store.sh BEFORE_BINARY AFTER_BINARY [ROUNDS]
# Each round measures both builds, alternating, so that whatever else loads the machine weighs
# on both alike. The client is examples/load_driver.rs (plain JSON-RPC over pipes, 2,000
# sequential calls after 200 unmeasured, no pipelined phase), the skills the 200 synthetic ones
# of benches/peers.sh, each server on a fresh data folder. Prints one line per measurement and
# leaves the JSON in $results.
set -euo pipefail
repository=$(cd "$(dirname "$0")/.." && pwd)
source "$repository/benches/awake.sh"
before=$(realpath "$1")
after=$(realpath "$2")
rounds=${3:-3}
driver=${DRIVER:-$repository/target/release/examples/load_driver}
generator=${GENERATOR:-$repository/target/release/examples/skills_bench}
work=$(mktemp -d)
results=${RESULTS:-$work/results}
mkdir -p "$results"
trap 'rm -rf "$work/skills" "$work/data"' EXIT

hold_cpus_awake
skill=$("$generator" generate "$work/skills" 200)
echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

measure() {
  local label=$1 binary=$2 tool=$3 arguments=$4
  local data="$work/data/$label"
  rm -rf "$data"
  "$driver" --label "$label" --tool "$tool" --arguments "$arguments" --calls 2000 \
    --in-flight 0 --starts 1 -- "$binary" --skills "$work/skills" --data-dir "$data" \
    --log-level error >"$results/$label.json"
  python3 - "$results/$label.json" "$(cut -d' ' -f1 /proc/loadavg)" <<'EOF'
import json, sys
figures = json.load(open(sys.argv[1]))
sequential = figures["sequential"]
print(f'{figures["label"]:<28} p50 {sequential["p50_us"]:>8.1f} µs  p99 {sequential["p99_us"]:>9.1f} µs  '
      f'max {sequential["max_us"]:>9.1f} µs  cpu/call {figures["server_cpu_per_call_us"]} µs  '
      f'load {sys.argv[2]}  failures {figures["failures"]}')
EOF
}

for round in $(seq 1 "$rounds"); do
  for build in before after; do
    binary=$before
    [[ $build == after ]] && binary=$after
    measure "$build-SkillLoad-$round" "$binary" SkillLoad "{\"name\":\"$skill\",\"force\":true}"
    measure "$build-SkillSearch-$round" "$binary" SkillSearch '{"query":"merge pdf files"}'
  done
done
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
