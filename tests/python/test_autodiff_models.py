"""Gradients of examples/convnet.tap and examples/transformer_block.tap (issue 28, item 6)
against PyTorch autograd. Each example's text is read and shrunk (every size substitution must
hit, so the test follows the example), a loss is appended (cross_entropy on the convnet's
logits, mse on the transformer's output) and `grad` asks for every input's gradient. The
convnet's gradients go through conv2d with padding and stride (conv2d_grad_input,
conv2d_grad_weight, pad's unpad), relu, reshape and linear; the transformer's through linear,
reshape, permute, matmul, transpose, mul (broadcast Scale: sum_to), softmax, gelu and add.

float64 with the reference kernels: within 1e-10 relative of autograd's float64. float32 with
the fast kernels, unsharded and under a plan that splits the batch of the forward operations and
of the weight gradients (data parallelism: Partial(sum) weight gradients), run with verify=True:
the verifier passes and every gradient is within 2e-4 (relative to its largest cell) of autograd.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

import tapestry

torch = pytest.importorskip("torch")
F = torch.nn.functional

ROOT = Path(os.environ.get("TAPESTRY_ROOT", Path(__file__).resolve().parents[2]))
TYPES = {np.float32: "f32", np.float64: "f64"}


def shrink(example: str, substitutions: list[tuple[str, str]], dtype: str) -> str:
    text = (ROOT / "examples" / example).read_text()
    for old, new in substitutions:
        assert old in text, f"{example} no longer has {old!r}: update the test's sizes"
        text = text.replace(old, new)
    text = re.sub(r"^output .*$", "", text, flags=re.M)
    return text.replace("f32[", f"{dtype}[")


def grad_tail(loss: str, wrt: list[str]) -> str:
    names = ", ".join("d" + w for w in wrt)
    lines = [f"L = {loss}", f"{names} = grad(L, {', '.join(wrt)})", "output L"]
    lines += [f"output d{w}" for w in wrt]
    return "\n".join(lines) + "\n"


# ---- convnet ------------------------------------------------------------------------------------
# Img [2, 3, 8, 8] -> C1 [2, 4, 8, 8] -> C2 (stride 2) [2, 6, 4, 4] -> 96 features -> 10 classes.
CONVNET_SIZES = [
    ("f32[8, 3, 32, 32]", "f32[2, 3, 8, 8]"),
    ("f32[16, 3, 3, 3]", "f32[4, 3, 3, 3]"),
    ("f32[32, 16, 3, 3]", "f32[6, 4, 3, 3]"),
    ("f32[10, 8192]", "f32[10, 96]"),
    ("shape=[8, 8192]", "shape=[2, 96]"),
]
CONVNET_WRT = ["Img", "K1", "K2", "Wh", "bh"]


def convnet(dtype: str) -> tapestry.Graph:
    text = shrink("convnet.tap", CONVNET_SIZES, dtype) + "Labels: i64[2]\n"
    return tapestry.parse(text + grad_tail("cross_entropy(Logits, Labels)", CONVNET_WRT))


def convnet_inputs(np_dtype, seed=3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    shapes = {"Img": (2, 3, 8, 8), "K1": (4, 3, 3, 3), "K2": (6, 4, 3, 3), "Wh": (10, 96),
              "bh": (10,)}
    x = {k: rng.uniform(-1, 1, s).astype(np_dtype) for k, s in shapes.items()}
    x["Labels"] = np.array([3, 7], dtype=np.int64)
    return x


def convnet_torch(x: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    t = {k: torch.tensor(v.astype(np.float64), requires_grad=True) for k, v in x.items()
         if k != "Labels"}
    c1 = torch.relu(F.conv2d(t["Img"], t["K1"], padding=1))
    c2 = torch.relu(F.conv2d(c1, t["K2"], stride=2, padding=1))
    logits = F.linear(c2.reshape(2, 96), t["Wh"], t["bh"])
    loss = F.cross_entropy(logits, torch.from_numpy(x["Labels"]))
    loss.backward()
    out = {"d" + k: t[k].grad.numpy() for k in CONVNET_WRT}
    out["L"] = loss.detach().numpy()
    return out


# ---- transformer block --------------------------------------------------------------------------
# B = 2 sequences of S = 3 tokens, D = 8 = H·Dh with H = 2 heads of Dh = 4, MLP width 12.
TRANSFORMER_SIZES = [
    ("X:   f32[512, 512]", "X:   f32[6, 8]"),
    ("f32[512, 512]", "f32[8, 8]"),
    ("f32[2048, 512]", "f32[12, 8]"),
    ("f32[512, 2048]", "f32[8, 12]"),
    ("f32[2048]", "f32[12]"),
    ("f32[512]", "f32[8]"),
    ("shape=[4, 128, 8, 64]", "shape=[2, 3, 2, 4]"),
    ("shape=[512, 512]", "shape=[6, 8]"),
]
TRANSFORMER_WRT = ["X", "Wq", "bq", "Wk", "bk", "Wv", "bv", "Wo", "bo", "W1", "b1", "W2", "b2",
                   "Scale"]


def transformer(dtype: str) -> tapestry.Graph:
    text = shrink("transformer_block.tap", TRANSFORMER_SIZES, dtype) + f"T: {dtype}[6, 8]\n"
    return tapestry.parse(text + grad_tail("mse(Y, T)", TRANSFORMER_WRT))


def transformer_inputs(np_dtype, seed=4) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    shapes = {"X": (6, 8), "T": (6, 8), "W1": (12, 8), "b1": (12,), "W2": (8, 12), "b2": (8,)}
    for w in "qkvo":
        shapes[f"W{w}"] = (8, 8)
        shapes[f"b{w}"] = (8,)
    x = {k: rng.uniform(-1, 1, s).astype(np_dtype) for k, s in shapes.items()}
    x["Scale"] = np.array([0.5], dtype=np_dtype)  # 1/sqrt(Dh)
    return x


def transformer_torch(x: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    t = {k: torch.tensor(v.astype(np.float64), requires_grad=k != "T") for k, v in x.items()}

    def heads(w: str):
        return F.linear(t["X"], t[f"W{w}"], t[f"b{w}"]).reshape(2, 3, 2, 4).permute(0, 2, 1, 3)

    q, k, v = heads("q"), heads("k"), heads("v")
    p = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * t["Scale"], dim=-1)
    ctx = torch.matmul(p, v).permute(0, 2, 1, 3).reshape(6, 8)
    r1 = t["X"] + F.linear(ctx, t["Wo"], t["bo"])
    y = r1 + F.linear(F.gelu(F.linear(r1, t["W1"], t["b1"])), t["W2"], t["b2"])
    loss = F.mse_loss(y, t["T"])
    loss.backward()
    out = {"d" + k: t[k].grad.numpy() for k in TRANSFORMER_WRT}
    out["L"] = loss.detach().numpy()
    return out


MODELS = {
    "convnet": (convnet, convnet_inputs, convnet_torch, CONVNET_WRT),
    "transformer": (transformer, transformer_inputs, transformer_torch, TRANSFORMER_WRT),
}

# Gradients that are zero in exact arithmetic: the key bias bk adds q·bk to every score of a
# query's row, which softmax ignores. Both sides hold rounding noise there; it must stay noise
# (within `noise` × the model's largest gradient cell).
ZERO = {"convnet": set(), "transformer": {"dbk"}}


def close(got: np.ndarray, want: np.ndarray, rtol: float, name: str) -> None:
    assert got.shape == want.shape, name
    scale = max(float(np.abs(want).max()), 1e-30)
    err = float(np.abs(got.astype(np.float64) - want).max())
    assert err <= rtol * scale, f"{name}: max |Δ| {err:.3g} > {rtol} × {scale:.3g}"


def check(model: str, got: dict, want: dict, wrt: list[str], rtol: float, noise: float) -> None:
    """Every gradient within rtol of its largest cell; the exact zeros (ZERO) within noise of
    the largest gradient cell of the model, and the others not vacuous (nonzero)."""
    largest = max(float(np.abs(want["d" + w]).max()) for w in wrt)
    for name in ["L"] + ["d" + w for w in wrt]:
        if name in ZERO[model]:
            assert np.abs(got[name]).max() <= noise * largest, name
            assert np.abs(want[name]).max() <= noise * largest, name
            continue
        close(got[name], want[name], rtol, name)
        assert np.abs(want[name]).max() > noise * largest, f"{name} is ~0: the check is vacuous"


@pytest.mark.parametrize("model", sorted(MODELS))
def test_gradients_equal_pytorch_in_float64(model):
    build, make_inputs, oracle, wrt = MODELS[model]
    g = build("f64")
    x = make_inputs(np.float64)
    got = g.run(x, kernels="reference")
    check(model, got, oracle(x), wrt, rtol=1e-10, noise=1e-12)


# The batch split of the forward operations and of the weight gradients (their batch is a sum
# reduction: each half a Partial(sum), combined by a reduce).
PLANS = {
    "convnet": {"C1/conv2d": {"n": 2}, "C2/conv2d": {"n": 2}, "dK1": {"n": 2},
                "dK2": {"n": 2}},
    "transformer": {"Q/linear": {"batch": 2}, "M/linear": {"batch": 2}, "dW1": {"batch": 2},
                    "dWq": {"batch": 2}},
}


@pytest.mark.parametrize("sharded", [False, True])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_gradients_in_float32_fast_sharded_and_verified(model, sharded):
    build, make_inputs, oracle, wrt = MODELS[model]
    g = build("f32")
    x = make_inputs(np.float32)
    plan = {"ops": {op: {"split": s} for op, s in PLANS[model].items()}} if sharded else None
    got = g.run(x, plan=plan, kernels="fast", verify=True)
    assert g.last_run.verify["pass"] is True, g.last_run.verify_text
    check(model, got, oracle(x), wrt, rtol=2e-4, noise=1e-5)
