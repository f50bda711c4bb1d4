"""The Python builder: graphs equal to the .tap ones node for node, every built-in kernel
reachable by name, and the kernels' own errors as exceptions."""

from __future__ import annotations

import json

import numpy as np
import pytest

import models
import tapestry
from conftest import EXAMPLES, SMALL
from tapestry import ops


def same_graph(built: tapestry.Graph, path) -> None:
    loaded = tapestry.load(path)
    a, b = json.loads(built.to_json()), json.loads(loaded.to_json())
    assert a == b
    assert built.to_tap() == loaded.to_tap()


@pytest.mark.parametrize(
    "build,path",
    [
        (models.mlp, EXAMPLES / "mlp.tap"),
        (lambda: models.mlp(64, 32, 64, 32), SMALL / "mlp_small.tap"),
        (models.linear_relu, EXAMPLES / "linear_relu.tap"),
        (models.convnet, EXAMPLES / "convnet.tap"),
        (models.transformer_block, EXAMPLES / "transformer_block.tap"),
        (lambda: models.transformer_block(2, 16, 64, 4, 128), SMALL / "transformer_block_small.tap"),
    ],
    ids=["mlp", "mlp_small", "linear_relu", "convnet", "transformer_block", "transformer_small"],
)
def test_builder_graph_equals_the_tap_graph(build, path):
    same_graph(build(), path)


def test_a_different_builder_graph_is_not_equal():
    # The equality above is not vacuous: one changed size, or a name, shows.
    with pytest.raises(AssertionError):
        same_graph(models.mlp(64, 32, 64, 16), SMALL / "mlp_small.tap")
    g = tapestry.Graph()
    X = g.input("X", "f32", [64, 32])
    W1 = g.input("W1", "f32", [64, 32])
    b1 = g.input("b1", "f32", [64])
    W2 = g.input("W2", "f32", [32, 64])
    b2 = g.input("b2", "f32", [32])
    # H left unnamed: its operations are named after Y instead (Y/relu, Y/linear…).
    g.output("Y", ops.linear(ops.relu(ops.linear(X, W1, b1)), W2, b2))
    assert "H" not in g
    with pytest.raises(AssertionError):
        same_graph(g, SMALL / "mlp_small.tap")


def test_every_builtin_kernel_is_an_op():
    names = tapestry.kernels()
    assert {"linear", "relu", "conv2d", "softmax", "reduce", "maximum"} <= set(names)
    for name in names:
        assert callable(getattr(ops, name)), name
        assert name in ops.__all__
        assert tapestry.describe_kernel(name).startswith(name)


def test_ops_call_reaches_every_kernel_by_name_and_alias():
    g = tapestry.Graph()
    a = g.input("a", "f32", [4, 3])
    b = g.input("b", "f32", [4, 3])
    assert ops.call("max", a, b).name == "maximum"  # two tensors: the elementwise alias
    assert ops.call("max", a, dim=0).shape == (3,)  # one tensor: the reduction
    assert ops.max(a, b).name.startswith("maximum")
    assert ops.sum(a).shape == (4,)
    assert (a @ ops.transpose(b)).shape == (4, 4)
    assert (a + b).name.startswith("add") and (a - b).name.startswith("sub")
    assert (a * b).name.startswith("mul") and (a / b).name.startswith("div")
    assert (-a).name.startswith("neg")
    with pytest.raises(tapestry.GraphError, match="nosuchkernel"):
        ops.call("nosuchkernel", a)
    # A kernel parameter named `kernel` (pooling's window) does not collide with the kernel name.
    img = g.input("img", "f32", [1, 2, 8, 8])
    assert ops.max_pool2d(img, kernel=2, stride=2).shape == (1, 2, 4, 4)
    assert g.call("avg_pool2d", img, kernel=4, stride=4).shape == (1, 2, 2, 2)
    assert ops.slice(a, dim=0, start=1, end=3).shape == (2, 3)
    assert ops.mean(a).shape == (4, 1) and ops.variance(a, dim=0).shape == (1, 3)


def test_builder_graph_runs_like_the_loaded_one():
    built = models.mlp(64, 32, 64, 32)
    loaded = tapestry.load(SMALL / "mlp_small.tap")
    rng = np.random.default_rng(0)
    inputs = {t.name: rng.standard_normal(t.shape).astype(np.float32) for t in loaded.inputs}
    plan = {"ops": {"H/linear": {"split": {"out": 2}}, "Y": {"split": {"in": 2}}}}
    a = built.run(inputs, plan=plan, kernels="reference")["Y"]
    b = loaded.run(inputs, plan=plan, kernels="reference")["Y"]
    assert a.tobytes() == b.tobytes()


def test_builder_errors_are_the_kernels_messages():
    g = tapestry.Graph()
    X = g.input("X", "f32", [8, 12])
    W = g.input("W", "f32", [16, 10])
    b = g.input("b", "f32", [16])
    with pytest.raises(tapestry.GraphError,
                       match=r"linear: X has 12 columns but W has 10 \(its in dimension\)"):
        ops.linear(X, W, b)
    with pytest.raises(tapestry.GraphError, match="X is already defined") as raised:
        g.input("X", "f32", [1])
    assert raised.value.diagnostics == []  # the message is all there is
    with pytest.raises(tapestry.GraphError, match="dtype 'f33'"):
        g.input("Z", "f33", [1])
    with pytest.raises(tapestry.GraphError, match="negative"):
        g.input("Z", "f32", [-1])
    with pytest.raises(tapestry.GraphError, match="not the result of one"):
        g.assign("Y", X)  # an input names no operation
    with pytest.raises(tapestry.GraphError, match="stride"):
        ops.conv2d(g.input("I", "f32", [1, 1, 4, 4]), g.input("K", "f32", [1, 1, 3, 3]), stride=0)
    # A failed call leaves the graph as it was: it still builds and runs.
    W2 = g.input("W2", "f32", [16, 12])
    g.output("Y", ops.relu(ops.linear(X, W2, b)))
    assert [t.name for t in g.outputs] == ["Y"]
    g.validate()


def test_tensors_of_other_graphs_are_refused():
    g, h = tapestry.Graph(), tapestry.Graph()
    a = g.input("a", "f32", [2])
    b = h.input("b", "f32", [2])
    with pytest.raises(tapestry.GraphError, match="different graphs"):
        ops.add(a, b)
    with pytest.raises(tapestry.GraphError, match="not from this graph"):
        h.call("relu", a)
    assert a.graph is g and h.call("relu", b).graph is h
    loaded = tapestry.load(EXAMPLES / "linear_relu.tap")
    with pytest.raises(tapestry.GraphError, match="not from a graph being built"):
        ops.relu(loaded["Y"])
    with pytest.raises(tapestry.GraphError, match="cannot be extended"):
        loaded.input("Z", "f32", [2])


def test_graph_inspection():
    g = models.linear_relu()
    assert [t.name for t in g.inputs] == ["X", "W", "b"]
    X = g["X"]
    assert X.dtype == "float32" and X.shape == (100, 12)
    assert X.range == tapestry.Range([-40, 20], [60, 32])
    assert str(X.range) == "zr[-40:60, 20:32]"
    assert X.is_input and not X.is_output and g["Y"].is_output
    assert [op.name for op in g.operations] == ["Y/linear", "Y"]
    linear = g.operations[0]
    assert linear.kernel == "linear"
    assert linear.index_names == ["batch", "out", "in"]
    assert linear.reductions == {"in": "sum"}
    assert linear.index == tapestry.Range([0, 0, 0], [100, 32, 12])  # the IPFs add X's start
    assert linear.inputs["x"] == [("X", X.range)]
    with pytest.raises(tapestry.GraphError, match="Nope"):
        g["Nope"]
    assert "<svg" in g._repr_svg_()
    assert "relu(linear(X, W, b))" in g.to_tap()


def test_dim_variables_take_the_sizes_given(tmp_path):
    text = "dim batch = 2\nX: f32[batch, 3]\nY = reshape(X, shape=[batch*3])\noutput Y\n"
    assert [t.shape for t in tapestry.parse(text).inputs] == [(2, 3)]
    g = tapestry.parse(text, dims={"batch": 5})
    assert [t.shape for t in g.inputs] == [(5, 3)]
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    assert np.array_equal(g.run({"X": x})["Y"], x.reshape(15))
    path = tmp_path / "g.tap"
    path.write_text(text)
    assert [t.shape for t in tapestry.load(path, dims={"batch": 7}).inputs] == [(7, 3)]
    with pytest.raises(tapestry.Error, match=r"--dim bach=7: the program declares no `dim bach` "
                                             r"\(it declares: batch\)"):
        tapestry.load(path, dims={"bach": 7})
    with pytest.raises(tapestry.InputError, match="dims: expected a dict"):
        tapestry.parse(text, dims={"batch": "5"})
    with pytest.raises(tapestry.Error, match="expected NAME=N"):
        tapestry.parse(text, dims={"batch": -1})


def test_to_dot_summarises_big_graphs():
    lines = ["x: f32[4, 8]"]
    prev = "x"
    for k in range(15):
        lines += [f"blk/layer_{k}.w: f32[8, 8]",
                  f"blk/layer_{k}/fc = linear_nobias({prev}, blk/layer_{k}.w)",
                  f"blk/layer_{k}/act = relu(blk/layer_{k}/fc)"]
        prev = f"blk/layer_{k}/act"
    g = tapestry.parse("\n".join(lines) + f"\noutput {prev}\n")
    assert "30 operations in 15 groups, drawn as 1" in g.to_dot(detail="summary")
    assert "drawn as" not in g.to_dot()  # 30 operations: below the threshold, drawn in full
    with pytest.raises(tapestry.InputError, match="detail must be"):
        g.to_dot(detail="most")
