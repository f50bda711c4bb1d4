"""Graph.grad (docs/training.md) against PyTorch autograd: the gradients of examples/mlp.tap at
small sizes with a squared-error loss, in float64 (agreement to rounding) and float32, unsharded
and under a plan that splits the batch (data parallelism: the weight gradients' batch sum split in
two and combined), with --verify's oracle."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapestry
from tapestry import ops

torch = pytest.importorskip("torch")

SIZES = dict(batch=16, d_in=12, hidden=20, d_out=6)


def mlp_step(dtype: str) -> tuple[tapestry.Graph, list[str]]:
    """examples/mlp.tap, then L = Σ (Y − T)², and its gradients."""
    g = tapestry.Graph()
    X = g.input("X", dtype, [SIZES["batch"], SIZES["d_in"]])
    W1 = g.input("W1", dtype, [SIZES["hidden"], SIZES["d_in"]])
    b1 = g.input("b1", dtype, [SIZES["hidden"]])
    W2 = g.input("W2", dtype, [SIZES["d_out"], SIZES["hidden"]])
    b2 = g.input("b2", dtype, [SIZES["d_out"]])
    T = g.input("T", dtype, [SIZES["batch"], SIZES["d_out"]])
    g["H"] = ops.relu(ops.linear(X, W1, b1))
    g["Y"] = ops.linear(g["H"], W2, b2)
    E = ops.sub(g["Y"], T)
    g["L"] = ops.sum(ops.sum(ops.mul(E, E)))
    grads = g.grad(g["L"], [W1, b1, W2, b2, X])
    g.output(g["L"])
    for d in grads:
        g.output(d)
    return g, [d.name for d in grads]


def inputs(dtype, seed=5) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    shapes = {
        "X": (SIZES["batch"], SIZES["d_in"]),
        "W1": (SIZES["hidden"], SIZES["d_in"]),
        "b1": (SIZES["hidden"],),
        "W2": (SIZES["d_out"], SIZES["hidden"]),
        "b2": (SIZES["d_out"],),
        "T": (SIZES["batch"], SIZES["d_out"]),
    }
    return {k: rng.uniform(-1, 1, s).astype(dtype) for k, s in shapes.items()}


def torch_grads(x: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    t = {k: torch.tensor(v, requires_grad=k != "T") for k, v in x.items()}
    h = torch.relu(torch.nn.functional.linear(t["X"], t["W1"], t["b1"]))
    y = torch.nn.functional.linear(h, t["W2"], t["b2"])
    loss = ((y - t["T"]) ** 2).sum()
    loss.backward()
    out = {"d" + k: t[k].grad.numpy() for k in ("W1", "b1", "W2", "b2", "X")}
    out["L"] = loss.detach().numpy()
    return out


def test_mlp_gradients_equal_pytorch_in_float64():
    g, names = mlp_step("f64")
    assert names == ["dW1", "db1", "dW2", "db2", "dX"]
    x = inputs(np.float64)
    got = g.run(x, kernels="reference")
    want = torch_grads(x)
    for name in ["L", *names]:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-12, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("plan", [None, {"ops": {"H/linear": {"split": {"batch": 2}},
                                                 "dW1": {"split": {"batch": 2}}}}])
def test_mlp_gradients_in_float32_sharded_and_verified(plan):
    g, names = mlp_step("f32")
    x = inputs(np.float32)
    got = g.run(x, plan=plan, verify=True)
    assert g.last_run.verify["pass"] is True, g.last_run.verify_text
    want = torch_grads({k: v.astype(np.float64) for k, v in x.items()})
    for name in ["L", *names]:
        np.testing.assert_allclose(got[name], want[name], rtol=2e-4, atol=2e-4, err_msg=name)


def test_an_unused_input_gets_zeros_and_a_warning():
    g = tapestry.Graph()
    X = g.input("X", "f64", [3])
    U = g.input("U", "f64", [2])
    L = g.assign("L", ops.sum(ops.mul(X, X)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dX, dU = g.grad(L, [X, U])
    assert any("L does not depend on U" in str(w.message) for w in caught)
    g.output(dX)
    g.output(dU)
    out = g.run({"X": np.array([1.0, -2.0, 0.5]), "U": np.zeros(2)})
    np.testing.assert_array_equal(out["dX"], [2.0, -4.0, 1.0])
    np.testing.assert_array_equal(out["dU"], [0.0, 0.0])


def test_grad_errors_are_graph_errors():
    g = tapestry.Graph()
    X = g.input("X", "f32", [4, 5])
    Y = g.assign("Y", ops.max(X, dim=1))
    V = g.assign("V", ops.softmax_grad(ops.softmax(X), X))  # a second derivative: no VJP
    with pytest.raises(tapestry.GraphError, match=r"operation V \(kernel softmax_grad\) has no VJP"):
        g.grad(g.assign("L", ops.sum(ops.sum(V))), [X])
    with pytest.raises(tapestry.GraphError, match="not a scalar"):
        g.grad(Y, [X])


@pytest.mark.parametrize("loss", ["cross_entropy", "mse"])
def test_loss_gradients_equal_pytorch_in_float64(loss):
    """The losses' vjp: sections (cross_entropy_grad, mse_grad) through a linear layer: the
    gradients of the weights, the bias and the input against autograd's, and (mse) of the
    target too. Fails when a loss's vjp is dropped or its scale (1/n) is wrong."""
    n, d, c = 9, 7, 4
    rng = np.random.default_rng(11)
    x = {"X": rng.uniform(-2, 2, (n, d)), "W": rng.uniform(-1, 1, (c, d)),
         "b": rng.uniform(-1, 1, (c,))}
    g = tapestry.Graph()
    X, W, b = (g.input(k, "f64", list(v.shape)) for k, v in x.items())
    if loss == "cross_entropy":
        x["Y"] = rng.integers(0, c, n).astype(np.int64)
        target = g.input("Y", "i64", [n])
    else:
        x["Y"] = rng.uniform(-1, 1, (n, c))
        target = g.input("Y", "f64", [n, c])
    g["Z"] = ops.linear(X, W, b)
    g["L"] = getattr(ops, loss)(g["Z"], target)
    wrt = [W, b, X] + ([target] if loss == "mse" else [])
    grads = g.grad(g["L"], wrt)
    g.output(g["L"])
    for d in grads:
        g.output(d)
    got = g.run(x, kernels="reference")

    t = {k: torch.tensor(v, requires_grad=(k != "Y" or loss == "mse")) for k, v in x.items()}
    z = torch.nn.functional.linear(t["X"], t["W"], t["b"])
    want = (torch.nn.functional.cross_entropy(z, t["Y"]) if loss == "cross_entropy"
            else torch.nn.functional.mse_loss(z, t["Y"]))
    want.backward()
    np.testing.assert_allclose(got["L"], want.detach().numpy(), rtol=1e-12)
    for k in ("W", "b", "X") + (("Y",) if loss == "mse" else ()):
        np.testing.assert_allclose(got["d" + k], t[k].grad.numpy(), rtol=1e-12, atol=1e-14,
                                   err_msg=k)


@pytest.mark.parametrize("kernel,decl,call,want,splits", [
    ("unslice", [4, 3, 5], "unslice(X, dim=1, start=2, size=7)",
     lambda x: np.pad(x, ((0, 0), (2, 2), (0, 0))), [{"n": 2}, {"pre": 2, "n": 3, "post": 2}]),
    ("unpad", [2, 3, 7, 9], "unpad(X, padding=2)", lambda x: x[:, :, 2:5, 2:7],
     [{"lead0": 2, "h": 2}, {"lead1": 3, "w": 2}]),
    ("mul_scalar", [6, 5], "mul_scalar(X, factor=1.5, divisor=7)",
     lambda x: x * np.float32(1.5 / 7), [{"d0": 2, "d1": 2}]),
])
def test_fast_adjoint_kernels_agree_sharded(kernel, decl, call, want, splits):
    """The fast bodies of unslice (its dim split: boxes that start past the slice), unpad and
    mul_scalar, unsharded and under plans, against NumPy, each run verified, none a fallback."""
    x = np.random.default_rng(3).uniform(-1, 1, decl).astype(np.float32)
    g = tapestry.parse(f"X: f32[{', '.join(map(str, decl))}]\nR = {call}\noutput R\n")
    for split in [None, *splits]:
        plan = {"ops": {"R": {"split": split}}} if split else None
        got = g.run({"X": x}, plan=plan, kernels="fast", verify=True)["R"]
        assert g.last_run.verify["pass"] is True, g.last_run.verify_text
        np.testing.assert_array_equal(got, want(x), err_msg=str(split))
        ops = g.last_run.metrics["operations"]
        assert sum(o["fallbacks"] for o in ops) == 0, (split, ops)
