"""Graph.train and tapestry.train (docs/training.md, "The training loop"): a linear regression
with SGD, built in Python with Graph.update, trained by the loop and checked against the same
steps done by hand with Graph.run (bitwise, reference kernels), against NumPy float64 SGD on the
same batches (float32 rounding), resumed (start_step) equal to uninterrupted, fed from
directories, with Adam's step input; and the bad inputs it refuses."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tapestry
from tapestry import ops

BATCH, FEATURES, ROWS = 8, 4, 20


def step_graph(optimizer: str = "sgd") -> tapestry.Graph:
    g = tapestry.Graph()
    X = g.input("X", "f32", [BATCH, FEATURES])
    T = g.input("T", "f32", [BATCH, 1])
    W = g.input("W", "f32", [1, FEATURES])
    b = g.input("b", "f32", [1])
    g["L"] = ops.mse(ops.linear(X, W, b), T)
    dW, db = g.grad(g["L"], [W, b])
    g.output(g["L"])
    if optimizer == "sgd":
        g["Wn"] = ops.sgd(W, dW, lr=0.1)
        g["bn"] = ops.sgd(b, db, lr=0.1)
        g.update(W, g["Wn"])
        g.update(b, g["bn"])
    else:
        M = g.input("M", "f32", [1, FEATURES])
        V = g.input("V", "f32", [1, FEATURES])
        step = g.input("step", "i64", [])
        Wn, Mn, Vn = ops.adam(W, dW, M, V, step, lr=0.05)
        g["bn"] = ops.sgd(b, db, lr=0.1)
        g.update(W, Wn)
        g.update(b, g["bn"])
        g.update(M, Mn)
        g.update(V, Vn)
    return g


def data() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    X = rng.standard_normal((ROWS, FEATURES)).astype(np.float32)
    T = (X @ np.array([[1.5], [-2.0], [0.5], [3.0]], np.float32) + 0.25).astype(np.float32)
    return {"X": X, "T": T}


def init() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(4)
    return {"W": rng.standard_normal((1, FEATURES)).astype(np.float32),
            "b": np.zeros((1,), np.float32)}


def in_order_rows(step: int) -> slice:  # 0-based step; 2 batches an epoch, 4 rows dropped
    first = (step % (ROWS // BATCH)) * BATCH
    return slice(first, first + BATCH)


def test_train_equals_the_steps_by_hand_bitwise():
    g, d = step_graph(), data()
    losses, state = g.train(5, d, init(), kernels="reference", shuffle=False)
    w = init()
    for s in range(5):
        rows = in_order_rows(s)
        out = g.run({"X": d["X"][rows], "T": d["T"][rows], **w}, kernels="reference")
        assert losses[s] == float(out["L"])
        w = {"W": out["Wn"], "b": out["bn"]}
    assert np.array_equal(state["W"], w["W"]) and np.array_equal(state["b"], w["b"])
    assert losses.dtype == np.float64 and losses.shape == (5,)


def test_train_matches_numpy_sgd():
    g, d = step_graph(), data()
    losses, state = g.train(12, d, init(), shuffle=False)
    W = init()["W"].astype(np.float64)
    b = np.zeros(1)
    expected = []
    for s in range(12):
        rows = in_order_rows(s)
        X, T = d["X"][rows].astype(np.float64), d["T"][rows].astype(np.float64)
        E = X @ W.T + b - T
        expected.append(float(np.mean(E * E)))
        W = W - 0.1 * (2 / E.size) * (E.T @ X)
        b = b - 0.1 * (2 / E.size) * E.sum(axis=0)
    np.testing.assert_allclose(losses, expected, rtol=1e-4)
    np.testing.assert_allclose(state["W"], W, rtol=1e-4, atol=1e-5)
    assert losses[-1] < losses[0] / 4


def test_resume_equals_uninterrupted_and_the_seed_decides_the_batches():
    g, d = step_graph(), data()
    full, end = g.train(6, d, init(), seed=9, kernels="reference")
    first, mid = g.train(3, d, init(), seed=9, kernels="reference")
    second, end2 = g.train(3, d, mid, seed=9, start_step=3, kernels="reference")
    assert list(full) == list(first) + list(second)
    assert np.array_equal(end["W"], end2["W"])
    other, _ = g.train(6, d, init(), seed=10, kernels="reference")
    ordered, _ = g.train(6, d, init(), shuffle=False, kernels="reference")
    assert list(other) != list(full) and list(ordered) != list(full)


def test_module_train_reads_directories(tmp_path):
    g, d = step_graph(), data()
    (tmp_path / "data").mkdir()
    (tmp_path / "state").mkdir()
    for name, a in d.items():
        np.save(tmp_path / "data" / f"{name}.npy", a)
    for name, a in init().items():
        np.save(tmp_path / "state" / f"{name}.npy", a)
    (tmp_path / "state" / "train.json").write_text(
        json.dumps({"step": 3, "seed": 9, "shuffle": True}))
    losses, _ = tapestry.train(g, 3, tmp_path / "data", tmp_path / "state", kernels="reference")
    expected, _ = g.train(3, d, init(), seed=9, start_step=3, kernels="reference")
    assert list(losses) == list(expected)


def test_adam_gets_the_step_number():
    g, d = step_graph("adam"), data()
    adam = [t.name for t in g.outputs if "m_next" in t.name][0].split(".")[0]
    names = {"W": adam + ".result", "b": "bn", "M": adam + ".m_next", "V": adam + ".v_next"}
    zeros = np.zeros((1, FEATURES), np.float32)
    state = {**init(), "M": zeros, "V": zeros}
    losses, after = g.train(4, d, state, shuffle=False, kernels="reference")
    s = dict(state)
    for k in range(4):  # by hand: the step input is 1, 2, 3, 4
        rows = in_order_rows(k)
        out = g.run({"X": d["X"][rows], "T": d["T"][rows], "step": np.array(k + 1), **s},
                    kernels="reference")
        assert losses[k] == float(out["L"])
        s = {state: out[next_] for state, next_ in names.items()}
    for name in s:
        assert np.array_equal(after[name], s[name]), name
    # Fed a constant step instead, the bias correction differs: the step input matters.
    wrong = dict(state)
    for k in range(4):
        rows = in_order_rows(k)
        out = g.run({"X": d["X"][rows], "T": d["T"][rows], "step": np.array(1), **wrong},
                    kernels="reference")
        wrong = {state: out[next_] for state, next_ in names.items()}
    assert not np.array_equal(after["W"], wrong["W"])


def test_bad_inputs():
    g, d = step_graph(), data()
    with pytest.raises(tapestry.InputError, match="no array for input T"):
        g.train(1, {"X": d["X"]}, init())
    with pytest.raises(tapestry.InputError, match="different lengths"):
        g.train(1, {"X": d["X"], "T": d["T"][:12]}, init())
    with pytest.raises(tapestry.InputError, match="no array for state input b"):
        g.train(1, d, {"W": init()["W"]})
    with pytest.raises(tapestry.InputError, match="input 'W'"):
        g.train(1, d, {"W": np.zeros((4, 1), np.float32), "b": init()["b"]})
    with pytest.raises(tapestry.InputError, match="X is computed by|is computed by operation"):
        g.train(1, d, init(), updates={"L": "Wn"})
    h = tapestry.Graph()
    W = h.input("W", "f32", [4])
    with pytest.raises(tapestry.GraphError, match="is computed by operation"):
        h.update(ops.relu(W), W)
