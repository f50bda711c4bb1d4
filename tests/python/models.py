"""The examples built with the Python builder, parameterised by size (the tests build the real
sizes and the small stand-ins of tests/data/cli), and their NumPy twins for cross-checks."""

from __future__ import annotations

import math

import numpy as np

import tapestry
from tapestry import ops


def mlp(batch=4096, d_in=1024, hidden=4096, d_out=1024) -> tapestry.Graph:
    """examples/mlp.tap."""
    g = tapestry.Graph()
    X = g.input("X", "f32", [batch, d_in])
    W1 = g.input("W1", "f32", [hidden, d_in])
    b1 = g.input("b1", "f32", [hidden])
    W2 = g.input("W2", "f32", [d_out, hidden])
    b2 = g.input("b2", "f32", [d_out])
    g["H"] = ops.relu(ops.linear(X, W1, b1))
    g.output("Y", ops.linear(g["H"], W2, b2))
    return g


def mlp_numpy(x: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    h = np.maximum(x["X"] @ x["W1"].T + x["b1"], 0)
    return {"Y": h @ x["W2"].T + x["b2"]}


def linear_relu() -> tapestry.Graph:
    """examples/linear_relu.tap: X starts at (-40, 20)."""
    g = tapestry.Graph()
    X = g.input("X", "f32", [100, 12], start=[-40, 20])
    W = g.input("W", "f32", [32, 12])
    b = g.input("b", np.float32, [32])
    g.output("Y", ops.relu(ops.linear(X, W, b)))
    return g


def convnet(batch=8, size=32, hidden=(16, 32), classes=10) -> tapestry.Graph:
    """examples/convnet.tap."""
    c1, c2 = hidden
    g = tapestry.Graph()
    Img = g.input("Img", "f32", [batch, 3, size, size])
    K1 = g.input("K1", "f32", [c1, 3, 3, 3])
    K2 = g.input("K2", "f32", [c2, c1, 3, 3])
    features = c2 * (size // 2) ** 2
    Wh = g.input("Wh", "f32", [classes, features])
    bh = g.input("bh", "f32", [classes])
    g["C1"] = ops.relu(ops.conv2d(Img, K1, padding=1))
    g["C2"] = ops.relu(ops.conv2d(g["C1"], K2, stride=2, padding=1))
    g.output("Logits", ops.linear(ops.reshape(g["C2"], shape=[batch, features]), Wh, bh))
    return g


def transformer_block(b=4, s=128, d=512, heads=8, mlp_width=2048) -> tapestry.Graph:
    """examples/transformer_block.tap."""
    dh = d // heads
    g = tapestry.Graph()
    X = g.input("X", "f32", [b * s, d])
    w = {}
    for name, shape in [("Wq", [d, d]), ("bq", [d]), ("Wk", [d, d]), ("bk", [d]),
                        ("Wv", [d, d]), ("bv", [d]), ("Wo", [d, d]), ("bo", [d]),
                        ("W1", [mlp_width, d]), ("b1", [mlp_width]), ("W2", [d, mlp_width]),
                        ("b2", [d]), ("Scale", [1])]:
        w[name] = g.input(name, "f32", shape)

    def heads_of(W, bias):
        return ops.permute(ops.reshape(ops.linear(X, W, bias), shape=[b, s, heads, dh]),
                           perm=[0, 2, 1, 3])

    g["Q"] = heads_of(w["Wq"], w["bq"])
    g["K"] = heads_of(w["Wk"], w["bk"])
    g["V"] = heads_of(w["Wv"], w["bv"])
    g["Scores"] = ops.mul(g["Q"] @ ops.transpose(g["K"]), w["Scale"])
    g["P"] = ops.softmax(g["Scores"])
    g["Ctx"] = ops.matmul(g["P"], g["V"])
    g["Attn"] = ops.linear(ops.reshape(ops.permute(g["Ctx"], perm=[0, 2, 1, 3]), shape=[b * s, d]),
                           w["Wo"], w["bo"])
    g["R1"] = ops.add(X, g["Attn"])
    g["M"] = ops.linear(ops.gelu(ops.linear(g["R1"], w["W1"], w["b1"])), w["W2"], w["b2"])
    g.output("Y", ops.add(g["R1"], g["M"]))
    return g


_erf = np.vectorize(math.erf, otypes=[np.float64])


def transformer_block_numpy(x: dict[str, np.ndarray], b: int, s: int, heads: int):
    """The transformer block in float64 NumPy (its own implementation, not Tapestry's)."""
    f = {k: v.astype(np.float64) for k, v in x.items()}
    d = f["X"].shape[1]
    dh = d // heads

    def heads_of(W, bias):
        return (f["X"] @ W.T + bias).reshape(b, s, heads, dh).transpose(0, 2, 1, 3)

    q, k, v = heads_of(f["Wq"], f["bq"]), heads_of(f["Wk"], f["bk"]), heads_of(f["Wv"], f["bv"])
    scores = (q @ k.transpose(0, 1, 3, 2)) * f["Scale"]
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    ctx = (p @ v).transpose(0, 2, 1, 3).reshape(b * s, d)
    r1 = f["X"] + ctx @ f["Wo"].T + f["bo"]
    pre = r1 @ f["W1"].T + f["b1"]
    gelu = pre * 0.5 * (1 + _erf(pre / math.sqrt(2)))
    return {"Y": (r1 + gelu @ f["W2"].T + f["b2"]).astype(np.float32)}
