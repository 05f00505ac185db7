# Sourced by run.sh and replay.sh (in fuzz/): the targets to run — those named on the command
# line, else every file in fuzz_targets/, so a new target is never left out — and cargo-fuzz on
# the stable toolchain (its sanitizer flags are nightly-only; RUSTC_BOOTSTRAP=1 lets stable
# accept them).
targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
  for file in fuzz_targets/*.rs; do
    targets+=("$(basename "$file" .rs)")
  done
fi

export RUSTC_BOOTSTRAP=1
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install --locked cargo-fuzz --version 0.13.2
fi
