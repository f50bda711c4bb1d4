# Sourced by bench/*_vs_baselines.sh: the arguments they share and the checks before a run.
#
#   source "$(dirname "$0")/baselines_common.sh"
#   baselines_init NAME "$@"        # sets root build threads rounds reps py tapestry tmp
#   baselines_require FILE...       # each an executable, else exit 2 naming it
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
