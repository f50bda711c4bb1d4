#!/usr/bin/python3
"""onnx_models: real models through `tapestry import` as exported (issue 30's models table).

    /usr/bin/python3 bench/onnx_models.py --tapestry build/ci/src/cli/tapestry \
        [--px 64] [--threads 2] [--reps 5] [--evals 300] [--only NAME,…] [--ort] [--md FILE]

For each model — torchvision's resnet18, resnet50, mobilenet_v2, mobilenet_v3_small,
efficientnet_b0, vit_b_16 (image_size = --px), convnext_tiny, and two GPT-2-style decoder blocks
(width 256, 4 heads, 64 tokens, causal mask; one on nn.MultiheadAttention, one with hand-written
attention: qkv.chunk(3), q·kᵀ/√d masked with −inf, softmax, ·v) — with random weights
(torch.manual_seed(0); BatchNorm statistics from one batch of 8 random inputs, momentum 1, so
activations keep their scale through the depth), eval mode, batch 1, exported by torch.onnx.export at opset 17 as is:

  import    `tapestry import` with no hand edits; on failure `tapestry import --check`'s blockers
  matches   `tapestry verify` of PyTorch's own output against the graph (the float64 oracle's bar)
  run       `tapestry run --verify` unsharded (the graph as imported), median of --reps
  optimize  `tapestry optimize --target h100x8 --max-evals --evals --plan-out`: the front's
            fastest plan for an 8-GPU node, then `tapestry run --plan P --ignore-placement
            --verify` on this CPU (the same shards, placed on its threads)
  speed     Tapestry's unsharded run (its own `wall_s`: execution only, median of --reps after a
            warm-up) against PyTorch eager and torch.jit.trace (+freeze) on the same input and
            --threads, medians of --reps after two untimed calls; with --ort, onnxruntime (PyPI,
            installed into a venv this script creates at build/ort-venv; CPU provider, intra-op
            threads = --threads) on the same .onnx file.

Prints one line per step and a Markdown table (also written to --md). Exit 0 when it ran; a
model that fails a step is a row saying which step and why, not an abort.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
    import torch
except Exception as e:  # noqa: BLE001 - any import failure means "skip"
    print(f"skipped: /usr/bin/python3 cannot import torch/numpy: {e}")
    sys.exit(0)

parser = argparse.ArgumentParser()
parser.add_argument("--tapestry", required=True)
parser.add_argument("--px", type=int, default=64)
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--reps", type=int, default=5)
parser.add_argument("--evals", type=int, default=300, help="optimize --max-evals (deterministic)")
parser.add_argument("--only", default="")
parser.add_argument("--ort", action="store_true")
parser.add_argument("--md")
parser.add_argument("--keep", help="keep the work folder here instead of a temporary one")
args = parser.parse_args()
torch.set_num_threads(args.threads)
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class GptBlock(torch.nn.Module):
    """Pre-norm causal self-attention and a GELU MLP, both residual (GPT-2's block)."""

    def __init__(self, hand_written, d=256, heads=4, tokens=64):
        super().__init__()
        self.hand, self.heads = hand_written, heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        if hand_written:
            self.qkv = torch.nn.Linear(d, 3 * d)
            self.proj = torch.nn.Linear(d, d)
        else:
            self.attn = torch.nn.MultiheadAttention(d, heads, batch_first=True)
        self.fc1, self.fc2 = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)
        above = torch.triu(torch.ones(tokens, tokens, dtype=torch.bool), 1)
        self.register_buffer("mask", torch.zeros(tokens, tokens).masked_fill(above, float("-inf")))

    def attention(self, h):
        if not self.hand:
            return self.attn(h, h, h, attn_mask=self.mask, need_weights=False)[0]
        b, t, d = h.shape
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        split = lambda z: z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2)  # noqa: E731
        q, k, v = split(q), split(k), split(v)
        scores = q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5 + self.mask
        ctx = torch.softmax(scores, dim=-1) @ v
        return self.proj(ctx.transpose(1, 2).reshape(b, t, d))

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


def models():
    try:
        import torchvision.models as tv
    except Exception as e:  # noqa: BLE001
        tv = None
        print(f"torchvision missing ({e}): only the GPT blocks")
    img = (1, 3, args.px, args.px)
    out = []
    if tv is not None:
        for name in ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small",
                     "efficientnet_b0", "convnext_tiny"]:
            out.append((name, lambda n=name: getattr(tv, n)(), img))
        out.append(("vit_b_16", lambda: tv.vit_b_16(image_size=args.px), img))
    out.append(("gpt_block_mha", lambda: GptBlock(False), (1, 64, 256)))
    out.append(("gpt_block_hand", lambda: GptBlock(True), (1, 64, 256)))
    only = [s for s in args.only.split(",") if s]
    return [m for m in out if not only or m[0] in only]


def sh(cmd, timeout=900):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def first_line(text):
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[0][:160] if lines else ""


def timed(f, reps):
    for _ in range(2):
        f()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def ort_session():
    venv = os.path.join(root, "build", "ort-venv")
    py = os.path.join(venv, "bin", "python3")
    if not os.path.exists(py):
        code, _, err = sh([sys.executable, "-m", "venv", "--system-site-packages", venv])
        if code != 0:
            return None, f"venv: {first_line(err)}"
    code, _, err = sh([py, "-m", "pip", "install", "-q", "onnxruntime"], timeout=600)
    if code != 0:
        return None, f"pip install onnxruntime: {first_line(err)}"
    return py, ""


ORT_TIMER = """
import sys, time, statistics, numpy as np, onnxruntime as ort
o = ort.SessionOptions(); o.intra_op_num_threads = int(sys.argv[3]); o.inter_op_num_threads = 1
s = ort.InferenceSession(sys.argv[1], o, providers=["CPUExecutionProvider"])
x = np.load(sys.argv[2]); name = s.get_inputs()[0].name
for _ in range(2): s.run(None, {name: x})
t = []
for _ in range(int(sys.argv[4])):
    a = time.perf_counter(); s.run(None, {name: x}); t.append(time.perf_counter() - a)
print(statistics.median(t))
"""


def bench(name, make, shape, work, ort_py):
    row = {"model": name}
    d = os.path.join(work, name)
    os.makedirs(os.path.join(d, "in"), exist_ok=True)
    os.makedirs(os.path.join(d, "torch"), exist_ok=True)
    torch.manual_seed(0)
    model = make()
    # BatchNorm statistics from one batch of 8 random inputs (momentum 1): with the initial
    # statistics (mean 0, variance 1) activations grow or fade with depth in a random network.
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if bns:
        for m in bns:
            m.momentum = 1.0
        model.train()
        with torch.no_grad():
            model(torch.randn(8, *shape[1:]))
    model = model.eval()
    x = torch.randn(*shape)
    onnx_path = os.path.join(d, "model.onnx")
    try:
        torch.onnx.export(model, (x,), onnx_path, opset_version=17, input_names=["x"],
                          output_names=["y"])
    except Exception as e:  # noqa: BLE001
        row["import"] = f"export failed: {str(e)[:120]}"
        return row
    with torch.no_grad():
        y = model(x)
    np.save(os.path.join(d, "in", "x.npy"), x.numpy())
    np.save(os.path.join(d, "torch", "y.npy"), y.numpy())
    tap, w = os.path.join(d, "g.tap"), os.path.join(d, "in")
    code, out, err = sh([args.tapestry, "import", onnx_path, "-o", tap, "--weights", w, "--quiet"])
    if code != 0:
        _, _, cerr = sh([args.tapestry, "import", onnx_path, "--check"])
        blockers = [ln.strip() for ln in cerr.splitlines()[1:] if ln.strip()]
        row["import"] = f"FAIL: {first_line(err)}"
        row["blockers"] = blockers
        print(f"{name}: import FAILED: {first_line(err)}")
        for b in blockers[:8]:
            print(f"    {b}")
        return row
    row["import"] = first_line(out)
    print(f"{name}: {row['import']}")

    code, out, err = sh([args.tapestry, "verify", tap, "--inputs", w,
                         "--outputs", os.path.join(d, "torch")])
    row["matches"] = "PASS" if code == 0 else f"FAIL ({first_line(out + err)})"
    print(f"{name}: PyTorch's output: {first_line(out + err)}")

    metrics = os.path.join(d, "run.json")
    code, out, err = sh([args.tapestry, "run", tap, "--inputs", w, "--verify", "--quiet",
                         "--threads", str(args.threads), "--warmup", "1", "--repeat",
                         str(args.reps), "--metrics", metrics])
    row["run"] = "PASS" if code == 0 else f"FAIL ({first_line(out + err)})"
    if os.path.exists(metrics):
        row["tapestry_s"] = json.load(open(metrics))["wall_s"]
    print(f"{name}: run --verify: {row['run']}  wall {row.get('tapestry_s', float('nan')):.4f} s")

    plan = os.path.join(d, "plan.json")
    code, out, err = sh([args.tapestry, "optimize", tap, "--target", "h100x8", "--max-evals",
                         str(args.evals), "--seed", "1", "--quiet", "--plan-out", plan],
                        timeout=1800)
    if code != 0 or not os.path.exists(plan):
        row["optimize"] = f"FAIL ({first_line(err or out)})"
    else:
        code, out, err = sh([args.tapestry, "run", tap, "--inputs", w, "--plan", plan,
                             "--ignore-placement", "--verify", "--quiet"])
        row["optimize"] = "PASS" if code == 0 else f"FAIL ({first_line(out + err)})"
    print(f"{name}: optimize on h100x8, run the plan --verify: {row['optimize']}")

    with torch.no_grad():
        row["eager_s"] = timed(lambda: model(x), args.reps)
        try:
            traced = torch.jit.freeze(torch.jit.trace(model, (x,)))
            row["jit_s"] = timed(lambda: traced(x), args.reps)
        except Exception as e:  # noqa: BLE001
            print(f"{name}: jit.trace: {str(e)[:100]}")
    if ort_py:
        code, out, err = sh([ort_py, "-c", ORT_TIMER, onnx_path, os.path.join(w, "x.npy"),
                             str(args.threads), str(args.reps)])
        if code == 0:
            row["ort_s"] = float(out.strip())
        else:
            print(f"{name}: onnxruntime: {first_line(err)}")
    print(f"{name}: eager {row['eager_s']:.4f} s, jit {row.get('jit_s', float('nan')):.4f} s, "
          f"onnxruntime {row.get('ort_s', float('nan')):.4f} s")
    return row


def table(rows):
    head = ("| model | imports as exported | matches PyTorch (verify) | run --verify | "
            "h100x8 plan runs + verifies | Tapestry s | PyTorch eager s | jit s | "
            "onnxruntime s | Tapestry / eager |")
    lines = [head, "|" + "---|" * 10]
    fmt = lambda r, k: f"{r[k]:.4f}" if k in r else "—"  # noqa: E731
    for r in rows:
        imported = "yes" if not str(r.get("import", "")).startswith(("FAIL", "export")) else (
            f"no: {len(r.get('blockers', []))} blockers — " + "; ".join(r.get("blockers", [])[:2])
            if r.get("blockers") else f"no: {r.get('import')}")
        ratio = (f"{r['tapestry_s'] / r['eager_s']:.2f}×"
                 if "tapestry_s" in r and "eager_s" in r else "—")
        lines.append(f"| {r['model']} | {imported} | {r.get('matches', '—')} | {r.get('run', '—')} | "
                     f"{r.get('optimize', '—')} | {fmt(r, 'tapestry_s')} | {fmt(r, 'eager_s')} | "
                     f"{fmt(r, 'jit_s')} | {fmt(r, 'ort_s')} | {ratio} |")
    return "\n".join(lines)


def main():
    ort_py, why = ort_session() if args.ort else (None, "not asked (--ort)")
    if args.ort and not ort_py:
        print(f"onnxruntime unavailable: {why}")
    work = args.keep or tempfile.mkdtemp(prefix="onnx_models_")
    os.makedirs(work, exist_ok=True)
    print(f"onnx_models: {args.px} px, {args.threads} threads, {args.reps} reps, torch "
          f"{torch.__version__}, work in {work}")
    rows = [bench(name, make, shape, work, ort_py) for name, make, shape in models()]
    text = table(rows)
    print(text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text + "\n")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


main()
