#!/usr/bin/env bash
# `make fuzz`: runs each libFuzzer harness of tests/fuzz for FUZZ_SECONDS (default 60), one at a
# time, each on one process (the machine is shared), then prints a table of executions and
# coverage. docs/reliability.md explains the harnesses and what to do with a finding.
#
#   scripts/fuzz.sh BUILD_DIR [HARNESS...]     # default: every harness
#   FUZZ_SECONDS=1800 scripts/fuzz.sh build/fuzz tap
#   FUZZ_ARGS='-max_len=4096' scripts/fuzz.sh build/fuzz npy      # extra libFuzzer flags
#
# Seeds come from tests/fuzz/corpus/<harness> (read only); the corpus libFuzzer grows lives in
# BUILD_DIR/fuzzing/corpus/<harness> and persists between runs. A finding (crash, sanitizer report,
# leak, timeout, out-of-memory) is written to BUILD_DIR/fuzzing/artifacts/<harness>/ and makes the
# script exit 1; the log of each run is BUILD_DIR/fuzzing/<harness>.log.
set -uo pipefail
build=${1:?usage: fuzz.sh BUILD_DIR [HARNESS...]}
shift
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
harnesses=("$@")
if [[ ${#harnesses[@]} -eq 0 ]]; then
  harnesses=(tap kernel_yaml loom_json plan target npy index_text ipf_json)
  # The ONNX importer is optional (libonnx-dev): fuzzed when the build has it.
  [[ -x "$build/tests/fuzz/fuzz_onnx" ]] && harnesses+=(onnx)
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

work="$build/fuzzing"
mkdir -p "$work"
summary=()
status=0
for name in "${harnesses[@]}"; do
  bin="$build/tests/fuzz/fuzz_$name"
  if [[ ! -x "$bin" ]]; then
    echo "fuzz: $bin is missing (build the fuzz preset: make fuzz)" >&2
    exit 2
  fi
  mkdir -p "$work/corpus/$name" "$work/artifacts/$name"
  log="$work/$name.log"
  echo "== fuzz_$name for ${seconds}s (log: $log)"
  # -rss_limit_mb / -malloc_limit_mb: a header that asks for gigabytes is a finding, not a
  # slow run; -timeout: one input running for 10 s is a hang.
  dict=()
  [[ -f "tests/fuzz/dict/$name.dict" ]] && dict=(-dict="tests/fuzz/dict/$name.dict")
  # shellcheck disable=SC2086
  "$bin" "$work/corpus/$name" "tests/fuzz/corpus/$name" \
    "${dict[@]}" -artifact_prefix="$work/artifacts/$name/" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -print_final_stats=1 ${FUZZ_ARGS:-} >"$log" 2>&1
  rc=$?
  execs=$(awk '/^stat::number_of_executed_units:/ {print $2}' "$log")
  rate=$(awk '/^stat::average_exec_per_sec:/ {print $2}' "$log")
  took=$(awk '/^Done [0-9]+ runs in/ {print $5}' "$log")
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' <<<"$last" | awk '{print $2}')
  ft=$(grep -o 'ft: [0-9]*' <<<"$last" | awk '{print $2}')
  result=ok
  if [[ $rc -ne 0 ]]; then
    result="FINDING (exit $rc): $(grep -m1 -E 'ERROR|FUZZ_CHECK|assertion|deadly|Test unit written' "$log")"
    status=1
  fi
  summary+=("$(printf '%-12s %6s %12s %8s %7s %7s  %s' "$name" "${took:-?}" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$result")")
done

echo
printf '%-12s %6s %12s %8s %7s %7s  %s\n' harness secs execs exec/s cov ft result
printf '%s\n' "${summary[@]}"
if [[ $status -ne 0 ]]; then
  echo "fuzz: findings are in $work/artifacts/ (docs/reliability.md: minimise, fix, commit as a regression)" >&2
fi
exit $status
