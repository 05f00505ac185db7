#!/usr/bin/env bash
# Contention that never starves: two synapse-mcp instances on one PostgreSQL database, one writer
# on each, WriteVar of 1 KB to a variable of its own in the one shared workspace, back to back, for
# 60 s. Every conditional commit that loses the race to the other instance is decided again after a
# jittered pause (src/workspace/durability.rs), so no call may fail: the script exits 1 when one
# did, naming the first failure. It is the `postgres-2` target of benches/http_load.sh with two
# clients and 100 % writes (same driver, same PostgreSQL set-up, fsync on); its table goes to
# stdout.
#
# Manual, never in CI. Needs cargo, python3 and PostgreSQL's binaries. Usage:
#   benches/contention.sh                      # release build, 60 s
#   DURATION=5 SYNAPSE=target/debug/synapse-mcp DRIVER=path/to/http_load benches/contention.sh
#   CLIENTS=4 benches/contention.sh            # two writers per instance
set -euo pipefail
cd "$(dirname "$0")/.."
export TARGETS=postgres-2 WRITES=100
export CLIENTS=${CLIENTS:-2} DURATION=${DURATION:-60} WARMUP=${WARMUP:-1}
export HTTP_LOAD_DIR=${HTTP_LOAD_DIR:-$PWD/target/contention}
benches/http_load.sh
python3 - "$HTTP_LOAD_DIR/results/postgres-2.json" <<'PYTHON'
"""Fail when a call failed (or the run left no result)."""
import json
import pathlib
import sys

path = pathlib.Path(sys.argv[1])
if not path.exists():
    sys.exit(f"no result in {path}: the run failed (see the log lines above)")
row = json.loads(path.read_text())
if row["failures"]:
    sys.exit(f"{row['failures']} of {row['requests']} writes failed under contention; first: {row['first_failure']}")
print(f"no write failed: {row['requests']} writes in {row['measured_s']:.0f} s on {row['instances']} instances")
PYTHON
