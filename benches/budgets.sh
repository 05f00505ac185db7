#!/usr/bin/env bash
# Every performance budget in one run, the way BENCHMARKS.md was made: the in-process
# benchmarks (benches/budgets.rs, benches/snapshots.rs), then the stdio figures of the release binary
# (examples/stdio_roundtrip.rs with its echo floor, examples/skills_bench.rs at 200 and 10,000
# skills). Prints the machine and its load average before and after, since other work on the
# machine moves the figures. Manual, never in CI. Usage: benches/budgets.sh [> budgets.log]
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\n== %s\n' "$*"; }

say "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r), $(date -u +%FT%TZ)"
say "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
source benches/awake.sh
hold_cpus_awake
# The server alone first: built with the examples, it would get the dev-dependencies' features.
cargo build --release --locked --bin synapse-mcp
cargo build --release --locked --example stdio_roundtrip --example skills_bench
say "cargo bench --bench budgets --bench snapshots"
cargo bench --locked --bench budgets --bench snapshots 2>&1 | grep -vE '^(Benchmarking|Found|  [0-9]+ \()'
say "stdio_roundtrip (20,000 round trips)"
target/release/examples/stdio_roundtrip 20000
for skills in 200 10000; do
  say "skills_bench $skills"
  target/release/examples/skills_bench "$skills"
done
say "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
