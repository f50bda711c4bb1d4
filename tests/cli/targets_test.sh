#!/usr/bin/env bash
# End-to-end: `tapestry targets` lists and describes targets (presets and files, bad files exit
# 2 with their located error), and `tapestry calibrate` writes a target that reads back.
# Usage: targets_test.sh TAPESTRY ROOT
set -uo pipefail
tapestry=$1
root=$2
source "$(dirname "$0")/cli_testing.sh"

# 1. The presets: listed, each described, each file equal to the compiled copy.
"$tapestry" targets >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 0 ]] && grep -qE "^h100x8 +8 devices" "$tmp/out" && grep -qE "^h100x64 +64 devices" "$tmp/out" &&
  grep -qE "^a100x8 +8 devices" "$tmp/out" && grep -qE "^cpu-local " "$tmp/out"
check "targets lists the presets" $?
for preset in "$root"/targets/*.json; do
  name=$(basename "$preset" .json)
  "$tapestry" targets "$name" --json >"$tmp/preset.json" 2>"$tmp/err" &&
    "$tapestry" targets "$preset" --json >"$tmp/file.json" 2>>"$tmp/err" &&
    cmp -s "$tmp/preset.json" "$tmp/file.json"
  check "targets $name --json equals targets $preset --json" $?
done
"$tapestry" targets h100x64 >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 0 ]] && grep -qE "^devices +64 on 8 nodes: gpu:0 … gpu:63" "$tmp/out" &&
  grep -qE "^inter +50 GB/s per direction" "$tmp/out" && grep -qE "^mesh +dp=8 × tp=8" "$tmp/out" &&
  grep -qE "^intra +450 GB/s per direction, latency 2 µs; collectives 370 GB/s, 3.4 µs per step$" "$tmp/out" &&
  grep -qE "^inter +50 GB/s per direction, latency 5 µs; collectives 46 GB/s, 14 µs per step$" "$tmp/out"
check "targets h100x64 describes it, collective figures included" $?
"$tapestry" targets cpu-local >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 0 ]] && grep -qE "^intra +shared memory \(transfers and collectives free" "$tmp/out"
check "targets cpu-local: collectives free over shared memory" $?

# 2. Bad targets and arguments: exit 2, the located error (run where a stray default
#    ./cpu-local.json would show).
mkdir "$tmp/cwd" && cd "$tmp/cwd" || exit 1
printf '{"name": "x",\n "name": "y"}' >"$tmp/dup.json"
expect "duplicate key" 2 "dup.json:2:2: duplicate key \"name\"" -- "$tapestry" targets "$tmp/dup.json"
sed 's/"memory_bandwidth_Bps": 3.35e12/"memory_bandwidth_Bps": -1/' "$root/targets/h100x8.json" >"$tmp/neg.json"
expect "negative bandwidth" 2 "neg.json: /device_types/h100-sxm/memory_bandwidth_Bps: must be > 0, got -1" -- \
  "$tapestry" targets "$tmp/neg.json"
sed 's/"step_latency_s": 3.4e-6/"step_latency_s": -1/' "$root/targets/h100x8.json" >"$tmp/alpha.json"
expect "negative collective step latency" 2 "alpha.json: /links/intra_node/collective/step_latency_s: must be >= 0, got -1" -- \
  "$tapestry" targets "$tmp/alpha.json"
sed 's/"collective": {"bandwidth_Bps": 370e9,/"collective": {"bw": 370e9,/' "$root/targets/h100x8.json" >"$tmp/bw.json"
expect "collective figures without a bandwidth" 2 "bw.json: /links/intra_node/collective: missing member \"bandwidth_Bps\"" -- \
  "$tapestry" targets "$tmp/bw.json"
sed 's/"count": 1,/"count": 2,/' "$root/targets/h100x8.json" >"$tmp/two.json"
expect "two nodes without inter_node" 2 "two.json: /links: missing member \"inter_node\"" -- \
  "$tapestry" targets "$tmp/two.json"
expect "unknown preset" 2 "unknown target \"h100x9\": no such file, and the presets are a100x8, cpu-local, h100-measured, h100x64, h100x8, h200-measured" -- \
  "$tapestry" targets h100x9
expect "missing file" 2 "nowhere/t.json: cannot open target file" -- "$tapestry" targets nowhere/t.json
expect "calibrate --seconds 0" 2 "--seconds 0: expected a time in \(0, 3600\]" -- "$tapestry" calibrate --seconds 0
expect "calibrate --seconds -1" 2 "--seconds -1: expected a time" -- "$tapestry" calibrate --seconds -1
expect "calibrate --seconds x" 2 "seconds" -- "$tapestry" calibrate --seconds x
expect "calibrate -o into a missing directory" 2 "-o $tmp/no/t.json: the directory .* does not exist" -- \
  "$tapestry" calibrate --seconds 0.1 -o "$tmp/no/t.json"
expect "calibrate extra argument" 2 "" -- "$tapestry" calibrate extra
expect "calibrate --device tpu" 2 "--device: tpu not in \{cpu,cuda\}" -- "$tapestry" calibrate --device tpu
expect "calibrate --device cuda --preset unknown" 2 "unknown target \"nowhere\"" -- \
  "$tapestry" calibrate --device cuda --preset nowhere
# Without a usable GPU (no driver, no device, or a build without CUDA): exit 1, the reason.
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  expect "calibrate --device cuda without a GPU" 1 \
    "^tapestry calibrate: error: --device cuda: (no CUDA device: cudaGetDeviceCount: |this build has no CUDA backend)" -- \
    "$tapestry" calibrate --device cuda --seconds 0.1
fi
[[ -z $(ls -A "$tmp/cwd") ]]
check "bad calibrate runs write nothing" $?

# 3. A short calibration writes a target that parses back, one cpu device per hardware thread.
timeout 600 "$tapestry" calibrate --seconds 0.5 -o "$tmp/cal.json" >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 0 ]] && grep -qE "^matmul f32 .* GFLOP/s" "$tmp/out" && grep -qE "^dispatch .* µs per application" "$tmp/out" &&
  grep -qE "^wrote $tmp/cal.json: $(nproc) devices cpu:0" "$tmp/out" &&
  grep -qE "^gemm 32 +32×32×32, 64 per thread .* µs per call, .*: efficiency " "$tmp/out"
check "calibrate --seconds 0.5 runs and prints its table" $?
"$tapestry" targets "$tmp/cal.json" >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 0 ]] && grep -qE "^devices +$(nproc) on 1 node: cpu:0" "$tmp/out" && grep -qE "^intra +shared memory" "$tmp/out"
check "the calibrated target reads back" $?
python3 - "$tmp/cal.json" >"$tmp/out" 2>"$tmp/err" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
core = t["device_types"]["hw-thread"]
assert core["kind"] == "cpu" and core["efficiency"] == 1.0
assert core["peak_flops"]["float32"] > 1e8 and core["peak_flops"]["float64"] > 1e8, core
assert core["memory_bandwidth_Bps"] > 1e8 and 0 < core["launch_s"] < 1e-3, core
assert core["memory_bytes"] > 2**28 and core["idle_w"] <= core["busy_w"], core
assert t["links"]["intra_node"]["shared_memory"] is True
c = t["calibration"]
rates = {"matmul f32", "matmul f64", "add f32", "relu f32", "copy f32", "gelu f32",
         "matmul bf16", "add bf16", "gelu bf16", "matmul f16", "add f16", "gelu f16"}
import glob
l2 = [d for d in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*")
      if open(d + "/level").read().strip() == "2" and open(d + "/type").read().strip() != "Instruction"]
assert set(c["benchmarks"]) == (rates | {"add f32 L2"} if l2 else rates), c
if "cache" in core:  # the L2's one-thread rate, when it beats memory
    size = open(l2[0] + "/size").read().strip()
    assert core["cache"]["bytes"] == int(size[:-1]) * {"K": 1024, "M": 2**20}[size[-1]], (core, size)
    assert core["cache"]["bandwidth_Bps"] == c["benchmarks"]["add f32 L2"]["one_thread"], core
    assert core["cache"]["bandwidth_Bps"] > core["memory_bandwidth_Bps"], core
assert abs(c["benchmarks"]["matmul f32"]["per_thread_all"] - core["peak_flops"]["float32"]) < 1e-6 * core["peak_flops"]["float32"]
# The 16-bit peaks are their matmuls' rates; a "dtypes" factor, where written, is in (0, 0.9).
for dtype, short in (("bfloat16", "bf16"), ("float16", "f16")):
    peak = core["peak_flops"][dtype]
    assert abs(c["benchmarks"][f"matmul {short}"]["per_thread_all"] - peak) < 1e-6 * peak, core
    for f in core.get("dtypes", {}).get(dtype, {}).values():
        assert 0 < f < 0.9, core["dtypes"]
assert c["dispatch"]["applications"] == 16384
# The GEMM efficiency table: one entry per measured size, 2n³ FLOPs, efficiency in (0, 1] and never
# falling as GEMMs grow.
g = core["gemm_efficiency"]
assert [f for f, _ in g] == [2.0 * n**3 for n in (32, 64, 128, 256, 512, 1024)], g
assert all(0 < e <= 1 for _, e in g) and all(a[1] <= b[1] for a, b in zip(g, g[1:])), g
assert set(c["gemm"]) == {f"{n}x{n}x{n}" for n in (32, 64, 128, 256, 512, 1024)}, c["gemm"]
assert all(c["gemm"][k]["seconds_per_call"] > 0 for k in c["gemm"])
PY
check "the calibrated constants are what was measured" $?

finish
