#!/usr/bin/python3
"""torchvision CNNs through `tapestry import` as exported: verify, plan, run.

  torchvision_models.py --tapestry build/ci/src/cli/tapestry OUT [--px 64] [--evals 300]
                        [--models mobilenet_v2,mobilenet_v3_small,efficientnet_b0,convnext_tiny]

For each model (Debian's torchvision, random weights, torch.manual_seed(0)): its BatchNorm
statistics are set from one batch of 8 random images (momentum 1, so activations keep a scale
of ~1 through the network instead of fading with depth), then it is exported in eval mode with
torch.onnx.export at opset 13 for one [1, 3, PX, PX] image. Then, as a user would:

  1. tapestry import model.onnx -o g.tap --weights in/          (no hand edits)
  2. tapestry verify g.tap --inputs in/ --outputs torch/         PyTorch's own output, judged
  3. tapestry run g.tap --inputs in/ --verify                    unsharded, fast kernels
  4. tapestry optimize g.tap --target h100x8 --max-evals N --plan-out plan.json
  5. tapestry run g.tap --plan plan.json --ignore-placement --verify   the plan, on this CPU

and prints one row per model: operations, kernels of note, each step's verdict, PyTorch's
max |Δ| against the float64 oracle and the bar. Exit 1 if any step fails; 77 (skip) without
torch/torchvision.
"""
import argparse
import os
import re
import subprocess
import sys

try:
    import numpy as np
    import torch
    import torchvision
except Exception as e:  # noqa: BLE001 - any import failure means "skip"
    print(f"skip: python3 cannot import torch/torchvision/numpy: {e}")
    sys.exit(77)

DEFAULT = "mobilenet_v2,mobilenet_v3_small,efficientnet_b0,convnext_tiny"


def export(name, d, px):
    torch.manual_seed(0)
    m = getattr(torchvision.models, name)(weights=None)
    for mod in m.modules():
        if isinstance(mod, torch.nn.modules.batchnorm._BatchNorm):
            mod.momentum = 1.0
    m.train()
    with torch.no_grad():
        m(torch.randn(8, 3, px, px))
    m.eval()
    x = torch.randn(1, 3, px, px)
    for sub in ("in", "torch"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    torch.onnx.export(m, (x,), os.path.join(d, "model.onnx"), opset_version=13,
                      input_names=["x"], output_names=["y"])
    with torch.no_grad():
        y = m(x)
    np.save(os.path.join(d, "in", "x.npy"), x.numpy())
    np.save(os.path.join(d, "torch", "y.npy"), y.numpy())


def step(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tapestry", required=True)
    ap.add_argument("out")
    ap.add_argument("--px", type=int, default=64)
    ap.add_argument("--evals", type=int, default=300)
    ap.add_argument("--models", default=DEFAULT)
    a = ap.parse_args()
    t = a.tapestry
    failed = False
    print(f"{'model':20} {'ops':>5} {'import':>7} {'torch':>6} {'run':>5} {'plan':>5} "
          f"{'torch max |Δ|':>14} {'bar':>20}  kernels")
    for name in a.models.split(","):
        d = os.path.join(a.out, name)
        export(name, d, a.px)
        g, w = os.path.join(d, "g.tap"), os.path.join(d, "in")
        verdicts, delta, bar, ops, kernels = [], "", "", "", ""
        rc, out = step([t, "import", os.path.join(d, "model.onnx"), "-o", g, "--weights", w,
                        "--quiet"])
        verdicts.append(rc == 0)
        if rc == 0:
            m = re.search(r"(\d+) operations", out)
            ops = m.group(1) if m else "?"
            text = open(g).read()
            kernels = ", ".join(k for k in ("grouped_conv2d", "conv2d", "pad2d", "gelu")
                                if re.search(rf"\b{k}\(", text))
            rc, out = step([t, "verify", g, "--inputs", w, "--outputs", os.path.join(d, "torch")])
            verdicts.append(rc == 0)
            m = re.search(r"max \|Δ\| (\S+) vs float64.*bar per cell (\S+);", out)
            if m:
                delta, bar = m.group(1), m.group(2)
            rc, out = step([t, "run", g, "--inputs", w, "--verify", "--quiet"])
            verdicts.append(rc == 0)
            plan = os.path.join(d, "plan.json")
            rc, out = step([t, "optimize", g, "--target", "h100x8", "--max-evals", str(a.evals),
                            "--quiet", "--plan-out", plan])
            if rc == 0:
                rc, out = step([t, "run", g, "--inputs", w, "--plan", plan, "--ignore-placement",
                                "--verify", "--quiet"])
            verdicts.append(rc == 0)
        while len(verdicts) < 4:
            verdicts.append(False)
        failed = failed or not all(verdicts)
        v = ["PASS" if ok else "FAIL" for ok in verdicts]
        print(f"{name:20} {ops:>5} {v[0]:>7} {v[1]:>6} {v[2]:>5} {v[3]:>5} {delta:>14} "
              f"{bar:>20}  {kernels}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
