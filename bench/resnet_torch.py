#!/usr/bin/python3
"""resnet_torch: PyTorch baselines of bench/resnet_vs_baselines.sh — the bottleneck block of
examples/resnet_bottleneck.tap (X [8, 256, 56, 56], no biases):

    A = relu(conv1x1(X, W1));  B = relu(conv3x3(A, W2, padding=1));  Y = relu(conv1x1(B, W3) + X)

--mode eager (nn.Conv2d on dense NCHW tensors), mkldnn (torch.utils.mkldnn.to_mkldnn: the convs
as MkldnnConv2d with their filters reordered once, activations in oneDNN's blocked layout; the
timed call includes X.to_mkldnn() and the output's to_dense(), as Tapestry reads and writes
dense NCHW; the residual add runs on the dense tensors, since adding the plain X to a blocked
tensor takes oneDNN's reference `sum`, ~10× slower) or
jit (torch.jit.trace + freeze + optimize_for_inference, which moves the graph onto oneDNN and
fuses conv + ReLU). --inputs DIR reads X, W1, W2, W3 as DIR/<name>.npy, --out FILE writes Y.
One line per timed repetition (after two untimed ones) and `median_s <seconds>`;
`skipped: <why>` (exit 0) without torch/numpy.
"""
import argparse
import os
import statistics
import time

parser = argparse.ArgumentParser()
parser.add_argument("--mode", choices=["eager", "mkldnn", "jit"], default="eager")
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--reps", type=int, default=5)
parser.add_argument("--inputs", required=True)
parser.add_argument("--out")
args = parser.parse_args()
try:
    import numpy as np
    import torch
    import torch.nn.functional as F
    import torch.utils.mkldnn
except ImportError as e:
    print(f"skipped: {e}")
    raise SystemExit(0)

torch.set_num_threads(args.threads)
t = {n: torch.from_numpy(np.load(os.path.join(args.inputs, n + ".npy"))) for n in ["X", "W1", "W2", "W3"]}


class Bottleneck(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(256, 64, 1, bias=False)
        self.conv2 = torch.nn.Conv2d(64, 64, 3, padding=1, bias=False)
        self.conv3 = torch.nn.Conv2d(64, 256, 1, bias=False)
        for conv, w in ((self.conv1, t["W1"]), (self.conv2, t["W2"]), (self.conv3, t["W3"])):
            conv.weight = torch.nn.Parameter(w, requires_grad=False)

    def forward(self, x):
        a = F.relu(self.conv1(x))
        b = F.relu(self.conv2(a))
        return F.relu(self.conv3(b) + x)

    def forward_mkldnn(self, x):
        a = F.relu(self.conv1(x.to_mkldnn()))
        b = F.relu(self.conv2(a))
        return F.relu(self.conv3(b).to_dense() + x)


with torch.no_grad():
    model = Bottleneck().eval()
    x = t["X"]
    if args.mode == "mkldnn":
        blocked = torch.utils.mkldnn.to_mkldnn(model)
        run = lambda: blocked.forward_mkldnn(x)
    elif args.mode == "jit":
        traced = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(model, (x,))))
        run = lambda: traced(x)
    else:
        run = lambda: model(x)
    times = []
    for r in range(-2, args.reps):
        t0 = time.perf_counter()
        y = run()
        s = time.perf_counter() - t0
        if r >= 0:
            times.append(s)
            print(f"torch-{args.mode} run {r + 1}: {s * 1e3:.2f} ms")
print(f"median_s {statistics.median(times):.6f}")
if args.out:
    np.save(args.out, y.numpy())
