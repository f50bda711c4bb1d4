#!/usr/bin/python3
"""mlp_torch: baseline (b) of bench/mlp_vs_baselines.sh — examples/mlp.tap in PyTorch (CPU).

    Y = F.linear(relu(F.linear(X, W1, b1)), W2, b2)

X [batch, 1024], W1 [4096, 1024], W2 [1024, 4096]; torch.set_num_threads(threads). Prints one
line per repetition and `median_s <seconds>`; prints `skipped: <why>` and exits 0 when torch is
not installed (the benchmark installs nothing).

    /usr/bin/python3 bench/mlp_torch.py [--threads 2] [--reps 5] [--batch 4096]
"""
import argparse
import statistics
import time

parser = argparse.ArgumentParser()
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--reps", type=int, default=5)
parser.add_argument("--batch", type=int, default=4096)
args = parser.parse_args()

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # the bench reports, it does not install
    print(f"skipped: {e}")
    raise SystemExit(0)

torch.set_num_threads(args.threads)
torch.manual_seed(0)
x = torch.rand(args.batch, 1024) * 2 - 1
w1 = torch.rand(4096, 1024) * 2 - 1
b1 = torch.rand(4096) * 2 - 1
w2 = torch.rand(1024, 4096) * 2 - 1
b2 = torch.rand(1024) * 2 - 1
flops = 2.0 * args.batch * 1024 * 4096 * 2
times = []
with torch.no_grad():
    for r in range(-1, args.reps + 1):  # two warm-up runs first
        t0 = time.perf_counter()
        y = F.linear(torch.relu(F.linear(x, w1, b1)), w2, b2)
        s = time.perf_counter() - t0
        if r < 1:
            continue
        times.append(s)
        print(f"torch run {r}: {s:.4f} s  {flops / s / 1e9:.1f} GFLOP/s")
print(f"median_s {statistics.median(times):.6f}")
