#!/usr/bin/env bash
# The fuzz gate of .ci/run: every committed input of every target, run once, in name order.
# Deterministic, so the same tree gives the same verdict on every machine: no mutation, no
# clock, no corpus left over from earlier runs (fuzz/corpus/ is not read).
#
#   fuzz/replay.sh                  every target
#   fuzz/replay.sh jsonrpc_lines    one target
#
# The inputs are fuzz/seeds/<target>/: the hand-written seeds, the corpus kept from campaigns,
# and every input a campaign ever found to crash or hang (keep each one there, named for what it
# found, with a regression test in tests/it/fuzz_regressions.rs). Random exploration is for
# campaigns outside the gate: `fuzz/run.sh SECONDS [TARGET...]`.
#
# libFuzzer given files (not folders) runs each one `-runs` times and nothing else; `-seed` is
# fixed all the same, so nothing in a run depends on the time it started.
set -euo pipefail
cd "$(dirname "$0")"

# shellcheck source=common.sh
source common.sh "$@"

for target in "${targets[@]}"; do
  inputs=()
  if [ -d "seeds/$target" ]; then
    while IFS= read -r -d '' input; do
      inputs+=("$input")
    done < <(find "seeds/$target" -type f -print0 | LC_ALL=C sort -z)
  fi
  if [ "${#inputs[@]}" -eq 0 ]; then
    echo "fuzz target $target has no inputs in fuzz/seeds/$target/ to replay" >&2
    exit 1
  fi
  options=(-seed=1 -runs=1 -timeout=20 -rss_limit_mb=3072)
  if [ "$target" = jsonrpc_lines ]; then
    # As in run.sh: the whole server per input, whose background threads LeakSanitizer would
    # report; and the same input length limit as the campaigns.
    options+=(-max_len=16384 -detect_leaks=0)
  fi
  echo "== replay $target: ${#inputs[@]} inputs"
  mkdir -p "artifacts/$target"
  log="artifacts/$target/last-replay.log"
  status=0
  cargo fuzz run "$target" "${inputs[@]}" -- "${options[@]}" >"$log" 2>&1 || status=$?
  if [ "$status" -ne 0 ]; then
    tail -n 40 "$log" >&2
    echo "replaying $target failed (exit $status): the last 'Running:' line in $log names the input" >&2
    exit "$status"
  fi
  executed="$(grep -c '^Running: ' "$log" || true)"
  if [ "$executed" -ne "${#inputs[@]}" ]; then
    tail -n 20 "$log" >&2
    echo "replaying $target ran $executed of ${#inputs[@]} inputs" >&2
    exit 1
  fi
done
echo "== replay passed: ${targets[*]}"
