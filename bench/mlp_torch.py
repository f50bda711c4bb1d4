#!/usr/bin/python3
"""mlp_torch: the PyTorch baselines of bench/mlp_vs_baselines.sh — examples/mlp.tap on the CPU:

    Y = F.linear(relu(F.linear(X, W1, b1)), W2, b2)

X [batch, 1024], W1 [4096, 1024], W2 [1024, 4096]; torch.set_num_threads(threads). --mode picks
how PyTorch runs it:

    eager    F.linear / relu on dense tensors (PyTorch's own GEMM path: MKL or OpenBLAS)
    mkldnn   torch.nn.Linear layers converted with torch.utils.mkldnn.to_mkldnn (oneDNN),
             the input converted to the oneDNN layout once, outside the timing
    jit      torch.jit.trace of the eager module, frozen (torch.jit.freeze)

--inputs DIR reads X, W1, b1, W2, b2 from DIR/<name>.npy (needs numpy); --out FILE writes Y.
Prints one line per timed repetition (after two untimed ones) and `median_s <seconds>`; prints
`skipped: <why>` and exits 0 when torch (or numpy, for --inputs/--out) is not installed.

    /usr/bin/python3 bench/mlp_torch.py [--mode eager] [--threads 2] [--reps 5] [--batch 4096]
                                        [--inputs DIR] [--out Y.npy]
"""
import argparse
import os
import statistics
import time

parser = argparse.ArgumentParser()
parser.add_argument("--mode", choices=["eager", "mkldnn", "jit"], default="eager")
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--reps", type=int, default=5)
parser.add_argument("--batch", type=int, default=4096)
parser.add_argument("--inputs")
parser.add_argument("--out")
args = parser.parse_args()

try:
    import torch
    import torch.nn.functional as F
    if args.inputs or args.out:
        import numpy as np
except ImportError as e:  # the bench reports, it does not install
    print(f"skipped: {e}")
    raise SystemExit(0)

torch.set_num_threads(args.threads)
torch.manual_seed(0)


def tensor(name, *shape):
    if args.inputs:
        return torch.from_numpy(np.load(os.path.join(args.inputs, f"{name}.npy")))
    return torch.rand(*shape) * 2 - 1


x = tensor("X", args.batch, 1024)
w1, b1 = tensor("W1", 4096, 1024), tensor("b1", 4096)
w2, b2 = tensor("W2", 1024, 4096), tensor("b2", 1024)


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(1024, 4096)
        self.l2 = torch.nn.Linear(4096, 1024)
        with torch.no_grad():
            self.l1.weight.copy_(w1)
            self.l1.bias.copy_(b1)
            self.l2.weight.copy_(w2)
            self.l2.bias.copy_(b2)

    def forward(self, v):
        return self.l2(torch.relu(self.l1(v)))


with torch.no_grad():
    model = Mlp().eval()
    arg = x
    if args.mode == "mkldnn":
        from torch.utils import mkldnn as mkldnn_utils
        model = mkldnn_utils.to_mkldnn(model)
        arg = x.to_mkldnn()
    elif args.mode == "jit":
        model = torch.jit.freeze(torch.jit.trace(model, (x,)))

    def run():
        y = model(arg)
        return y.to_dense() if args.mode == "mkldnn" else y

    flops = 2.0 * args.batch * 1024 * 4096 * 2
    times = []
    for r in range(-2, args.reps):  # two untimed runs first
        t0 = time.perf_counter()
        y = run()
        s = time.perf_counter() - t0
        if r < 0:
            continue
        times.append(s)
        print(f"torch-{args.mode} run {r + 1}: {s:.4f} s  {flops / s / 1e9:.1f} GFLOP/s")
print(f"median_s {statistics.median(times):.6f}")
if args.out:
    np.save(args.out, y.numpy())
