"""Graph.run: NumPy in and out without copies, input errors before any work, the GIL released
while the engine runs, verification, and NumPy cross-checks within the verify bar."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import models
import tapestry
from conftest import EXAMPLES, ROOT, SMALL, random_inputs

MLP_PLAN = {"ops": {"H/linear": {"split": {"out": 2}}, "Y": {"split": {"in": 2}}}}


@pytest.fixture(scope="module")
def mlp_small():
    return tapestry.load(SMALL / "mlp_small.tap")


# ---- zero copy in, owned arrays out ------------------------------------------------------------
def test_contiguous_inputs_are_read_in_place(mlp_small):
    inputs = random_inputs(mlp_small)
    mlp_small.run(inputs)
    assert mlp_small.last_run.inputs_in_place == ["X", "W1", "b1", "W2", "b2"]
    assert mlp_small.last_run.inputs_copied == []


def test_other_layouts_are_copied_and_give_the_same_result(mlp_small):
    inputs = random_inputs(mlp_small)
    expected = mlp_small.run(inputs, kernels="reference")["Y"]
    strided = dict(inputs)
    strided["X"] = np.asfortranarray(inputs["X"])                       # column-major
    strided["W1"] = np.repeat(inputs["W1"], 2, axis=1)[:, ::2]          # a strided view
    raw = np.zeros(inputs["b1"].nbytes + 1, dtype=np.uint8)             # misaligned float32
    strided["b1"] = raw[1:].view(np.float32)
    strided["b1"][:] = inputs["b1"]
    assert not strided["b1"].flags.aligned
    got = mlp_small.run(strided, kernels="reference")["Y"]
    assert mlp_small.last_run.inputs_copied == ["X", "W1", "b1"]
    assert mlp_small.last_run.inputs_in_place == ["W2", "b2"]
    assert got.tobytes() == expected.tobytes()


def test_read_only_inputs_are_read_in_place(mlp_small):
    inputs = random_inputs(mlp_small)
    for a in inputs.values():
        a.setflags(write=False)
    mlp_small.run(inputs)
    assert mlp_small.last_run.inputs_copied == []


def test_outputs_own_their_memory(mlp_small):
    inputs = random_inputs(mlp_small)
    first = mlp_small.run(inputs, plan=MLP_PLAN)["Y"]
    keep = first.copy()
    assert first.flags.c_contiguous and first.flags.writeable
    assert not isinstance(first.base, np.ndarray)  # not a view of another array
    assert not np.shares_memory(first, inputs["X"])
    second = mlp_small.run(inputs, plan=MLP_PLAN)["Y"]  # the executor reuses its buffers…
    assert not np.shares_memory(first, second)          # …but never one an array still holds
    first[:] = 0
    assert np.array_equal(second, keep)
    mlp_small.release()
    del mlp_small
    assert np.array_equal(second, keep)  # outlives the graph and its kept program


def test_an_input_that_is_also_an_output_is_copied_out():
    g = tapestry.parse("A: f32[3]\nB: f32[3]\nC = add(A, B)\noutput A, C")
    a = np.arange(3, dtype=np.float32)
    out = g.run({"A": a, "B": a})
    assert np.array_equal(out["A"], a) and not np.shares_memory(out["A"], a)
    assert np.array_equal(out["C"], 2 * a)


# ---- input errors before any work --------------------------------------------------------------
@pytest.mark.parametrize(
    "change,message",
    [
        (lambda x: x.update(X=x["X"].astype(np.float64)),
         r"input 'X': expected float32 \(64, 32\), got float64 \(64, 32\)"),
        (lambda x: x.update(X=x["X"][:, :16]), r"input 'X': expected float32 \(64, 32\), got float32 \(64, 16\)"),
        (lambda x: x.update(b1=x["b1"].reshape(1, 64)), r"input 'b1': expected float32 \(64,\)"),
        (lambda x: x.update(X=x["X"].tolist()), r"input 'X': expected float32 \(64, 32\), got float64"),
        (lambda x: x.pop("W2"), r"missing input W2 \(the inputs: X, W1, b1, W2, b2\)"),
        (lambda x: [x.pop("W2"), x.pop("b2")], r"missing inputs W2, b2"),
        (lambda x: x.update(Q=x["X"]), r"'Q' is not an input of the graph"),
        (lambda x: x.update(H=x["X"]), r"'H' is computed by the graph; it cannot be an input"),
    ],
    ids=["dtype", "shape", "rank", "list", "missing", "missing2", "unknown", "computed"],
)
def test_bad_inputs_raise_before_any_work(change, message):
    g = tapestry.load(SMALL / "mlp_small.tap")
    inputs = random_inputs(g)
    change(inputs)
    with pytest.raises(tapestry.InputError, match=message) as raised:
        g.run(inputs, plan=MLP_PLAN)
    assert isinstance(raised.value, ValueError) and isinstance(raised.value, tapestry.Error)
    assert g.last_run is None  # nothing ran


def test_bad_arguments():
    g = tapestry.load(SMALL / "mlp_small.tap")
    inputs = random_inputs(g)
    with pytest.raises(ValueError, match="kernels='slow'"):
        g.run(inputs, kernels="slow")
    with pytest.raises(ValueError, match="threads=0"):
        g.run(inputs, threads=0)
    with pytest.raises(ValueError, match="verify='yes'"):
        g.run(inputs, verify="yes")
    with pytest.raises(TypeError, match="plan"):
        g.run(inputs, plan=3)
    with pytest.raises(tapestry.Error, match=r"/ops/Y/split/nope: operation 'Y' has no index "
                                             r"dimension 'nope'"):
        g.run(inputs, plan={"ops": {"Y": {"split": {"nope": 2}}}})
    with pytest.raises(tapestry.Error, match=r"<plan>: /ops/Y/split/out: .*positive|<plan>"):
        g.run(inputs, plan={"ops": {"Y": {"split": {"out": "two"}}}})
    assert g.last_run is None


# ---- the GIL is released while the engine runs -------------------------------------------------
def test_another_thread_runs_during_a_run():
    # A reference-kernel run of ~0.15 s; a second Python thread counts meanwhile. Were the GIL
    # held, the counter could move only before the call enters C++ and after it returns.
    g = models.mlp(128, 128, 512, 128)
    inputs = random_inputs(g)
    span = {}

    def run():
        span["start"] = time.perf_counter()
        g.run(inputs, threads=1, kernels="reference")
        span["end"] = time.perf_counter()

    ticks = []
    worker = threading.Thread(target=run)
    worker.start()
    while worker.is_alive():
        ticks.append(time.perf_counter())
    worker.join()
    start, end = span["start"], span["end"]
    assert end - start > 0.05, "the run is too short to tell"
    middle = [t for t in ticks if start + 0.25 * (end - start) < t < end - 0.25 * (end - start)]
    assert len(middle) > 100, f"{len(middle)} ticks in the middle half of a {end - start:.3f} s run"


def test_runs_of_one_graph_from_two_threads_agree(mlp_small):
    inputs = random_inputs(mlp_small)
    expected = mlp_small.run(inputs, plan=MLP_PLAN, kernels="reference")["Y"]
    results = []

    def run():
        for _ in range(5):
            results.append(mlp_small.run(inputs, plan=MLP_PLAN, kernels="reference")["Y"])

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 10
    assert all(r.tobytes() == expected.tobytes() for r in results)


# ---- verification ------------------------------------------------------------------------------
def test_verify_passes_and_reports(mlp_small):
    inputs = random_inputs(mlp_small)
    mlp_small.run(inputs, plan=MLP_PLAN, verify=True)
    report = mlp_small.last_run.verify
    assert report["pass"] is True
    assert [o["name"] for o in report["outputs"]] == ["Y"]
    assert mlp_small.last_run.verify_text.startswith("PASS   Y:")
    mlp_small.run(inputs, plan={"ops": {"H/linear": {"split": {"out": 2}}}}, kernels="reference",
                  verify=True)
    assert "bitwise" in mlp_small.last_run.verify_text
    exact = {k: np.rint(v) for k, v in inputs.items()}
    mlp_small.run(exact, plan=MLP_PLAN, verify="exact")
    assert "exact" in mlp_small.last_run.verify_text
    with pytest.raises(tapestry.Error, match="exact"):
        mlp_small.run(inputs, verify="exact")  # not in {-1, 0, 1}: refused before the run


def test_wrong_outputs_fail_verification(mlp_small):
    inputs = random_inputs(mlp_small)
    outputs = mlp_small.run(inputs, plan=MLP_PLAN)
    assert mlp_small.verify(inputs, outputs)["pass"] is True
    outputs["Y"][3, 4] += 1e-2
    with pytest.raises(tapestry.VerificationError, match=r"FAIL   Y: 1 of 2048 cells") as raised:
        mlp_small.verify(inputs, outputs)
    assert raised.value.report["pass"] is False
    assert raised.value.report["outputs"][0]["failing_cells"] == 1
    assert raised.value.outputs["Y"] is outputs["Y"]
    with pytest.raises(tapestry.InputError, match="'Y' is missing"):
        mlp_small.verify(inputs, {})


def test_unchecked_cells_are_not_a_pass():
    # x / (a - a): ±inf, but the oracle cannot rule out a tiny nonzero denominator, so those
    # cells have no finite bar: the verdict is UNCHECKED, which raises like a FAIL.
    g = tapestry.parse("X: f32[2, 3]\nA: f32[2, 3]\nY = div(X, sub(A, A))\noutput Y")
    rng = np.random.default_rng(0)
    inputs = {n: rng.uniform(-1, 1, (2, 3)).astype(np.float32) for n in ("X", "A")}
    with pytest.raises(tapestry.VerificationError, match=r"UNCHECKED Y: 6 of 6 cells") as raised:
        g.run(inputs, verify=True)
    assert raised.value.report["verdict"] == "unchecked"
    assert raised.value.report["unchecked_cells"] == 6
    outputs = g.run(inputs, verify=True, allow_unchecked=True)
    assert "WARNING: 6 of 6 cells unchecked" in g.last_run.verify_text
    assert g.last_run.verify["pass"] is True
    with pytest.raises(tapestry.VerificationError, match="UNCHECKED"):
        g.verify(inputs, outputs)
    report = g.verify(inputs, outputs, allow_unchecked=True)
    assert report["verdict"] == "pass" and report["allow_unchecked"] is True
    with pytest.raises(ValueError, match="allow_unchecked=True needs verify"):
        g.run(inputs, allow_unchecked=True)


def test_masked_attention_is_checked_in_every_cell():
    g = tapestry.load(ROOT / "tests" / "data" / "verify" / "causal_attention.tap")
    inputs = random_inputs(g)
    inputs["Mask"] = np.triu(np.full((16, 16), -np.inf, np.float32), 1)
    outputs = g.run(inputs, plan={"ops": {"P": {"split": {"batch1": 2}}}}, verify=True)
    assert g.last_run.verify["unchecked_cells"] == 0
    outputs["Y"][0, 0] += 100  # the first token attends to itself only
    with pytest.raises(tapestry.VerificationError, match=r"FAIL   Y: 1 of 2048 cells"):
        g.verify(inputs, outputs)


# ---- NumPy cross-checks ------------------------------------------------------------------------
def test_mlp_matches_numpy_within_the_verify_bar():
    g = models.mlp(256, 128, 512, 64)
    inputs = random_inputs(g, seed=3)
    expected = models.mlp_numpy(inputs)
    got = g.run(inputs, plan=MLP_PLAN, verify=True)
    report = g.verify(inputs, expected)  # NumPy's own result is within the bar too
    assert report["pass"]
    assert np.abs(got["Y"] - expected["Y"]).max() <= 2 * report["outputs"][0]["max_bar"]


def test_transformer_block_matches_numpy_within_the_verify_bar():
    g = tapestry.load(SMALL / "transformer_block_small.tap")
    inputs = random_inputs(g, seed=4)
    inputs["Scale"] = np.array([0.25], dtype=np.float32)
    plan = EXAMPLES / "plans" / "transformer_block-heads.json"
    got = g.run(inputs, plan=plan, verify=True)
    expected = models.transformer_block_numpy(inputs, b=2, s=16, heads=4)
    report = g.verify(inputs, expected)
    assert report["pass"]
    # Both lie within each cell's bar of the float64 value, so within twice the widest of each other.
    assert np.abs(got["Y"] - expected["Y"]).max() <= 2 * report["outputs"][0]["max_bar"]
    # The bar is not loose: a result twice the widest bar off in one row FAILs.
    broken = {"Y": expected["Y"].copy()}
    broken["Y"][5] += 2 * report["outputs"][0]["max_bar"]
    with pytest.raises(tapestry.VerificationError, match=r"FAIL   Y: 64 of 2048 cells"):
        g.verify(inputs, broken)


# Issue 25: under {"fuse": "auto"} fuse-elementwise fused `add` into the `slice` that reads one
# row of its result, and Graph.run ended in "internal error: the lowered graph is invalid".
def test_a_slice_of_an_elementwise_result_runs_under_fuse_auto(tmp_path):
    (tmp_path / "slice.tap").write_text(
        "x: f32[2, 17, 8]\nb: f32[8]\nh = add(x, b)\ns = slice(h, dim=1, start=0, end=1)\n"
        "y = reshape(s, shape=[2, 8])\noutput y\n")
    g = tapestry.load(tmp_path / "slice.tap")
    inputs = random_inputs(g, seed=5)
    for plan in ({"fuse": "auto"}, {"ops": {"h": {"split": {"d1": 4}}}, "fuse": "auto"}):
        got = g.run(inputs, plan=plan, verify=True)
        np.testing.assert_array_equal(got["y"], (inputs["x"] + inputs["b"])[:, 0, :])


# Issue 25: a linear of a vector (no batch dim) could not have its `in` split.
def test_a_linear_of_a_vector_splits_its_in_and_matches_numpy(tmp_path):
    (tmp_path / "lin1.tap").write_text(
        "X: f32[10]\nW: f32[3, 10]\nb: f32[3]\nY = linear(X, W, b)\noutput Y\n")
    g = tapestry.load(tmp_path / "lin1.tap")
    inputs = random_inputs(g, seed=6)
    expected = inputs["W"].astype(np.float64) @ inputs["X"] + inputs["b"]
    for split in ({"in": 2}, {"in": 4, "out": 3}):
        got = g.run(inputs, plan={"ops": {"Y": {"split": split}}}, verify=True)
        np.testing.assert_allclose(got["Y"], expected, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_full_size_transformer_block_matches_numpy():
    g = tapestry.load(EXAMPLES / "transformer_block.tap")
    inputs = random_inputs(g, seed=4)
    inputs["Scale"] = np.array([0.125], dtype=np.float32)
    got = g.run(inputs, plan=EXAMPLES / "plans" / "transformer_block-heads.json", verify=True)
    expected = models.transformer_block_numpy(inputs, b=4, s=128, heads=8)
    report = g.verify(inputs, expected)
    assert report["pass"]
    assert np.abs(got["Y"] - expected["Y"]).max() <= 2 * report["outputs"][0]["max_bar"]


def test_run_info(mlp_small):
    mlp_small.run(random_inputs(mlp_small), plan=MLP_PLAN, threads=2)
    info = mlp_small.last_run
    assert info.threads == 2 and info.kernels == "fast"
    # decompose-linear + split-reduction turn Y into its product (2 blocks), the reduce and the
    # bias_add, both reduce-scattered 2 ways: 5 operations, 2 + 1 + 2 + 2 + 2 applications.
    assert info.applications == 9 and info.operations == 5
    assert info.flops > 0 and info.wall_s > 0
    assert "operation" in info.summary()
    assert info.metrics["applications"] == 9 and len(info.metrics["application_records"]) == 9


# ---- device="cuda" --------------------------------------------------------------------------------
def test_cuda_device_runs_on_a_gpu_or_says_why_not(mlp_small):
    """On a GPU: the CUDA executor's outputs verify, and the second run replays its CUDA graph.
    Without one (or without the CUDA backend): a clear tapestry.Error naming --device cuda."""
    inputs = random_inputs(mlp_small)
    try:
        out = mlp_small.run(inputs, plan=MLP_PLAN, device="cuda", verify=True)
    except tapestry.Error as e:
        assert "--device cuda" in str(e)
        assert "CUDA" in str(e)
        return
    assert mlp_small.last_run.device == "cuda"
    again = mlp_small.run(inputs, plan=MLP_PLAN, device="cuda")
    np.testing.assert_array_equal(out["Y"], again["Y"])


def test_an_unknown_device_is_a_value_error(mlp_small):
    with pytest.raises(ValueError, match="device='tpu'"):
        mlp_small.run(random_inputs(mlp_small), device="tpu")
