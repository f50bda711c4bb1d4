#!/usr/bin/python3
"""The unary kernel table: Tapestry's fast float32 unary kernels against PyTorch on the same arrays
and thread counts, and the memory-bound ones against this machine's copy bandwidth, all measured in
one run (docs/performance.md, "Unary kernels").

    /usr/bin/python3 bench/unary_vs_torch.py build/ci/bench/unary_bench [REPEATS] [--before OLD]

For N = 262,144 (the issue's size, in L2) and N = 16,777,216 (64 MiB per array, past the 32 MiB
L3), at 1 and 2 threads: unary_bench (the C++ side, see its header) prints Tapestry's best time
over REPEATS (default 50; 10 for the large N); PyTorch's is timed here the same way (best of
REPEATS, outputs preallocated with out=, values uniform in [−4, 4), torch.set_num_threads).
Columns: Tapestry ms, PyTorch ms, ratio = Tapestry / PyTorch (below 1: Tapestry faster). The
memory-bound rows give the time over the time of a memcpy of the same bytes (relu, neg, sqrt: read
N·4 + write N·4 = memcpy's; add reads 2·N·4, so its copy time is scaled by 3/2).

--before OLD runs a second unary_bench (the same source linked against an older runtime, e.g. main's
libtapestry_runtime.a) in the same run and adds its times as a column.

Debian's torch is /usr/bin/python3's (python3 on PATH cannot import it).
"""
import subprocess
import sys
import time

import torch

SIZES = (262_144, 16_777_216)
THREADS = (1, 2)
ROW = 1024


def torch_ops(n):
    g = torch.Generator().manual_seed(1)
    x = torch.rand(n, generator=g) * 8 - 4
    b = torch.rand(n, generator=g) * 8 - 4
    y = torch.empty_like(x)
    x2, y2 = x.view(-1, ROW), y.view(-1, ROW)
    return {
        "memcpy": lambda: y.copy_(x),
        "relu": lambda: torch.clamp_min(x, 0, out=y),
        "neg": lambda: torch.neg(x, out=y),
        "add": lambda: torch.add(x, b, out=y),
        "exp": lambda: torch.exp(x, out=y),
        "tanh": lambda: torch.tanh(x, out=y),
        "sigmoid": lambda: torch.sigmoid(x, out=y),
        "gelu": lambda: torch._C._nn.gelu(x, out=y),  # approximate='none': the erf form, as ours
        "sqrt": lambda: torch.sqrt(x, out=y),
        "softmax": lambda: torch.ops.aten._softmax.out(x2, -1, False, out=y2),
    }


def best_ms(f, repeats):
    f()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best * 1e3


def run_bench(bench, n, threads, reps):
    out = subprocess.run([bench, str(n), str(threads), str(reps)], check=True,
                         capture_output=True, text=True).stdout
    times = {}
    for line in out.splitlines():
        _, kernel, _, _, ms = line.split()
        times[kernel] = float(ms)
    return times


def main():
    args = sys.argv[1:]
    before = None
    if "--before" in args:
        at = args.index("--before")
        before = args[at + 1]
        del args[at:at + 2]
    if len(args) not in (1, 2):
        sys.exit(__doc__)
    bench = args[0]
    repeats = int(args[1]) if len(args) == 2 else 50
    print(f"torch {torch.__version__}, best of {repeats} (large N: of {max(3, repeats // 5)})")
    print(f"{'kernel':8} {'N':>9} {'thr':>3}" + (f" {'before ms':>10}" if before else "") +
          f" {'tapestry ms':>12} {'torch ms':>9} {'ratio':>6}"
          f"  {'/ copy (tapestry)':>17} {'/ copy (torch)':>14}")
    for n in SIZES:
        reps = repeats if n < 1_000_000 else max(3, repeats // 5)
        for threads in THREADS:
            old = run_bench(before, n, threads, reps) if before else {}
            ours = run_bench(bench, n, threads, reps)
            torch.set_num_threads(threads)
            theirs = {k: best_ms(f, reps) for k, f in torch_ops(n).items()}
            for kernel, ms in ours.items():
                copy = {"relu": 1.0, "neg": 1.0, "sqrt": 1.0, "add": 1.5}.get(kernel)
                share = (f"{ms / (copy * ours['memcpy']):17.2f} "
                         f"{theirs[kernel] / (copy * theirs['memcpy']):14.2f}" if copy else "")
                was = f" {old[kernel]:10.3f}" if before else ""
                print(f"{kernel:8} {n:9} {threads:3}{was} {ms:12.3f} {theirs[kernel]:9.3f} "
                      f"{ms / theirs[kernel]:6.2f}  {share}")


if __name__ == "__main__":
    main()
