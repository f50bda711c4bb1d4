# Sourced by bench/*_vs_baselines.sh: the arguments they share and the checks before a run.
#
#   source "$(dirname "$0")/baselines_common.sh"
#   baselines_init NAME "$@"        # sets root build threads rounds reps py tapestry tmp
#   baselines_require FILE...       # each an executable, else exit 2 naming it
#   baselines_tapestry LOG GRAPH INPUTS PLAN METRICS [Y]   # one timed `tapestry run`
#
# Arguments: [BUILD_DIR | --build DIR] [--threads N] [--rounds N] [--reps N] (defaults: the
# release build when present, else ci; 2 threads, 3 rounds, 3 repetitions). `tmp` is a fresh
# directory removed on exit. /usr/bin/python3 must have NumPy (python3-numpy).

baselines_init() {
  baselines_name=$1
  shift
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  build="$root/build/release"
  [[ -d "$build" ]] || build="$root/build/ci"
  threads=2 rounds=3 reps=3
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --build) build="$2"; shift 2 ;;
      --threads) threads="$2"; shift 2 ;;
      --rounds) rounds="$2"; shift 2 ;;
      --reps) reps="$2"; shift 2 ;;
      --sweep) shift ;;  # accepted for scripts/bench.sh; the MLP's batch sweep is gone
      -*) echo "usage: $0 [BUILD_DIR | --build DIR] [--threads N] [--rounds N] [--reps N]" >&2; exit 2 ;;
      *) build="$1"; shift ;;
    esac
  done
  py=/usr/bin/python3
  tapestry="$build/src/cli/tapestry"
  "$py" -c "import numpy" 2>/dev/null || {
    echo "$baselines_name: needs NumPy for /usr/bin/python3 (python3-numpy)" >&2
    exit 2
  }
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
}

baselines_require() {
  local f
  for f in "$@"; do
    [[ -x "$f" ]] || { echo "$baselines_name: $f is missing; build first (make bench)" >&2; exit 2; }
  done
}

# One `tapestry run` of GRAPH on the .npy files in INPUTS, under PLAN unless it is "", on $threads
# threads: 2 untimed runs, then $reps timed ones; their metrics go to METRICS, the log to LOG, and
# it prints their median wall time (metrics wall_s: execution alone). With Y, the output Y is
# also written there (the first round's, compared with the other contenders').
baselines_tapestry() {
  local log=$1 graph=$2 inputs=$3 plan=$4 metrics=$5 y=${6:-} p=() o=()
  [[ -n $plan ]] && p=(--plan "$plan")
  [[ -n $y ]] && o=(--outputs "${y%.npy}-out")
  "$tapestry" run "$graph" "${p[@]}" --inputs "$inputs" --threads "$threads" --warmup 2 \
    --repeat "$reps" --quiet --metrics "$metrics" "${o[@]}" >"$log"
  [[ -z $y ]] || cp "${y%.npy}-out/Y.npy" "$y"
  "$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['wall_s'])" "$metrics"
}
