"""The training kernels (kernels/training.yaml) against PyTorch float64: softmax, conv2d, max and
pooling gradients, the losses and their gradients, and one step of torch.optim's SGD, SGD with
momentum, Adam and AdamW — each with the reference and the fast kernels, on random shapes and
params, and sharded along every dim its index splits (the reductions included: the batch of
conv2d_grad_weight is data parallelism's Partial(sum)) under run(verify=True)."""

from __future__ import annotations

import numpy as np
import pytest

import tapestry

torch = pytest.importorskip("torch")
F = torch.nn.functional

KERNELS = ["reference", "fast"]
F32_RTOL = 2e-5  # float32 results against float64 oracles, relative to the oracle's scale


def close(got: np.ndarray, want, rtol: float = F32_RTOL) -> None:
    want = np.asarray(want.detach().numpy() if hasattr(want, "detach") else want, np.float64)
    assert got.shape == want.shape
    scale = max(np.abs(want).max(), 1e-30)
    err = np.abs(got.astype(np.float64) - want).max()
    assert err <= rtol * scale, f"max |Δ| {err} > {rtol} × {scale}"


def f32(rng, *shape) -> np.ndarray:
    return rng.uniform(-1, 1, size=shape).astype(np.float32)


def t64(a: np.ndarray):
    return torch.from_numpy(a.astype(np.float64))


def tap(decls: dict[str, np.ndarray], body: str) -> tapestry.Graph:
    types = {np.float32: "f32", np.float64: "f64", np.int32: "i32", np.int64: "i64"}
    lines = [f"{n}: {types[a.dtype.type]}[{', '.join(map(str, a.shape))}]" for n, a in decls.items()]
    return tapestry.parse("\n".join(lines) + "\n" + body + "\noutput R\n")


def run_all(g: tapestry.Graph, inputs: dict[str, np.ndarray], plans=()) -> list[np.ndarray]:
    """R from both kernel sets, unsharded and under each plan, each run verified (--verify: the
    float64 oracle's bars; a sharded run against the unsharded one); every result is returned
    for the caller's oracle."""
    results = []
    for kernels in KERNELS:
        results.append(g.run(inputs, kernels=kernels, verify=True)["R"])
        for plan in plans:
            results.append(g.run(inputs, plan={"ops": {"R": {"split": plan}}}, kernels=kernels,
                                 verify=True)["R"])
    return results


# ---- softmax_grad ------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_softmax_grad_is_torchs_softmax_backward(seed):
    rng = np.random.default_rng(seed)
    shape = (int(rng.integers(2, 7)), int(rng.integers(2, 5)), int(rng.integers(2, 40)))
    y = torch.softmax(t64(f32(rng, *shape) * 4), -1).numpy().astype(np.float32)
    d = f32(rng, *shape)
    want = torch._softmax_backward_data(t64(d), t64(y), -1, torch.float64)
    g = tap({"Y": y, "D": d}, "R = softmax_grad(Y, D)")
    for got in run_all(g, {"Y": y, "D": d}, plans=[{"batch0": 2}, {"batch0": 2, "batch1": 2}]):
        close(got, want)


# ---- conv2d gradients --------------------------------------------------------------------------
CONV_CASES = [  # n, c, o, ih, iw, kh, kw, stride
    (2, 3, 4, 7, 6, 3, 3, 1),
    (3, 2, 5, 9, 8, 3, 2, 2),   # (ih - kh) % stride != 0: the last row is no window's
    (2, 4, 3, 6, 6, 1, 1, 1),
    (1, 16, 16, 10, 10, 3, 3, 1),  # big enough for oneDNN's kernels
    (4, 17, 18, 9, 11, 3, 3, 2),
    (2, 3, 2, 5, 5, 5, 5, 3),  # the filter covers the image
    (2, 16, 16, 10, 11, 3, 3, 2),  # a row no window reads: oneDNN's negative right padding
]


def paths(g: tapestry.Graph) -> dict[str, dict[str, int]]:
    """The kernel paths of the last run, per operation."""
    return {op["operation"]: op["paths"] for op in g.last_run.metrics["operations"]}


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_grad_input_is_torchs(case):
    n, c, o, ih, iw, kh, kw, s = case
    rng = np.random.default_rng(sum(case))
    x, w = f32(rng, n, c, ih, iw), f32(rng, o, c, kh, kw)
    oh, ow = (ih - kh) // s + 1, (iw - kw) // s + 1
    d = f32(rng, n, o, oh, ow)
    want = torch.nn.grad.conv2d_input(x.shape, t64(w), t64(d), stride=s)
    g = tap({"X": x, "W": w, "D": d}, f"R = conv2d_grad_input(X, W, D, stride={s})")
    plans = [{"n": min(n, 2)}, {"c": 2}, {"n": min(n, 2), "c": 2}]
    for got in run_all(g, {"X": x, "W": w, "D": d}, plans):
        close(got, want)
    g.run({"X": x, "W": w, "D": d}, kernels="fast")
    assert paths(g)["R"] == {"onednn": 1}  # oneDNN's backward-data primitive
    g64 = tap({"X": x.astype(np.float64), "W": w.astype(np.float64), "D": d.astype(np.float64)},
              f"R = conv2d_grad_input(X, W, D, stride={s})")
    got = g64.run({"X": x.astype(np.float64), "W": w.astype(np.float64),
                   "D": d.astype(np.float64)}, kernels="fast", verify=True)["R"]
    assert paths(g64)["R"] == {"vectorised": 1}  # float64: the loops
    close(got, want, rtol=1e-12)


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_grad_weight_is_torchs(case):
    n, c, o, ih, iw, kh, kw, s = case
    rng = np.random.default_rng(100 + sum(case))
    x = f32(rng, n, c, ih, iw)
    oh, ow = (ih - kh) // s + 1, (iw - kw) // s + 1
    d = f32(rng, n, o, oh, ow)
    want = torch.nn.grad.conv2d_weight(t64(x), (o, c, kh, kw), t64(d), stride=s)
    g = tap({"X": x, "D": d}, f"R = conv2d_grad_weight(X, D, kh={kh}, kw={kw}, stride={s})")
    # n is the sum reduction: data parallelism's weight gradient.
    plans = [{"o": 2}, {"n": min(n, 2)}, {"o": 2, "n": min(n, 2)}, {"c": 2, "i": min(kh, 2)}]
    for got in run_all(g, {"X": x, "D": d}, plans):
        close(got, want)
    g.run({"X": x, "D": d}, kernels="fast")
    assert paths(g)["R"] == {"onednn": 1}  # oneDNN's backward-weights primitive
    g.run({"X": x, "D": d}, kernels="fast", plan={"ops": {"R": {"split": {"n": min(n, 2)}}}})
    ops = [o for o in g.last_run.metrics["operations"] if o["kernel"] == "conv2d_grad_weight"]
    assert sum(o["applications"] for o in ops) == min(n, 2)  # a block of the batch sum each…
    assert all(o["paths"] == {"onednn": o["applications"]} for o in ops)  # …through oneDNN
    g64 = tap({"X": x.astype(np.float64), "D": d.astype(np.float64)},
              f"R = conv2d_grad_weight(X, D, kh={kh}, kw={kw}, stride={s})")
    got = g64.run({"X": x.astype(np.float64), "D": d.astype(np.float64)}, kernels="fast",
                  verify=True)["R"]
    assert paths(g64)["R"] == {"vectorised": 1}  # float64: the loops
    close(got, want, rtol=1e-12)


def test_conv2d_gradients_take_the_range_of_a_padded_input():
    # conv2d(x, w, padding=1) is conv2d(pad(x), w): the input gradient is the padded tensor's,
    # starting at (0, 0, -1, -1) like it.
    rng = np.random.default_rng(7)
    x, w = f32(rng, 2, 3, 5, 5), f32(rng, 4, 3, 3, 3)
    d = f32(rng, 2, 4, 5, 5)
    g = tapestry.parse("X: f32[2, 3, 5, 5]\nW: f32[4, 3, 3, 3]\nD: f32[2, 4, 5, 5]\n"
                       "P = pad(X, padding=1)\nR = conv2d_grad_input(P, W, D)\noutput R\n")
    assert g["R"].range == g["P"].range
    want = torch.nn.grad.conv2d_input((2, 3, 7, 7), t64(w), t64(d))
    for kernels in KERNELS:
        close(g.run({"X": x, "W": w, "D": d}, kernels=kernels)["R"], want)


def test_conv2d_grad_input_rejects_a_d_result_of_another_conv():
    with pytest.raises(tapestry.GraphError, match="is not the result of a conv2d"):
        tapestry.parse("X: f32[1, 2, 6, 6]\nW: f32[3, 2, 3, 3]\nD: f32[1, 3, 3, 3]\n"
                       "R = conv2d_grad_input(X, W, D)\noutput R\n")


# ---- max_grad and the pooling gradients --------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_max_grad_routes_to_the_first_maximum(dim):
    rng = np.random.default_rng(11 + dim)
    x = rng.integers(-3, 3, size=(4, 5, 6)).astype(np.float32)  # many ties
    y = x.max(axis=dim)
    d = f32(rng, *y.shape)
    first = np.expand_dims(np.argmax(x, axis=dim), dim)  # NumPy: the first occurrence
    want = np.zeros(x.shape)
    np.put_along_axis(want, first, np.expand_dims(d.astype(np.float64), dim), axis=dim)
    g = tap({"X": x, "Y": y, "D": d}, f"R = max_grad(X, Y, D, dim={dim})")
    axis = dim % 3
    plans = [{"pre0" if axis == 2 else "post0" if axis == 0 else "pre": 2}]
    for got in run_all(g, {"X": x, "Y": y, "D": d}, plans):
        close(got, want, rtol=0)
    # PyTorch's autograd routes the same way where the maximum is unique.
    xt = torch.from_numpy(rng.permutation(x.size).reshape(x.shape).astype(np.float64))
    xt.requires_grad_(True)
    yt = xt.max(dim=dim).values
    yt.backward(t64(d))
    g2 = {"X": xt.detach().numpy().astype(np.float32), "Y": yt.detach().numpy().astype(np.float32),
          "D": d}
    for kernels in KERNELS:
        close(g.run(g2, kernels=kernels)["R"], xt.grad, rtol=0)


POOL_CASES = [(2, 3, 8, 8, 2, 2), (2, 2, 9, 7, 3, 2), (2, 3, 7, 7, 3, 1), (3, 2, 6, 6, 3, 3)]


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("case", POOL_CASES)
def test_pool_grads_are_torchs(kind, case):
    n, c, ih, iw, k, s = case
    rng = np.random.default_rng(sum(case))
    x = f32(rng, n, c, ih, iw)
    xt = t64(x).requires_grad_(True)
    yt = (F.max_pool2d if kind == "max" else F.avg_pool2d)(xt, k, s)
    d = f32(rng, *yt.shape)
    yt.backward(t64(d))
    g = tap({"X": x, "D": d}, f"R = {kind}_pool2d_grad(X, D, kernel={k}, stride={s})")
    plans = [{"n": 2}, {"c": 2}, {"oh": 2}, {"n": 2, "ow": 2}]
    for got in run_all(g, {"X": x, "D": d}, plans):
        close(got, xt.grad)


# ---- losses ------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [1, 2])
def test_mse_and_its_gradient_are_torchs(seed):
    rng = np.random.default_rng(seed)
    shape = (int(rng.integers(1, 9)), int(rng.integers(1, 12)))
    p, t = f32(rng, *shape), f32(rng, *shape)
    dy = np.array(rng.uniform(0.5, 2), dtype=np.float32)
    pt = t64(p).requires_grad_(True)
    loss = F.mse_loss(pt, t64(t))
    (loss * float(dy)).backward()
    g = tap({"P": p, "T": t}, "R = mse(P, T)")
    for got in run_all(g, {"P": p, "T": t}):
        close(got, loss)
    g = tap({"P": p, "T": t, "D": dy}, "R = mse_grad(P, T, D)")
    for got in run_all(g, {"P": p, "T": t, "D": dy}):
        close(got, pt.grad)


@pytest.mark.parametrize("label_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("seed", [1, 2])
def test_cross_entropy_and_its_gradient_are_torchs(label_dtype, seed):
    rng = np.random.default_rng(seed)
    n, c = int(rng.integers(1, 17)), int(rng.integers(2, 11))
    logits = (f32(rng, n, c) * 30).astype(np.float32)  # large: log-sum-exp must be stable
    labels = rng.integers(0, c, size=n).astype(label_dtype)
    dy = np.array(rng.uniform(0.5, 2), dtype=np.float32)
    lt = t64(logits).requires_grad_(True)
    loss = F.cross_entropy(lt, torch.from_numpy(labels.astype(np.int64)))
    (loss * float(dy)).backward()
    g = tap({"L": logits, "Y": labels}, "R = cross_entropy(L, Y)")
    for got in run_all(g, {"L": logits, "Y": labels}):
        close(got, loss)
    g = tap({"L": logits, "Y": labels, "D": dy}, "R = cross_entropy_grad(L, Y, D)")
    for got in run_all(g, {"L": logits, "Y": labels, "D": dy}):
        close(got, lt.grad)


def test_cross_entropy_names_a_label_out_of_range():
    logits = np.zeros((3, 4), np.float32)
    labels = np.array([0, 4, 1], np.int64)
    g = tap({"L": logits, "Y": labels}, "R = cross_entropy(L, Y)")
    for kernels in KERNELS:
        with pytest.raises(tapestry.Error, match="label 4 of row 1 is not a class in 0..3"):
            g.run({"L": logits, "Y": labels}, kernels=kernels)


# ---- optimizer updates -------------------------------------------------------------------------
def torch_steps(make_opt, p0: np.ndarray, grads: list[np.ndarray]):
    """torch.optim on float64 copies: the state before the last step and the result after it."""
    p = t64(p0).requires_grad_(True)
    opt = make_opt([p])
    before = None
    for i, gr in enumerate(grads):
        if i == len(grads) - 1:
            before = (p.detach().clone(), {k: (v.clone() if torch.is_tensor(v) else v)
                                           for k, v in opt.state[p].items()})
        p.grad = t64(gr)
        opt.step()
    return before, p.detach(), opt.state[p]


def updates_graph(kernel: str, shape, extra_inputs: list[str], outputs: list[str], **params):
    g = tapestry.Graph()
    ins = [g.input(n, "f32", shape) for n in ["P", "G", *extra_inputs]]
    if kernel == "adam":
        ins.append(g.input("Step", "i64", []))
    g.assign("R", g.call(kernel, *ins, **params))
    for name in ["R", *(f"R.{o}" for o in outputs)] if not outputs else ["R.result", *(f"R.{o}" for o in outputs)]:
        g.output(g[name])
    return g


UPDATE_PLANS = [None, {"ops": {"R": {"split": {"d0": 2}}}},
                {"ops": {"R": {"split": {"d0": 2, "d1": 3}}}}]


@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
def test_sgd_is_torchs(weight_decay):
    rng = np.random.default_rng(3)
    p, gr = f32(rng, 6, 9), f32(rng, 6, 9)
    _, want, _ = torch_steps(lambda ps: torch.optim.SGD(ps, lr=0.3, weight_decay=weight_decay),
                             p, [gr])
    g = updates_graph("sgd", [6, 9], [], [], lr=0.3, weight_decay=weight_decay)
    for kernels in KERNELS:
        for plan in UPDATE_PLANS:
            close(g.run({"P": p, "G": gr}, plan=plan, kernels=kernels, verify=plan is not None)["R"],
                  want)


@pytest.mark.parametrize("weight_decay", [0.0, 0.05])
def test_sgd_momentum_is_torchs_second_step(weight_decay):
    rng = np.random.default_rng(4)
    p, g1, g2 = f32(rng, 6, 9), f32(rng, 6, 9), f32(rng, 6, 9)
    (p1, state), want, after = torch_steps(
        lambda ps: torch.optim.SGD(ps, lr=0.2, momentum=0.9, weight_decay=weight_decay), p, [g1, g2])
    g = updates_graph("sgd_momentum", [6, 9], ["V"], ["velocity_next"], lr=0.2, momentum=0.9,
                      weight_decay=weight_decay)
    inputs = {"P": p1.numpy().astype(np.float32), "G": g2,
              "V": state["momentum_buffer"].numpy().astype(np.float32)}
    for kernels in KERNELS:
        for plan in UPDATE_PLANS:
            out = g.run(inputs, plan=plan, kernels=kernels, verify=plan is not None)
            close(out["R.result"], want)
            close(out["R.velocity_next"], after["momentum_buffer"])


@pytest.mark.parametrize("decoupled", [False, True])
@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
def test_adam_is_torchs_third_step(decoupled, weight_decay):
    rng = np.random.default_rng(5)
    p = f32(rng, 5, 12)
    grads = [f32(rng, 5, 12) for _ in range(3)]
    opt = torch.optim.AdamW if decoupled else torch.optim.Adam
    (p2, state), want, after = torch_steps(
        lambda ps: opt(ps, lr=0.05, betas=(0.8, 0.95), eps=1e-6, weight_decay=weight_decay),
        p, grads)
    step = int(state["step"]) + 1
    g = updates_graph("adam", [5, 12], ["M", "V"], ["m_next", "v_next"], lr=0.05, beta1=0.8,
                      beta2=0.95, eps=1e-6, weight_decay=weight_decay, decoupled=decoupled)
    inputs = {"P": p2.numpy().astype(np.float32), "G": grads[-1],
              "M": state["exp_avg"].numpy().astype(np.float32),
              "V": state["exp_avg_sq"].numpy().astype(np.float32), "Step": np.array(step, np.int64)}
    for kernels in KERNELS:
        for plan in UPDATE_PLANS:
            out = g.run(inputs, plan=plan, kernels=kernels, verify=plan is not None)
            close(out["R.result"], want)
            close(out["R.m_next"], after["exp_avg"])
            close(out["R.v_next"], after["exp_avg_sq"])


def test_adam_refuses_step_zero():
    g = updates_graph("adam", [3], ["M", "V"], ["m_next", "v_next"])
    z = np.zeros(3, np.float32)
    for kernels in KERNELS:
        with pytest.raises(tapestry.Error, match="step is 0, but updates count from 1"):
            g.run({"P": z, "G": z, "M": z, "V": z, "Step": np.array(0, np.int64)}, kernels=kernels)


def test_conv2d_gradients_are_exact_on_small_integers():
    # error_rule bilinear, exact: true — sums of products of integers, sharded or not.
    rng = np.random.default_rng(9)
    x = rng.integers(-1, 2, size=(4, 16, 9, 9)).astype(np.float32)
    w = rng.integers(-1, 2, size=(16, 16, 3, 3)).astype(np.float32)
    d = rng.integers(-1, 2, size=(4, 16, 4, 4)).astype(np.float32)
    g = tapestry.parse("X: f32[4, 16, 9, 9]\nW: f32[16, 16, 3, 3]\nD: f32[4, 16, 4, 4]\n"
                       "DX = conv2d_grad_input(X, W, D, stride=2)\n"
                       "DW = conv2d_grad_weight(X, D, kh=3, kw=3, stride=2)\noutput DX, DW\n")
    want_dx = torch.nn.grad.conv2d_input(x.shape, t64(w), t64(d), stride=2).numpy()
    want_dw = torch.nn.grad.conv2d_weight(t64(x), w.shape, t64(d), stride=2).numpy()
    plan = {"ops": {"DX": {"split": {"n": 2, "c": 2}}, "DW": {"split": {"n": 2, "o": 2}}}}
    for kernels in KERNELS:
        for p in [None, plan]:
            out = g.run({"X": x, "W": w, "D": d}, plan=p, kernels=kernels, verify="exact")
            assert np.array_equal(out["DX"], want_dx) and np.array_equal(out["DW"], want_dw)


def test_the_cli_runs_and_verifies_a_sharded_training_step(tmp_path):
    # `tapestry run --plan … --verify`: conv2d_grad_weight's batch split is a Partial(sum)
    # reduced after the shards; the optimizer update shards like the parameter.
    from conftest import run_cli
    graph = tmp_path / "step.tap"
    graph.write_text("X: f32[4, 3, 8, 8]\nW: f32[6, 3, 3, 3]\nD: f32[4, 6, 6, 6]\n"
                     "DW = conv2d_grad_weight(X, D, kh=3, kw=3)\n"
                     "W1 = sgd(W, DW, lr=0.1)\noutput W1\n")
    plan = tmp_path / "plan.json"
    plan.write_text('{"ops": {"DW": {"split": {"n": 2, "o": 2}}, "W1": {"split": {"d0": 3}}}}')
    done = run_cli("run", graph, "--plan", plan, "--verify", "--threads", "2")
    assert "PASS   W1" in done.stdout and "DW/reduce" in done.stdout


def test_ops_return_every_output_of_an_update():
    from tapestry import ops
    g = tapestry.Graph()
    p, gr = g.input("P", "f32", [3, 4]), g.input("G", "f32", [3, 4])
    param, m, v = ops.adam(p, gr, p, p, g.input("Step", "i32", []), lr=0.1, decoupled=True)
    g.assign("U", param)
    assert [t.name for t in (param, m, v)] == ["U.result", "U.m_next", "U.v_next"]
    new, velocity = ops.sgd_momentum(p, gr, p, lr=0.1, momentum=0.9)
    assert velocity.name == "sgd_momentum.velocity_next" and velocity.shape == (3, 4)
