"""The digits example (examples/digits/, docs/training.md "A worked example: digits") against
PyTorch: an MLP classifier 64 → 32 → 10 trained on scikit-learn's 8×8 digits with SGD (momentum
0.9) and with Adam. For each optimizer, unsharded and under the data-parallel and the
tensor-parallel plan (examples/plans/digits-*.json), on threads and on 2 MPI ranks, the per-step
losses of train_sgd.tap / train_adam.tap — every step's new state fed back as the next step's
input (examples/digits/steps.py) — equal torch.optim's on the same initial weights and batches
(examples/digits/reference.py) within 1e-4 relative for 100 steps, and 300 steps (10 epochs)
reach ≥ 95% on the 297 held-out digits. Also a transformer block (examples/transformer_block.tap's
structure at small sizes) trained 30 steps with Adam, and a small convnet on the digits (two
unpadded conv2d + relu layers, a linear head) 40 steps with SGD, their losses PyTorch's (the
conv2d's VJP is conv2d_grad_input and conv2d_grad_weight).

The loop itself, `tapestry train` (carrying the state the step graphs declare with `update`), is
checked the same way: Graph.train in order equals PyTorch's losses and the per-step driver's
bitwise, `tapestry launch -n 2 -- train … --executor mpi` under both plans equals PyTorch's for
100 steps, and a shuffled run reaches ≥ 95%.

The comparison must be able to fail: a step with another learning rate, momentum or beta2, or
the batches one step out of order, is more than 1e-4 away within the 100 steps.

On MPI the default run trains with `tapestry launch -n 2 -- train` (one launch, 100 steps); the
slow run also drives the per-step driver on 2 ranks (one `tapestry launch` a step: 100 steps of
every optimizer under both plans, ~13 minutes).
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tapestry
from conftest import EXAMPLES, PLANS, run_cli

torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")

DIGITS = EXAMPLES / "digits"
sys.path.insert(0, str(DIGITS))
import evaluate  # noqa: E402  (examples/digits/)
import reference  # noqa: E402
import steps  # noqa: E402

STEPS = 100
RTOL = 1e-4
PLAN_FILES = {"unsharded": None, "data-parallel": PLANS / "digits-data-parallel.json",
              "tensor-parallel": PLANS / "digits-tensor-parallel.json"}


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """prepare.py's directory (run as the docs run it)."""
    out = tmp_path_factory.mktemp("digits")
    subprocess.run([sys.executable, str(DIGITS / "prepare.py"), str(out)], check=True,
                   capture_output=True)
    return out


@functools.cache
def torch_run(directory: Path, optimizer: str, count: int, shift: int = 0):
    """PyTorch's losses and final weights (cached per module: the data fixture is one dir)."""
    order = reference.batches(1500, count + shift)[shift:]
    return reference.train(directory, optimizer, count, order)


def relative_gap(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    return np.abs(got - want) / np.abs(want)


def assert_losses_equal(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape
    gap = relative_gap(got, want)
    worst = int(gap.argmax())
    assert gap[worst] <= RTOL, (f"step {worst + 1}: loss {got[worst]} vs PyTorch's {want[worst]} "
                                f"(relative {gap[worst]:.2e} > {RTOL})")


def plan_arg(name: str) -> str | None:
    return None if PLAN_FILES[name] is None else str(PLAN_FILES[name])


# ---- the data and the oracle ------------------------------------------------------------------
def test_prepare_writes_the_split_and_pytorchs_initial_weights(data):
    x, y = np.load(data / "data" / "X.npy"), np.load(data / "data" / "Y.npy")
    xt, yt = np.load(data / "test" / "X.npy"), np.load(data / "test" / "Y.npy")
    assert x.shape == (1500, 64) and x.dtype == np.float32 and y.dtype == np.int64
    assert xt.shape == (297, 64) and yt.shape == (297,)
    assert 0 <= x.min() and x.max() == 1 and set(np.unique(y)) == set(range(10))
    # The split is disjoint and complete: every one of sklearn's 1797 digits, once.
    from sklearn.datasets import load_digits
    all_rows = np.concatenate([x, xt]).astype(np.float64) * 16
    want = load_digits().data
    assert sorted(map(bytes, all_rows.astype(np.uint8))) == sorted(map(bytes, want.astype(np.uint8)))
    # nn.Linear's initialisation: |W1| ≤ 1/√64, |W2| ≤ 1/√32; the buffers are zeros.
    w1, w2 = np.load(data / "sgd" / "W1.npy"), np.load(data / "sgd" / "W2.npy")
    assert w1.shape == (32, 64) and np.abs(w1).max() <= 1 / 8 and np.abs(w2).max() <= 32 ** -0.5
    assert np.array_equal(np.load(data / "adam" / "W1.npy"), w1)
    assert not np.load(data / "adam" / "W2_v.npy").any() and not np.load(data / "sgd" / "b1_v.npy").any()


def test_the_untrained_model_guesses(data):
    fraction, _, total = evaluate.accuracy(data / "test", data / "sgd")
    assert total == 297 and fraction < 0.3  # so ≥ 95% below is learnt, not given


# ---- losses equal PyTorch's -------------------------------------------------------------------
@pytest.mark.parametrize("plan", PLAN_FILES)
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_losses_equal_pytorchs_on_threads(data, optimizer, plan):
    want, want_params = torch_run(data, optimizer, STEPS)
    got, state = steps.train(data, optimizer, STEPS,
                             steps.Stepper(optimizer, plan=plan_arg(plan), threads=2))
    assert_losses_equal(got, want)
    assert got[-1] < 0.5 * got[0]  # it learns
    for name in steps.PARAMS:  # and ends where PyTorch ends
        np.testing.assert_allclose(state[name], want_params[name], atol=1e-5, err_msg=name)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_losses_equal_pytorchs_with_the_reference_kernels(data, optimizer):
    want, _ = torch_run(data, optimizer, STEPS)
    got, _ = steps.train(data, optimizer, STEPS,
                         steps.Stepper(optimizer, plan=plan_arg("data-parallel"),
                                       kernels="reference"))
    assert_losses_equal(got, want)


@pytest.mark.parametrize("plan", ["data-parallel", "tensor-parallel"])
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_a_sharded_step_verifies(data, optimizer, plan):
    # One step under each plan against the unsharded graph (--verify's float64 oracle), from the
    # state 20 steps in (non-zero buffers).
    _, state = steps.train(data, optimizer, 20, steps.Stepper(optimizer))
    x, y = np.load(data / "data" / "X.npy"), np.load(data / "data" / "Y.npy")
    g = tapestry.load(str(DIGITS / f"train_{optimizer}.tap"))
    inputs = {"X": x[1000:1050], "Y": y[1000:1050], **state}
    if optimizer == "adam":
        inputs["step"] = np.array(21, np.int64)
    out = g.run(inputs, plan=plan_arg(plan), threads=2, verify=True)
    assert set(out) == {"L", *steps.updates(optimizer).values()}
    report = g.last_run.verify_text
    assert report.count("PASS") == len(out), report
    ops = {o["operation"]: o for o in g.last_run.metrics["operations"]}
    if plan == "data-parallel":  # the weight gradients' batch sums: data parallelism's all-reduce
        assert ops["dW1"]["applications"] == 2 and "dW1/reduce" in ops
    else:  # Megatron: W1 by rows, W2 by columns and their updates alike; Z's in-sum combined
        assert ops["W1n"]["applications"] == 2 and ops["W2n"]["applications"] == 2
        assert "Z/matmul/reduce" in ops


def mpi_case(data, optimizer: str, plan: str, count: int):
    want, _ = torch_run(data, optimizer, count)
    got, _ = steps.train(data, optimizer, count,
                         steps.Stepper(optimizer, plan=plan_arg(plan), ranks=2))
    assert_losses_equal(got, want)


@pytest.mark.slow
@pytest.mark.parametrize("optimizer,plan", [("sgd", "data-parallel"), ("adam", "tensor-parallel")])
def test_losses_equal_pytorchs_on_two_mpi_ranks(data, optimizer, plan):
    mpi_case(data, optimizer, plan, 3)


@pytest.mark.slow
@pytest.mark.parametrize("plan", ["data-parallel", "tensor-parallel"])
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_100_steps_equal_pytorchs_on_two_mpi_ranks(data, optimizer, plan):
    mpi_case(data, optimizer, plan, STEPS)


# ---- the comparison can fail ------------------------------------------------------------------
@pytest.mark.parametrize("optimizer,before,after", [
    ("sgd", "lr=0.05, momentum=0.9)", "lr=0.0502, momentum=0.9)"),
    ("sgd", "lr=0.05, momentum=0.9)", "lr=0.05, momentum=0.89)"),
    ("adam", "lr=0.01)", "lr=0.01, beta2=0.99)"),
])
def test_another_hyper_parameter_is_caught(data, tmp_path, optimizer, before, after):
    text = (DIGITS / f"train_{optimizer}.tap").read_text()
    assert text.count(before) == 4
    mutated = tmp_path / "step.tap"
    mutated.write_text(text.replace(before, after))
    want, _ = torch_run(data, optimizer, STEPS)
    got, _ = steps.train(data, optimizer, STEPS, steps.Stepper(optimizer, graph_path=mutated))
    assert relative_gap(got, want).max() > RTOL


def test_batches_out_of_order_are_caught(data):
    want, _ = torch_run(data, "sgd", STEPS, shift=1)  # PyTorch one batch ahead
    got, _ = steps.train(data, "sgd", STEPS, steps.Stepper("sgd"))
    assert relative_gap(got, want).max() > RTOL


# ---- accuracy ---------------------------------------------------------------------------------
@pytest.mark.parametrize("optimizer,plan", [("sgd", "data-parallel"), ("adam", "tensor-parallel")])
def test_ten_epochs_reach_95_percent_held_out(data, optimizer, plan):
    got, state = steps.train(data, optimizer, 300,
                             steps.Stepper(optimizer, plan=plan_arg(plan), threads=2))
    want, want_params = torch_run(data, optimizer, 300)
    assert_losses_equal(got, want)
    fraction, correct, total = evaluate.accuracy(data / "test", state)
    assert fraction >= 0.95, f"{correct} of {total}"
    assert evaluate.accuracy(data / "test", want_params)[1] == correct  # PyTorch's weights agree


def test_a_shuffled_run_reaches_95_percent_held_out(data):
    order = steps.batch_rows(1500, 300, shuffle=7)
    assert not np.array_equal(order, steps.batch_rows(1500, 300))
    assert sorted(order[:30].ravel()) == list(range(1500))  # an epoch is a permutation
    got, state = steps.train(data, "sgd", 300, steps.Stepper("sgd", threads=2), order)
    want, _ = reference.train(data, "sgd", 300, order)
    assert_losses_equal(got, want)
    fraction, correct, total = evaluate.accuracy(data / "test", state)
    assert fraction >= 0.95, f"{correct} of {total}"


# ---- a transformer block ----------------------------------------------------------------------
B, S, D, H, MLP = 2, 4, 8, 2, 16  # examples/transformer_block.tap at small sizes
DH = D // H
BLOCK_PARAMS = {"Wq": [D, D], "bq": [D], "Wk": [D, D], "bk": [D], "Wv": [D, D], "bv": [D],
                "Wo": [D, D], "bo": [D], "W1": [MLP, D], "b1": [MLP], "W2": [D, MLP], "b2": [D]}


def block_step_tap() -> str:
    """transformer_block.tap's statements at [B·S, D] = [8, 8], an mse loss against T, grad and
    an Adam update of every weight."""
    decl = lambda name, shape: f"{name}: f32[{', '.join(map(str, shape))}]"  # noqa: E731
    lines = [decl("X", [B * S, D]), decl("T", [B * S, D]), decl("Scale", [1]), "step: i64[]"]
    for name, shape in BLOCK_PARAMS.items():
        lines += [decl(name, shape), decl(f"{name}_m", shape), decl(f"{name}_v", shape)]
    heads = f"shape=[{B}, {S}, {H}, {DH}]), perm=[0, 2, 1, 3])"
    lines += [
        f"Q = permute(reshape(linear(X, Wq, bq), {heads}",
        f"K = permute(reshape(linear(X, Wk, bk), {heads}",
        f"V = permute(reshape(linear(X, Wv, bv), {heads}",
        "Scores = mul(matmul(Q, transpose(K)), Scale)",
        "P = softmax(Scores)",
        "Ctx = matmul(P, V)",
        f"Attn = linear(reshape(permute(Ctx, perm=[0, 2, 1, 3]), shape=[{B * S}, {D}]), Wo, bo)",
        "R1 = add(X, Attn)",
        "M = linear(gelu(linear(R1, W1, b1)), W2, b2)",
        "Y = add(R1, M)",
        "L = mse(Y, T)",
        f"{', '.join('d' + n for n in BLOCK_PARAMS)} = grad(L, {', '.join(BLOCK_PARAMS)})",
    ]
    outputs = ["L"]
    for name in BLOCK_PARAMS:
        lines.append(f"{name}n = adam({name}, d{name}, {name}_m, {name}_v, step, lr=0.01)")
        outputs += [f"{name}n", f"{name}n.m_next", f"{name}n.v_next"]
    return "\n".join(lines) + f"\noutput {', '.join(outputs)}\n"


def torch_block_losses(params: dict[str, np.ndarray], batches) -> np.ndarray:
    F = torch.nn.functional
    p = {n: torch.from_numpy(a.copy()).requires_grad_(True) for n, a in params.items()}
    opt = torch.optim.Adam(list(p.values()), lr=0.01)
    losses = []
    for x, t in batches:
        x, t = torch.from_numpy(x), torch.from_numpy(t)
        split = lambda a: a.reshape(B, S, H, DH).permute(0, 2, 1, 3)  # noqa: E731
        q, k, v = (split(F.linear(x, p[f"W{c}"], p[f"b{c}"])) for c in "qkv")
        probs = torch.softmax(q @ k.transpose(-1, -2) * torch.tensor([DH ** -0.5]), dim=-1)
        ctx = (probs @ v).permute(0, 2, 1, 3).reshape(B * S, D)
        r1 = x + F.linear(ctx, p["Wo"], p["bo"])
        y = r1 + F.linear(F.gelu(F.linear(r1, p["W1"], p["b1"])), p["W2"], p["b2"])
        loss = F.mse_loss(y, t)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return np.array(losses)


def verify_block_step(g, inputs, plan):
    """One sharded step under --verify: every output PASSes, except that the key bias's Adam
    update may FAIL as the verifier's own diagnosis "the error model does not hold". bk's exact
    gradient is 0 (softmax ignores a shift of every score of a row), so the computed gradient is
    rounding noise, and Adam's first step m̂/(√v̂ + ε) = g/|g| turns noise of any size into ±lr:
    the worst-case rule's bar (the inputs' bars plus rounding) does not cover that amplification,
    and the verifier says so instead of passing it (a known gap: adam needs its own error rule)."""
    try:
        g.run(inputs, plan=plan, threads=2, verify=True)
        return
    except tapestry.VerificationError as e:
        text = str(e)
    lines = [line for line in text.splitlines() if line.startswith(("PASS", "FAIL", "UNCHECKED"))]
    assert len(lines) >= len(BLOCK_PARAMS) * 3 + 1, text
    for line in lines:
        ok = line.startswith("PASS") or (line.startswith("FAIL   bkn.result:")
                                         and "the error model does not hold" in line)
        assert ok, line


@pytest.mark.parametrize("plan", [None, {"ops": {"Q/linear": {"split": {"batch": 2}},
                                                 "dWq": {"split": {"batch": 2}},
                                                 "M/linear": {"split": {"out": 2}},
                                                 "W1n": {"split": {"d0": 2}}}}],
                         ids=["unsharded", "sharded"])
def test_a_transformer_block_trains_like_pytorch(plan):
    rng = np.random.default_rng(3)
    params = {}
    for name, shape in BLOCK_PARAMS.items():
        bound = (shape[1] if len(shape) == 2 else D) ** -0.5
        params[name] = rng.uniform(-bound, bound, shape).astype(np.float32)
    mix = rng.uniform(-1, 1, (D, D))
    batches = []
    for _ in range(4):  # a target the block can learn: a fixed nonlinear map of X
        x = rng.uniform(-1, 1, (B * S, D))
        batches.append((x.astype(np.float32), np.tanh(x @ mix).astype(np.float32)))
    batches = [batches[s % 4] for s in range(30)]
    want = torch_block_losses(params, batches)
    g = tapestry.parse(block_step_tap(), name="block_step.tap")
    state = dict(params) | {f"{n}_{m}": np.zeros_like(a) for n, a in params.items() for m in "mv"}
    got = []
    for s, (x, t) in enumerate(batches):
        inputs = {"X": x, "T": t, "Scale": np.array([DH ** -0.5], np.float32),
                  "step": np.array(s + 1, np.int64), **state}
        if s == 0 and plan is not None:
            verify_block_step(g, inputs, plan)
        out = g.run(inputs, plan=plan, threads=2)
        got.append(float(out["L"]))
        state = {n: out[f"{n}n.result"] for n in BLOCK_PARAMS} | {
            f"{n}_{m}": out[f"{n}n.{m}_next"] for n in BLOCK_PARAMS for m in "mv"}
    got = np.array(got)
    assert_losses_equal(got, want)
    assert got[-1] < 0.5 * got[0]  # it learns


# ---- a small convnet on the digits ------------------------------------------------------------
CONV_STEP = """\
X:  f32[50, 64]
Y:  i64[50]
K1: f32[4, 1, 3, 3]
K2: f32[8, 4, 3, 3]
Wh: f32[10, 128]
bh: f32[10]
K1_v: f32[4, 1, 3, 3]
K2_v: f32[8, 4, 3, 3]
Wh_v: f32[10, 128]
bh_v: f32[10]
C1 = relu(conv2d(reshape(X, shape=[50, 1, 8, 8]), K1))   # [50, 4, 6, 6]
C2 = relu(conv2d(C1, K2))                                # [50, 8, 4, 4]
L = cross_entropy(linear(reshape(C2, shape=[50, 128]), Wh, bh), Y)
dK1, dK2, dWh, dbh = grad(L, K1, K2, Wh, bh)
K1n = sgd_momentum(K1, dK1, K1_v, lr=0.1, momentum=0.9)
K2n = sgd_momentum(K2, dK2, K2_v, lr=0.1, momentum=0.9)
Whn = sgd_momentum(Wh, dWh, Wh_v, lr=0.1, momentum=0.9)
bhn = sgd_momentum(bh, dbh, bh_v, lr=0.1, momentum=0.9)
output L, K1n, K2n, Whn, bhn, K1n.velocity_next, K2n.velocity_next, Whn.velocity_next, bhn.velocity_next
"""
CONV_PARAMS = ["K1", "K2", "Wh", "bh"]


@pytest.mark.parametrize("plan", [None, {"ops": {"C1": {"split": {"n": 2}},
                                                 "C2": {"split": {"o": 2}},
                                                 "dK2": {"split": {"o": 2}}}}],
                         ids=["unsharded", "sharded"])
def test_a_convnet_trains_on_the_digits_like_pytorch(data, plan):
    g = tapestry.parse(CONV_STEP, name="conv_step.tap")
    F = torch.nn.functional
    torch.manual_seed(1)
    layers = [torch.nn.Conv2d(1, 4, 3, bias=False), torch.nn.Conv2d(4, 8, 3, bias=False),
              torch.nn.Linear(128, 10)]
    params = dict(zip(CONV_PARAMS, (layers[0].weight, layers[1].weight, layers[2].weight,
                                    layers[2].bias)))
    state = {n: p.detach().numpy().copy() for n, p in params.items()}
    state |= {f"{n}_v": np.zeros_like(a) for n, a in state.items()}
    opt = torch.optim.SGD(list(params.values()), lr=0.1, momentum=0.9)
    x, y = np.load(data / "data" / "X.npy"), np.load(data / "data" / "Y.npy")
    got, want = [], []
    for s, rows in enumerate(reference.batches(len(y), 40)):
        xt = torch.from_numpy(x[rows]).reshape(50, 1, 8, 8)
        c2 = F.relu(F.conv2d(F.relu(F.conv2d(xt, params["K1"])), params["K2"]))
        loss = F.cross_entropy(F.linear(c2.reshape(50, 128), params["Wh"], params["bh"]),
                               torch.from_numpy(y[rows]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        want.append(float(loss))
        out = g.run({"X": x[rows], "Y": y[rows], **state}, plan=plan, threads=2,
                    verify=s == 0 and plan is not None)
        got.append(float(out["L"]))
        state = {n: out[f"{n}n.result"] for n in CONV_PARAMS} | {
            f"{n}_v": out[f"{n}n.velocity_next"] for n in CONV_PARAMS}
    assert_losses_equal(np.array(got), np.array(want))
    assert got[-1] < 0.5 * got[0]  # it learns


# ---- the training loop: tapestry train, Graph.train -------------------------------------------
def test_the_step_graphs_declare_their_state():
    for optimizer in ("sgd", "adam"):
        g = tapestry.load(str(DIGITS / f"train_{optimizer}.tap"))
        assert {t.name for t in g.outputs} >= {"L", *steps.updates(optimizer).values()}


@pytest.mark.parametrize("plan", PLAN_FILES)
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_the_training_loop_equals_pytorch(data, optimizer, plan):
    # tapestry.train in order: the per-step driver's batches, so PyTorch's losses, and the
    # driver's own losses bitwise (the same compiled step, fed the same state).
    g = tapestry.load(str(DIGITS / f"train_{optimizer}.tap"))
    losses, state = tapestry.train(g, STEPS, data / "data", data / optimizer,
                                   plan=plan_arg(plan), threads=2, shuffle=False)
    want, want_params = torch_run(data, optimizer, STEPS)
    assert_losses_equal(np.asarray(losses, np.float64), want)
    by_hand, _ = steps.train(data, optimizer, STEPS,
                             steps.Stepper(optimizer, plan=plan_arg(plan), threads=2))
    assert np.array_equal(np.asarray(losses, np.float64), by_hand)
    for name in steps.PARAMS:
        np.testing.assert_allclose(state[name], want_params[name], atol=1e-5, err_msg=name)


def cli_train_losses(data: Path, optimizer: str, count: int, plan: str, out: Path,
                     ranks: int = 0) -> np.ndarray:
    command = ["train", str(DIGITS / f"train_{optimizer}.tap"), "--steps", str(count),
               "--data", str(data / "data"), "--state", str(data / optimizer),
               "--state-out", str(out / "state"), "--in-order", "--quiet",
               "--metrics", str(out / "metrics.jsonl")]
    if plan_arg(plan):
        command += ["--plan", plan_arg(plan)]
    if ranks:
        command = ["launch", "-n", str(ranks), "--", *command, "--executor", "mpi"]
    run_cli(*command)
    lines = (out / "metrics.jsonl").read_text().splitlines()
    return np.array([json.loads(line)["loss"] for line in lines], np.float64)


@pytest.mark.parametrize("plan", ["data-parallel", "tensor-parallel"])
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_tapestry_train_on_two_mpi_ranks_equals_pytorch(data, tmp_path, optimizer, plan):
    got = cli_train_losses(data, optimizer, STEPS, plan, tmp_path, ranks=2)
    want, want_params = torch_run(data, optimizer, STEPS)
    assert_losses_equal(got, want)
    for name in steps.PARAMS:
        np.testing.assert_allclose(np.load(tmp_path / "state" / f"{name}.npy"), want_params[name],
                                   atol=1e-5, err_msg=name)


def test_a_shuffled_tapestry_train_reaches_95_percent_held_out(data):
    g = tapestry.load(str(DIGITS / "train_adam.tap"))
    losses, state = tapestry.train(g, 300, data / "data", data / "adam", seed=5, threads=2)
    in_order, _ = torch_run(data, "adam", 300)
    assert relative_gap(np.asarray(losses, np.float64), in_order).max() > RTOL  # other batches
    fraction, correct, total = evaluate.accuracy(data / "test", state)
    assert fraction >= 0.95, f"{correct} of {total}"
