#!/usr/bin/env python3
"""gpu_target_compare: two GPU targets' device constants side by side, as a Markdown table.

    python3 bench/gpu_target_compare.py targets/h100x8.json h100-measured.json

Compares the first device type of each (a preset name such as h100x8 reads targets/h100x8.json)
on what the cost model prices a kernel with (docs/cost.md): peak FLOP/s per dtype, the rate a
GEMM of a given size reaches (peak × its gemm_efficiency, or × efficiency without a table), the
effective memory bandwidth (bandwidth × bandwidth_efficiency), launch and run overheads, memory,
the host link and power. The last column is the second target over the first. Used for
docs/cost.md's "A measured H100 against the h100x8 preset".
"""
import bisect
import json
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DTYPES = ["float32", "bfloat16", "float16", "float64"]
# One GEMM call of n×n×n, n = 512 … 8192.
GEMM_SIZES = [512, 1024, 2048, 4096, 8192]


def load(spec):
    path = spec if os.path.exists(spec) else os.path.join(ROOT, "targets", spec + ".json")
    with open(path) as f:
        target = json.load(f)
    name, device = next(iter(target["device_types"].items()))
    return target, name, device


def gemm_efficiency(device, flops):
    """target.h's rule: linear in log FLOPs between the entries, clamped at the ends."""
    table = device.get("gemm_efficiency")
    if not table:
        return device.get("efficiency", 1.0)
    xs = [f for f, _ in table]
    if flops <= xs[0]:
        return table[0][1]
    if flops >= xs[-1]:
        return table[-1][1]
    i = bisect.bisect_right(xs, flops)
    (f0, e0), (f1, e1) = table[i - 1], table[i]
    return e0 + (e1 - e0) * math.log(flops / f0) / math.log(f1 / f0)


def si(value, unit):
    if value is None:
        return "-"
    for prefix in ["", "K", "M", "G", "T", "P"]:
        if abs(value) < 1000 or prefix == "P":
            return f"{value:.3g} {prefix}{unit}"
        value /= 1000
    return "-"


def seconds(value):
    return "-" if value is None else f"{value * 1e6:.3g} µs"


def rows(a, b):
    (ta, _, da), (tb, _, db) = a, b
    out = []

    def row(name, va, vb, fmt):
        ratio = f"{vb / va:.2f}" if va and vb else "-"
        out.append((name, fmt(va), fmt(vb), ratio))

    for dtype in DTYPES:
        row(f"peak {dtype}", da["peak_flops"].get(dtype), db["peak_flops"].get(dtype),
            lambda v: si(v, "FLOP/s"))
    for n in GEMM_SIZES:
        flops = 2.0 * n ** 3
        rate = [d["peak_flops"].get("bfloat16", 0) * gemm_efficiency(d, flops) for d in (da, db)]
        row(f"bf16 GEMM {n}³ (peak × efficiency)", rate[0], rate[1], lambda v: si(v, "FLOP/s"))
    bw = [d["memory_bandwidth_Bps"] * d.get("bandwidth_efficiency", 1.0) for d in (da, db)]
    row("memory bandwidth × efficiency", bw[0], bw[1], lambda v: si(v, "B/s"))
    cache = [d.get("cache", {}).get("bandwidth_Bps") for d in (da, db)]
    row("cache bandwidth", cache[0], cache[1], lambda v: si(v, "B/s"))
    row("launch_s", da.get("launch_s"), db.get("launch_s"), seconds)
    row("run_overhead_s", ta.get("run_overhead_s", 0.0), tb.get("run_overhead_s", 0.0), seconds)
    row("memory_bytes", da.get("memory_bytes"), db.get("memory_bytes"), lambda v: si(v, "B"))
    host = [t.get("links", {}).get("host", {}) for t in (ta, tb)]
    row("host link bandwidth", host[0].get("bandwidth_Bps"), host[1].get("bandwidth_Bps"),
        lambda v: si(v, "B/s"))
    row("host link latency", host[0].get("latency_s"), host[1].get("latency_s"), seconds)
    row("idle_w", da.get("idle_w"), db.get("idle_w"), lambda v: si(v, "W"))
    row("busy_w", da.get("busy_w"), db.get("busy_w"), lambda v: si(v, "W"))
    return out


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    a, b = load(argv[1]), load(argv[2])
    print(f"| constant | {a[0]['name']} ({a[1]}) | {b[0]['name']} ({b[1]}) | ratio |")
    print("|---|---:|---:|---:|")
    for name, va, vb, ratio in rows(a, b):
        print(f"| {name} | {va} | {vb} | {ratio} |")
    preset = b[0].get("calibration", {}).get("from_preset")
    if preset:
        print(f"\nTaken from {b[0]['calibration'].get('preset', 'the preset')}, not measured: "
              f"{', '.join(preset)}.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
