#!/usr/bin/env python3
"""gpu_vs_torch: Tapestry's CUDA backend against PyTorch on the same GEMMs, on one NVIDIA GPU.

Two graphs, each run the same way by both (docs/gpu.md, "Measured on an H100"):

    mlp          examples/mlp.tap: Y = linear(relu(linear(X, W1, b1)), W2, b2),
                 X [4096, 1024], W1 [4096, 1024], W2 [1024, 4096], float32
    transformer  tests/data/search/transformer_mlp_bf16.tap: Y = linear(gelu(linear(X, W1, b1)),
                 W2, b2), X [8192, 4096], W1 [16384, 4096], W2 [4096, 16384], bfloat16

PyTorch (torch.nn.functional.linear + relu / gelu on CUDA tensors) is timed with CUDA events
around one forward pass, after --warmup passes, the median of --repeat; twice: eager, and
replayed from a CUDA graph (torch.cuda.CUDAGraph: no per-kernel launch cost, the strongest
baseline). Tapestry is `tapestry run G --device cuda --warmup W --repeat R --metrics m.json`,
whose metrics' "wall_s" is the median run's GPU compute time (CUDA events around the steps).
The float32 MLP runs twice more with TF32 tensor cores allowed on both sides
(torch.backends.cuda.matmul.allow_tf32 and `tapestry run --tf32`).

Prints one row per (graph, precision): the times, Tapestry's GEMM rate, torch/tapestry — the best
PyTorch time over Tapestry's (≥ 1: Tapestry is as fast; the goal is ≥ 0.9) — and Tapestry's host
steps (operations without a GPU kernel, run on the CPU: each one costs copies both ways). --json FILE writes
the rows. Exits 1 when a run fails, 0 otherwise (a slow Tapestry is a number, not a failure);
prints `skipped: <why>` and exits 0 without torch or a CUDA device.

    python3 bench/gpu_vs_torch.py [--tapestry build/ci/src/cli/tapestry] [--repeat 20]
                                  [--warmup 3] [--only mlp|transformer] [--torch-only]
                                  [--json rows.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name, graph file, dtype, activation, (tokens, d_in, d_hidden), precisions to run
GRAPHS = [
    ("mlp", "examples/mlp.tap", "float32", "relu", (4096, 1024, 4096), ["fp32", "tf32"]),
    ("transformer", "tests/data/search/transformer_mlp_bf16.tap", "bfloat16", "gelu",
     (8192, 4096, 16384), ["bf16"]),
]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tapestry", default=os.path.join(ROOT, "build/ci/src/cli/tapestry"))
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--only", choices=[g[0] for g in GRAPHS])
    p.add_argument("--torch-only", action="store_true", help="time PyTorch alone")
    p.add_argument("--json", help="write the rows to FILE")
    return p.parse_args()


def gemm_flops(shape):
    tokens, d_in, d_hidden = shape
    return 2 * 2 * tokens * d_in * d_hidden  # two linears of tokens × d_in × d_hidden


def time_torch(torch, shape, dtype, activation, warmup, repeat, graphed):
    """Median seconds of one forward pass (CUDA events), eager or replayed from a CUDA graph."""
    import torch.nn.functional as F
    tokens, d_in, d_hidden = shape
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(0)

    def uniform(*size):
        return (torch.rand(*size, generator=g, device=dev) * 2 - 1).to(dtype)

    x = uniform(tokens, d_in)
    w1, b1 = uniform(d_hidden, d_in), uniform(d_hidden)
    w2, b2 = uniform(d_in, d_hidden), uniform(d_in)
    act = torch.relu if activation == "relu" else F.gelu

    def forward():
        return F.linear(act(F.linear(x, w1, b1)), w2, b2)

    run = forward
    if graphed:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up on a side stream, as CUDA graph capture wants
            for _ in range(2):
                forward()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = forward()  # noqa: F841 (kept alive by the graph's pool)
        run = graph.replay
    for _ in range(warmup):
        run()
    torch.cuda.synchronize()
    times = []
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(repeat):
        start.record()
        run()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e-3)
    return statistics.median(times)


def time_tapestry(tapestry, graph, tf32, warmup, repeat):
    """The median run's GPU compute seconds from `tapestry run --device cuda --metrics`."""
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "m.json")
        cmd = [tapestry, "run", os.path.join(ROOT, graph), "--device", "cuda", "--warmup",
               str(warmup), "--repeat", str(repeat), "--metrics", metrics, "--quiet"]
        if tf32:
            cmd.append("--tf32")
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: exit {done.returncode}\n{done.stdout}{done.stderr}")
        with open(metrics) as f:
            m = json.load(f)
    if "wall_s" not in m:
        raise RuntimeError(f"{graph}: the metrics have no wall_s: {sorted(m)}")
    return m["wall_s"], m.get("cuda", {})


def main():
    args = parse_args()
    try:
        import torch
    except ImportError as e:
        print(f"skipped: {e}")
        return 0
    if not torch.cuda.is_available():
        print("skipped: torch sees no CUDA device")
        return 0
    print(f"# {torch.cuda.get_device_name(0)}; torch {torch.__version__}, CUDA {torch.version.cuda}; "
          f"median of {args.repeat} after {args.warmup} warm-up runs")
    rows, failed = [], False
    for name, graph, dtype_name, activation, shape, precisions in GRAPHS:
        if args.only and name != args.only:
            continue
        dtype = getattr(torch, dtype_name)
        for precision in precisions:
            tf32 = precision == "tf32"
            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch.backends.cudnn.allow_tf32 = tf32
            row = {"graph": name, "file": graph, "precision": precision}
            try:
                row["torch_eager_s"] = time_torch(torch, shape, dtype, activation, args.warmup,
                                                  args.repeat, graphed=False)
                row["torch_graph_s"] = time_torch(torch, shape, dtype, activation, args.warmup,
                                                  args.repeat, graphed=True)
                if not args.torch_only:
                    row["tapestry_s"], row["tapestry_cuda"] = time_tapestry(
                        args.tapestry, graph, tf32, args.warmup, args.repeat)
                    best = min(row["torch_eager_s"], row["torch_graph_s"])
                    row["torch_over_tapestry"] = best / row["tapestry_s"]
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                row["error"] = str(e)
                failed = True
            row["gemm_flops"] = gemm_flops(shape)
            rows.append(row)
    print(f"{'graph':<12} {'prec':<5} {'torch eager':>12} {'torch graph':>12} {'tapestry':>12} "
          f"{'tapestry TFLOP/s':>17} {'torch/tapestry':>15} {'host steps':>10}")
    for r in rows:
        def ms(key):
            return f"{r[key] * 1e3:10.3f} ms" if key in r else f"{'-':>12}"
        rate = f"{r['gemm_flops'] / r['tapestry_s'] / 1e12:17.1f}" if "tapestry_s" in r else f"{'-':>17}"
        ratio = f"{r['torch_over_tapestry']:15.2f}" if "torch_over_tapestry" in r else f"{'-':>15}"
        host = r.get("tapestry_cuda", {}).get("host_steps", "-")
        print(f"{r['graph']:<12} {r['precision']:<5} {ms('torch_eager_s')} {ms('torch_graph_s')} "
              f"{ms('tapestry_s')} {rate} {ratio} {host:>10}")
        if "error" in r:
            print(f"  FAILED: {r['error']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
