#!/usr/bin/env bash
# Fuzzing campaigns: builds the fuzz targets and runs each for a bounded time (libFuzzer through
# cargo-fuzz), exploring at random. Not the CI gate: a random search may find a bug on one
# machine and not on another, so .ci/run replays the committed inputs instead (fuzz/replay.sh).
#
#   fuzz/run.sh                     every target, 20 s each
#   fuzz/run.sh 600                 every target, ten minutes each
#   fuzz/run.sh 3600 jsonrpc_lines  one target for an hour
#
# cargo-fuzz needs nightly-only flags (-Zsanitizer); RUSTC_BOOTSTRAP=1 lets the stable toolchain
# accept them. The corpus each run grows is kept in fuzz/corpus/<target> (not committed) and
# starts from the committed seeds in fuzz/seeds/<target>; a crash or a hang fails the script and
# leaves its input in fuzz/artifacts/<target>/. Reproduce one with
# `RUSTC_BOOTSTRAP=1 cargo fuzz run <target> fuzz/artifacts/<target>/<file>` from fuzz/; once
# fixed, copy it into fuzz/seeds/<target>/ (named for what it found), so every replay runs it, and
# add a regression test to tests/it/fuzz_regressions.rs.
set -euo pipefail
cd "$(dirname "$0")"

seconds="${1:-20}"
shift || true
# shellcheck source=common.sh
source common.sh "$@"

for target in "${targets[@]}"; do
  corpus="corpus/$target"
  mkdir -p "$corpus" "artifacts/$target"
  inputs=("$corpus")
  if [ -d "seeds/$target" ]; then
    inputs+=("seeds/$target")
  fi
  options=(-max_total_time="$seconds" -timeout=20 -rss_limit_mb=3072 -print_final_stats=1)
  if [ -f "dictionaries/$target.dict" ]; then
    options+=(-dict="dictionaries/$target.dict")
  fi
  if [ "$target" = jsonrpc_lines ]; then
    # The whole server per input: its background threads (the skill catalog loader, the
    # JavaScript engine of the snapshot tools) may still be finishing when an input ends, which
    # LeakSanitizer reports as a leak of that input. Leak checks stay on for the other targets.
    options+=(-max_len=16384 -detect_leaks=0)
  fi
  echo "== fuzz $target for ${seconds}s"
  log="artifacts/$target/last-run.log"
  status=0
  cargo fuzz run "$target" "${inputs[@]}" -- "${options[@]}" >"$log" 2>&1 || status=$?
  grep -E '^(#[0-9]+ +DONE|Done |stat::number_of_executed_units|stat::peak_rss_mb)|panicked|ERROR|SUMMARY|Test unit|^ +(left|right)' "$log" || true
  if [ "$status" -ne 0 ]; then
    tail -n 40 "$log" >&2
    echo "fuzz target $target failed (exit $status); its input is in fuzz/artifacts/$target/: keep it in fuzz/seeds/$target/ with a regression test" >&2
    exit "$status"
  fi
done
echo "== fuzzing passed: ${targets[*]}"
