#!/usr/bin/python3
"""transformer_torch: PyTorch baselines of bench/transformer_vs_baselines.sh — the layer of
examples/transformer_block.tap (B = 4, S = 128, D = 512, 8 heads of 64, MLP 2048, no layer norm;
the defaults) and of examples/transformer_large.tap (--batch 4 --seq 512 --width 1024 --heads 16
--mlp 4096):

    Q, K, V = linear(X, Wq, bq) …  → [B, H, S, Dh];  P = softmax(Q·Kᵀ · Scale);  Ctx = P·V
    R1 = X + linear(Ctx → [B·S, D], Wo, bo);  Y = R1 + linear(gelu(linear(R1, W1, b1)), W2, b2)

--mode eager or jit (torch.jit.trace + freeze), or autocast: eager under
torch.autocast("cpu", dtype=torch.bfloat16) (linear and matmul in bf16 on oneDNN, softmax and
the adds in f32, as PyTorch's CPU autocast lists them; Y written as f32); --inputs DIR reads every input as DIR/<name>.npy
(numpy), --out FILE writes Y. One line per timed repetition (after two untimed ones) and
`median_s <seconds>`; `skipped: <why>` (exit 0) without torch/numpy.
"""
import argparse
import os
import statistics
import time

parser = argparse.ArgumentParser()
parser.add_argument("--mode", choices=["eager", "jit", "autocast"], default="eager")
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--reps", type=int, default=5)
parser.add_argument("--inputs", required=True)
parser.add_argument("--out")
parser.add_argument("--batch", type=int, default=4)
parser.add_argument("--seq", type=int, default=128)
parser.add_argument("--width", type=int, default=512)
parser.add_argument("--heads", type=int, default=8)
parser.add_argument("--mlp", type=int, default=2048)
args = parser.parse_args()
if args.width % args.heads:
    parser.error(f"--width {args.width} is not a multiple of --heads {args.heads}")
try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:
    print(f"skipped: {e}")
    raise SystemExit(0)

torch.set_num_threads(args.threads)
names = ["X", "Wq", "bq", "Wk", "bk", "Wv", "bv", "Wo", "bo", "W1", "b1", "W2", "b2", "Scale"]
t = {n: torch.from_numpy(np.load(os.path.join(args.inputs, n + ".npy"))) for n in names}
want = {"X": (args.batch * args.seq, args.width), "W1": (args.mlp, args.width)}
for n, shape in want.items():
    if tuple(t[n].shape) != shape:
        raise SystemExit(f"transformer_torch: {n}.npy is {tuple(t[n].shape)}, the flags say {shape}")


class Block(torch.nn.Module):
    def forward(self, x, wq, bq, wk, bk, wv, bv, wo, bo, w1, b1, w2, b2, scale):
        b, s, h = args.batch, args.seq, args.heads

        def heads(v):
            return v.reshape(b, s, h, args.width // h).permute(0, 2, 1, 3)
        q, k, v = heads(F.linear(x, wq, bq)), heads(F.linear(x, wk, bk)), heads(F.linear(x, wv, bv))
        p = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * scale, dim=-1)
        ctx = torch.matmul(p, v).permute(0, 2, 1, 3).reshape(b * s, args.width)
        r1 = x + F.linear(ctx, wo, bo)
        return r1 + F.linear(F.gelu(F.linear(r1, w1, b1)), w2, b2)


inputs = tuple(t[n] for n in names)
autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.mode == "autocast")
with torch.no_grad(), autocast:
    model = Block().eval()
    if args.mode == "jit":
        model = torch.jit.freeze(torch.jit.trace(model, inputs))
    times = []
    for r in range(-2, args.reps):
        t0 = time.perf_counter()
        y = model(*inputs)
        s = time.perf_counter() - t0
        if r >= 0:
            times.append(s)
            print(f"torch-{args.mode} run {r + 1}: {s * 1e3:.2f} ms")
print(f"median_s {statistics.median(times):.6f}")
if args.out:
    np.save(args.out, y.float().numpy())
