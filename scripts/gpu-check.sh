#!/usr/bin/env bash
# The one-command GPU check (docs/gpu.md): on a machine with an NVIDIA GPU and CUDA, unpacks
# .devpack (made by scripts/gpu-pack.sh on the build machine) and runs, in this order, each step
# under its own time limit and all within a budget (--budget, default 450 s: < 8 minutes with
# the unpacking; a step that would start later is SKIPped):
#   tests      every packed GPU gtest binary (--gtest_brief)
#   nccl       `tapestry run --executor mpi --device cuda --verify` on one rank under mpirun (the
#              NCCL executor through the CLI); SKIP where no mpirun is found, as on the lent GPU
#              machines (gpu_nccl_executor_test, a gtest, checks the executor there without MPI)
#   calibrate  `tapestry calibrate --device cuda -o h100-measured.json --seconds 30` (named
#              after the GPU: h200-measured.json on an H200)
#   bench      bench/gpu_vs_torch.py: Tapestry against PyTorch on the same GEMMs
#   rank       bench/gpu_rank_plans.py: each example's plans measured against their prices on
#              the measured target and on h100x8 (the share of plan pairs ranked right)
#   examples   `tapestry run G --device cuda --verify --seed 3` for every examples/*.tap
#   plans      the same under every bundled plan (examples/plans/<graph>-<name>.json on
#              examples/<graph>.tap; the digits plans need real data and are left out)
#   search     the same for tests/data/search/*.tap (large bf16 graphs: their verification on
#              the CPU takes longest)
# then prints a summary table. With $OUT set, the logs, the summary and the measured target are
# copied there ($OUT/gpu-check/, $OUT/h100-measured.json).
#
#   scripts/gpu-check.sh                        # everything
#   scripts/gpu-check.sh --only tests,calibrate # some steps
#   scripts/gpu-check.sh --small                # examples and plans at tests/data/cli's sizes
#   scripts/gpu-check.sh --budget 300           # stop starting steps after 300 s
#
# A step is ok, FAIL, WARN (it passed but a test skipped, or the benchmark found no torch) or
# SKIP (the budget was spent or ran out during the step, nccl found no mpirun, or a graph needs
# inputs generated data cannot give). TAPESTRY_GPU_CHECK_FORCE=1 runs the steps
# without a GPU (to test this script).
# Exit: 0 no step failed, 1 a step failed, 2 no GPU here (nothing run), 3 no .devpack or it
# cannot run here (a library missing: named).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tarball=$root/.devpack/tapestry-devpack.tar.xz
only="tests,nccl,calibrate,bench,rank,examples,plans,search"
budget=450  # seconds: the steps that would start later are SKIPped
small=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --only) only=$2; shift 2 ;;
    --small) small=1; shift ;;
    --budget) budget=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "gpu-check: unknown argument $1 (--only STEPS, --small, --budget S)" >&2; exit 3 ;;
  esac
done
wants() { [[ ,$only, == *,$1,* ]]; }

# --- A GPU? ---------------------------------------------------------------------------------
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
# TAPESTRY_GPU_CHECK_FORCE=1 runs the steps anyway (to test this script on a machine without one).
if [[ ${gpus:-0} -eq 0 && ${TAPESTRY_GPU_CHECK_FORCE:-0} != 1 ]]; then
  echo "gpu-check: no GPU (nvidia-smi lists none or is missing): nothing run"
  exit 2
fi
nvidia-smi -L 2>/dev/null

# --- Unpack ---------------------------------------------------------------------------------
[[ -f $tarball ]] || { echo "gpu-check: no $tarball: run scripts/gpu-pack.sh on the build machine" >&2; exit 3; }
work=${TMPDIR:-/tmp}/tapestry-gpu-check
rm -rf "$work"
mkdir -p "$work"
if ! tar -C "$work" -xJf "$tarball" 2>/dev/null; then
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$tarball" "$work" ||
    { echo "gpu-check: cannot unpack $tarball" >&2; exit 3; }
fi
pack=$work/devpack
logs=$work/logs
mkdir -p "$logs"
cat "$pack/MANIFEST"

# The CUDA libraries: the toolkit's, and cuDNN / NCCL / cuBLAS from PyTorch's wheels where the
# toolkit lacks them.
cuda_dirs=()
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
         /opt/torch/.venv/lib/python3*/site-packages/nvidia/*/lib \
         /usr/local/lib/python3*/dist-packages/nvidia/*/lib; do
  [[ -d $d ]] && cuda_dirs+=("$d")
done
lib_path=$pack/lib
for d in "${cuda_dirs[@]}"; do lib_path=$lib_path:$d; done
lib_path=$lib_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# A CUDA library still missing (another wheel layout, another prefix): looked for by name.
for lib in $(LD_LIBRARY_PATH=$lib_path ldd "$pack"/bin/* "$pack"/tests/* 2>/dev/null |
             awk '/not found/ { print $1 }' | sort -u); do
  found=$(find /opt /usr/local /usr/lib /root /home -xdev -name "$lib" 2>/dev/null | head -1)
  [[ -n $found ]] && lib_path=$lib_path:$(dirname "$found")
done
# A wrapper, so that only our binaries see the packed libraries (PyTorch keeps its own).
tapestry=$work/tapestry
printf '#!/usr/bin/env bash\nLD_LIBRARY_PATH=%q exec %q "$@"\n' "$lib_path" "$pack/bin/tapestry" >"$tapestry"
chmod +x "$tapestry"
missing=$(LD_LIBRARY_PATH=$lib_path ldd "$pack"/bin/* "$pack"/tests/* 2>/dev/null | grep 'not found' | sort -u)
if [[ -n $missing ]]; then
  echo "gpu-check: libraries not found (searched $lib_path):" >&2
  echo "$missing" >&2
  exit 3
fi
# The test binaries read tests/data at the source directory they were built in.
source_dir=$(sed -n 's/^source_dir=//p' "$pack/MANIFEST")
if [[ -n $source_dir && ! -e $source_dir/tests/data && $source_dir != "$root" ]]; then
  mkdir -p "$(dirname "$source_dir")" 2>/dev/null && ln -sfn "$root" "$source_dir" 2>/dev/null ||
    echo "gpu-check: warning: cannot link $source_dir to $root: tests reading tests/data fail" >&2
fi

# --- Steps ----------------------------------------------------------------------------------
names=() states=() times=() notes=()
failed=0
record() {  # name state seconds note
  names+=("$1"); states+=("$2"); times+=("$3"); notes+=("$4")
  [[ $2 == FAIL ]] && failed=1
  printf '%-4s %-48s %6ss  %s\n' "$2" "$1" "$3" "$4"
}
# run_logged NAME LIMIT_S COMMAND...: runs it with its output in $logs/NAME.log, for at most
# LIMIT_S and never past the budget; sets rc (124: timed out), secs and truncated (1: the
# budget, not LIMIT_S, bounded it).
run_logged() {
  local name=$1 limit=$2
  shift 2
  local left=$((budget - SECONDS))
  truncated=0
  ((left < limit)) && { limit=$((left > 10 ? left : 10)); truncated=1; }
  local start=$SECONDS
  timeout --kill-after=10 "$limit" "$@" >"$logs/$name.log" 2>&1
  rc=$?
  secs=$((SECONDS - start))
}
# over_budget NAME: records NAME as SKIP when the budget is spent.
over_budget() {
  if ((SECONDS >= budget)); then record "$1" SKIP 0 "the ${budget} s budget is spent"; return 0; fi
  return 1
}
tail_of() { tail -n 3 "$logs/$1.log" | tr '\n' ' ' | cut -c1-160; }

if wants tests; then
  for t in "$pack"/tests/*; do
    [[ -x $t ]] || continue
    n=$(basename "$t")
    over_budget "$n" && continue
    run_logged "gtest-$n" 240 env LD_LIBRARY_PATH="$lib_path" "$t" --gtest_brief=1
    summary=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$logs/gtest-$n.log" | tr '\n' ' ' | tr -s ' ')
    # A test skipped on a GPU machine did not see the GPU (or lacks something): WARN.
    if [[ $rc -eq 0 && $summary == *SKIPPED* ]]; then record "$n" WARN "$secs" "$summary"
    elif [[ $rc -eq 0 ]]; then record "$n" ok "$secs" "$summary"
    else record "$n" FAIL "$secs" "rc=$rc $summary $(grep -E '^\[  FAILED  \] [A-Za-z]' "$logs/gtest-$n.log" | head -3 | tr '\n' ' ')"; fi
  done
fi

# The NCCL executor through the CLI, on one rank: needs mpirun (Open MPI's singleton MPI_Init,
# a process started without mpirun, needs its orted daemon, which the GPU machine lacks).
if wants nccl && ! over_budget nccl; then
  if command -v mpirun >/dev/null 2>&1; then
    mpirun=(mpirun -q -np 1)
    [[ $(id -u) -eq 0 ]] && mpirun+=(--allow-run-as-root)
    run_logged nccl 120 "${mpirun[@]}" "$tapestry" run "$root/examples/mlp.tap" \
      --plan "$root/examples/plans/mlp-megatron.json" --executor mpi --device cuda --verify --seed 3
    if [[ $rc -eq 0 ]] && grep -q '^PASS' "$logs/nccl.log" && ! grep -qE '^(FAIL|UNCHECKED)' "$logs/nccl.log"; then
      record nccl ok "$secs" "$(grep -m1 -o 'ran [0-9]* applications.*' "$logs/nccl.log" | cut -c1-120)"
    else record nccl FAIL "$secs" "rc=$rc: $(tail_of nccl)"; fi
  else
    record nccl SKIP 0 "no mpirun here: gpu_nccl_executor_test (tests) ran the NCCL executor without MPI"
  fi
fi

# The measured target is named after the GPU: h100-measured.json on an H100.
gpu_tag=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 |
  grep -oE '[A-Za-z][0-9]{2,4}' | head -1 | tr 'A-Z' 'a-z')
measured=${gpu_tag:-gpu}-measured.json
if wants calibrate && ! over_budget calibrate; then
  run_logged calibrate 150 "$tapestry" calibrate --device cuda -o "$logs/$measured" --seconds 30
  if [[ $rc -eq 0 && -s $logs/$measured ]]; then
    record calibrate ok "$secs" "$(grep -m1 '^wrote' "$logs/calibrate.log" | cut -c1-150)"
  else record calibrate FAIL "$secs" "rc=$rc: $(tail_of calibrate)"; fi
fi

if wants bench && ! over_budget gpu_vs_torch; then
  python=python3
  [[ -x /opt/torch/.venv/bin/python3 ]] && python=/opt/torch/.venv/bin/python3
  run_logged bench-gpu_vs_torch 240 "$python" "$root/bench/gpu_vs_torch.py" --tapestry "$tapestry" \
    --json "$logs/gpu_vs_torch.json"
  if [[ $rc -eq 0 ]] && grep -q '^skipped:' "$logs/bench-gpu_vs_torch.log"; then
    record gpu_vs_torch WARN "$secs" "$(grep -m1 '^skipped:' "$logs/bench-gpu_vs_torch.log")"
  elif [[ $rc -eq 0 ]]; then record gpu_vs_torch ok "$secs" "see the table below"
  else record gpu_vs_torch FAIL "$secs" "rc=$rc: $(tail_of bench-gpu_vs_torch)"; fi
fi

# Plans of every example measured on the GPU against their prices on the measured target and on
# the h100x8 preset: the share of plan pairs each ranks right (goal >= 90%).
if wants rank && ! over_budget rank; then
  # The target calibrated in this run, else the committed one of this GPU (targets/*.json).
  targets=(--target h100x8)
  if [[ -s $logs/$measured ]]; then
    targets=(--target "$logs/$measured" "${targets[@]}")
  elif "$tapestry" targets | grep -q "^${measured%.json} "; then
    targets=(--target "${measured%.json}" "${targets[@]}")
  fi
  run_logged rank 200 python3 "$root/bench/gpu_rank_plans.py" --tapestry "$tapestry" \
    "${targets[@]}" --json "$logs/rank.json"
  if [[ $rc -eq 0 ]]; then
    record rank ok "$secs" "$(grep -m1 'pairs ranked right' "$logs/rank.log" | cut -c1-150)"
  else record rank FAIL "$secs" "rc=$rc: $(tail_of rank)"; fi
fi

# verify_run NAME GRAPH [PLAN]: tapestry run --device cuda --verify; ok when it exits 0 with
# PASS lines and no FAIL / UNCHECKED.
verify_run() {
  local name=$1 graph=$2 plan=${3:-}
  over_budget "$name" && return
  local args=(run "$graph" --device cuda --verify --seed 3)
  [[ -n $plan ]] && args+=(--plan "$plan")
  run_logged "$name" 150 "$tapestry" "${args[@]}"
  local pass fail ran
  pass=$(grep -c '^PASS' "$logs/$name.log")
  fail=$(grep -cE '^(FAIL|UNCHECKED)' "$logs/$name.log")
  ran=$(grep -m1 -o 'ran [0-9]* applications.*' "$logs/$name.log" | cut -c1-90)
  ran="$ran; $(grep -m1 '^steps:' "$logs/$name.log" | cut -c1-80)"
  if [[ $rc -eq 0 && $pass -gt 0 && $fail -eq 0 ]]; then
    record "$name" ok "$secs" "$pass PASS; $ran"
  elif [[ $rc -eq 124 && $truncated -eq 1 ]]; then
    record "$name" SKIP "$secs" "the ${budget} s budget ran out during it (a larger --budget runs it)"
  else
    record "$name" FAIL "$secs" "rc=$rc $pass PASS $fail FAIL/UNCHECKED: $(tail_of "$name")"
  fi
}
graph_of() {  # example name → its graph (the small stand-in with --small, where there is one)
  if [[ $small -eq 1 && -f $root/tests/data/cli/${1}_small.tap ]]; then
    echo "$root/tests/data/cli/${1}_small.tap"
  else
    echo "$root/examples/$1.tap"
  fi
}

if wants examples; then
  for g in "$root"/examples/*.tap; do
    e=$(basename "$g" .tap)
    verify_run "run-$e" "$(graph_of "$e")"
  done
fi

if wants plans; then
  for p in "$root"/examples/plans/*.json; do
    n=$(basename "$p" .json)
    e=${n%%-*}
    [[ $e == digits ]] && continue  # examples/digits needs real labels (tests/python/test_digits.py)
    [[ -f $root/examples/$e.tap ]] || { record "plan-$n" FAIL 0 "no examples/$e.tap"; continue; }
    verify_run "plan-$n" "$(graph_of "$e")" "$p"
  done
fi

# Last: the large bf16 graphs, whose CPU-side verification (the naive run and the float64
# oracle) takes longest.
if wants search; then
  for g in "$root"/tests/data/search/*.tap; do
    # An Adam step reads its update number from a graph input, which generated inputs draw
    # from [-8, 8]: such a graph runs under `tapestry train`, not on generated inputs.
    if grep -q 'adam(' "$g"; then
      record "run-search-$(basename "$g" .tap)" SKIP 0 "an Adam step: needs its step input >= 1 (tapestry train)"
      continue
    fi
    verify_run "run-search-$(basename "$g" .tap)" "$g"
  done
fi

# --- Summary --------------------------------------------------------------------------------
{
  echo
  echo "== gpu-check summary ($(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1); $(sed -n 's/^commit=//p' "$pack/MANIFEST"))"
  printf '%-4s %-48s %7s  %s\n' state step time note
  for i in "${!names[@]}"; do
    printf '%-4s %-48s %6ss  %s\n' "${states[$i]}" "${names[$i]}" "${times[$i]}" "${notes[$i]}"
  done
  ok=$(printf '%s\n' "${states[@]}" | grep -c '^ok$')
  warn=$(printf '%s\n' "${states[@]}" | grep -c '^WARN$')
  echo "$ok of ${#names[@]} steps ok, $warn WARN; total ${SECONDS}s; logs in $logs"
  if [[ -f $logs/bench-gpu_vs_torch.log ]]; then echo; cat "$logs/bench-gpu_vs_torch.log"; fi
  if [[ -f $logs/calibrate.log ]]; then echo; cat "$logs/calibrate.log"; fi
  if [[ -f $logs/rank.log ]]; then echo; cat "$logs/rank.log"; fi
} | tee "$logs/summary.txt"

if [[ -n ${OUT:-} ]]; then
  mkdir -p "$OUT/gpu-check"
  cp -r "$logs"/. "$OUT/gpu-check/"
  [[ -f $logs/$measured ]] && cp "$logs/$measured" "$OUT/$measured"
  echo "gpu-check: logs copied to $OUT/gpu-check"
fi
exit $failed
