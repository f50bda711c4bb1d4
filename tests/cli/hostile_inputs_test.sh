#!/usr/bin/env bash
# End-to-end: inputs built to break Tapestry give a clear error and exit 2, at once and before
# any large allocation — never `internal error: std::bad_alloc`, a hang, or a silently empty
# graph. Each case names the row of issue 11 it guards.
# Usage: hostile_inputs_test.sh TAPESTRY ROOT
set -uo pipefail
tapestry=$1
root=$2
source "$(dirname "$0")/cli_testing.sh"
EXPECT_TIMEOUT=60  # a hostile input must fail fast

# The peak resident memory (KiB) of COMMAND…, whatever it exits with.
max_rss_kib() {
  python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$@"
}

# A 128-byte .npy: a float32 header claiming SHAPE and no data at all.
npy_claiming() {
  python3 - "$1" "$2" <<'PY'
import sys
shape = sys.argv[2]
header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape
header = header.ljust(128 - 10 - 1) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
PY
}

# 1. A tiny .npy whose header claims (10^10,) or (10^11, 12): truncated data, before allocating.
printf 'X: f32[4]\nY = relu(X)\n' >"$tmp/relu4.tap"
mkdir -p "$tmp/huge1" "$tmp/huge2"
npy_claiming "$tmp/huge1/X.npy" "(10000000000,)"
expect "npy (10^10,) for f32[4]" 2 "X.npy: truncated data: 0 bytes for shape \(10000000000\)" -- \
  "$tapestry" run "$tmp/relu4.tap" --inputs "$tmp/huge1"
npy_claiming "$tmp/huge2/X.npy" "(100000000000, 12)"
"$tapestry" run "$root/examples/linear_relu.tap" --outputs "$tmp/ok" --seed 1 >/dev/null 2>&1
cp "$tmp/ok/Y.npy" "$tmp/huge2/W.npy"; cp "$tmp/ok/Y.npy" "$tmp/huge2/b.npy"
expect "npy (10^11, 12) for [100, 12]" 2 "X.npy: truncated data: 0 bytes for shape \(100000000000, 12\)" -- \
  "$tapestry" run "$root/examples/linear_relu.tap" --inputs "$tmp/huge2"

# 2. A graph declaring 5·10^12 floats: refused by the machine's memory or the limit, exit 2.
printf 'X: f32[1000000000000, 5]\nY = relu(X)\n' >"$tmp/huge.tap"
expect "f32[10^12, 5]" 2 "the run needs an estimated 54.6 TiB, more than this machine.s .* of physical memory" -- \
  "$tapestry" run "$tmp/huge.tap"
expect "f32[10^12, 5] --memory-limit 1G" 2 "memory limit 1.00 GiB exceeded: the plan needs an estimated 36.4 TiB" -- \
  "$tapestry" run "$tmp/huge.tap" --memory-limit 1G
expect "f32[10^12, 5] --verify" 2 "more than this machine's" -- \
  "$tapestry" run "$tmp/huge.tap" --verify
expect "f32[10^12, 5] --executor application" 2 "more than this machine's" -- \
  "$tapestry" run "$tmp/huge.tap" --executor application

# 3. f32[10^8] (381 MiB per tensor) over a 100M limit: refused before the inputs are generated.
printf 'X: f32[100000000]\nY = relu(X)\n' >"$tmp/big.tap"
expect "f32[10^8] --memory-limit 100M" 2 "memory limit 100.0 MiB exceeded" -- \
  "$tapestry" run "$tmp/big.tap" --memory-limit 100M
# Against a tiny run's peak, not an absolute figure: under ASan (make test-sanitize) the process
# starts at ~420 MiB (its shadow memory and the debug binary), a release build at ~20 MiB. One
# input of 381 MiB would show either way.
printf 'X: f32[100]\nY = relu(X)\n' >"$tmp/tiny.tap"
base=$(max_rss_kib "$tapestry" run "$tmp/tiny.tap")
rss=$(max_rss_kib "$tapestry" run "$tmp/big.tap" --memory-limit 100M)
if [[ $rss -lt $((base + 150000)) ]]; then passed=$((passed + 1)); else
  echo "FAIL f32[10^8] --memory-limit 100M: peak RSS ${rss} KiB against ${base} KiB for a tiny run (inputs generated before the check?)"
  failures=$((failures + 1)); fi

# 4. An input that is a symlink to /dev/zero, or a FIFO: refused at once, not read forever.
mkdir -p "$tmp/zero" "$tmp/fifo"
ln -s /dev/zero "$tmp/zero/X.npy"
expect "X.npy -> /dev/zero" 2 "X.npy: not a regular file" -- "$tapestry" run "$tmp/relu4.tap" --inputs "$tmp/zero"
mkfifo "$tmp/fifo/X.npy"
expect "X.npy a FIFO" 2 "X.npy: not a regular file" -- "$tapestry" run "$tmp/relu4.tap" --inputs "$tmp/fifo"

# 5. A statement using the variable it defines: located error, not a graph holding only X.
printf 'X: f32[4]\nA = add(X, A)\nB = neg(A)\noutput B\n' >"$tmp/self.tap"
expect "self-reference build" 2 "self.tap:2:12: error: unknown variable 'A'" -- "$tapestry" build "$tmp/self.tap"
expect "self-reference run" 2 "self.tap:2:12: error: unknown variable 'A'" -- "$tapestry" run "$tmp/self.tap"

# 6. render: a failed write names its cause (a directory in the way) and leaves no temporary.
"$tapestry" build "$tmp/relu4.tap" -o "$tmp/relu4.json" >/dev/null 2>&1
mkdir -p "$tmp/render/taken.svg"
expect "render onto a directory" 2 "cannot write .*taken.svg: Is a directory" -- \
  "$tapestry" render "$tmp/relu4.json" -o "$tmp/render/taken.svg"
if [[ $(ls -A "$tmp/render") == "taken.svg" ]]; then passed=$((passed + 1)); else
  echo "FAIL render left files behind: $(ls -A "$tmp/render")"; failures=$((failures + 1)); fi

# 7. A call the fast kernels do not recognise (an integer linear) runs on the reference kernel
#    and is counted for its operation: the summary table and the --metrics JSON show it.
printf 'X: i32[8, 5]\nW: i32[3, 5]\nb: i32[3]\nY = linear(X, W, b)\n' >"$tmp/int.tap"
"$tapestry" run "$tmp/int.tap" --split Y.batch=2 --quiet --metrics "$tmp/int.json" >"$tmp/out" 2>"$tmp/err"; rc=$?
if [[ $rc -eq 0 ]] && grep -qE "GFLOP/s +path +fallbacks" "$tmp/out" &&
   grep -qE "^Y +linear +2 .* reference +2$" "$tmp/out" &&
   grep -qxF "kernel paths: reference 2 applications; fallbacks in Y (2 calls)" "$tmp/out" &&
   python3 -c 'import json, sys; m = json.load(open(sys.argv[1]))
assert [o["fallbacks"] for o in m["operations"]] == [2], m["operations"]
assert [o["paths"] for o in m["operations"]] == [{"reference": 2}], m["operations"]
assert [a["path"] for a in m["application_records"]] == ["reference"] * 2, m' "$tmp/int.json"; then
  passed=$((passed + 1)); else
  echo "FAIL fallbacks: rc=$rc"; cat "$tmp/out" "$tmp/err"; failures=$((failures + 1)); fi


# --device: CUDA-only flags without it, an unknown device, a CPU executor with it, and --device
# cuda where no GPU (or no CUDA backend) is usable — each a clear error naming the flag, exit 2.
lr="$root/examples/linear_relu.tap"
expect "--streams without --device cuda" 2 "need --device cuda" -- "$tapestry" run "$lr" --streams 4
expect "--tf32 without --device cuda" 2 "need --device cuda" -- "$tapestry" run "$lr" --tf32
expect "--device tpu" 2 "--device: tpu not in" -- "$tapestry" run "$lr" --device tpu
expect "--device cuda --executor application" 2 "give no --executor application" -- \
  "$tapestry" run "$lr" --device cuda --executor application
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  expect "--device cuda without a GPU" 2 "--device cuda: (no CUDA device|this build has no CUDA backend)" -- \
    "$tapestry" run "$lr" --device cuda --verify
fi

finish
