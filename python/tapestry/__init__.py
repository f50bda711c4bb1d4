"""Tapestry from Python: build or load a tensor block-operation graph, shard it under a plan,
run it on NumPy arrays, verify it, price it on a target machine and explain it — the engine of
the ``tapestry`` command, without a second implementation.

    import numpy as np
    import tapestry
    from tapestry import ops

    g = tapestry.Graph()
    X = g.input("X", "f32", [4096, 1024])
    W1 = g.input("W1", "f32", [4096, 1024]); b1 = g.input("b1", "f32", [4096])
    W2 = g.input("W2", "f32", [1024, 4096]); b2 = g.input("b2", "f32", [1024])
    g["H"] = ops.relu(ops.linear(X, W1, b1))
    g.output("Y", ops.linear(g["H"], W2, b2))

    plan = {"ops": {"H/linear": {"split": {"out": 2}}, "Y": {"split": {"in": 2}}}}
    out = g.run(inputs, plan=plan, verify=True)     # {"Y": numpy.ndarray}
    print(g.explain(plan, "h100x8"))
    front = g.optimize("h100x8", objectives=["time", "memory"], max_evals=500)

See docs/python.md for the guide.
"""

from __future__ import annotations

from . import ops
from ._core import (
    Application,
    Cost,
    DeviceCost,
    Explanation,
    Graph,
    Operation,
    Range,
    RunInfo,
    ShardedGraph,
    Tensor,
    calibrate,
    describe_kernel,
    kernels,
    load,
    parse,
    targets,
)
from .errors import Error, GraphError, InputError, VerificationError
from .front import Front, FrontMember
from .front import optimize as _optimize

Graph.optimize = _optimize


def _graph_call(self: Graph, kernel: str, /, *inputs: Tensor, **params: object) -> Tensor:
    """Kernel ``kernel`` on ``inputs`` of this graph, with keyword ``params`` (``tapestry.ops``
    has a function per built-in kernel; this reaches any kernel by name)."""
    for t in inputs:
        if t.graph is not self:
            raise GraphError(f"{kernel}: input '{t.name}' is not from this graph")
    return ops.call(kernel, *inputs, **params)


Graph.call = _graph_call


def _arrays(arrays, what: str) -> dict:
    """A dict of arrays as given, or DIR/<name>.npy of every .npy file of a directory."""
    import os

    if isinstance(arrays, (str, os.PathLike)):
        import numpy as np

        folder = os.fspath(arrays)
        if not os.path.isdir(folder):
            raise InputError(f"{what}: {folder} is not a directory")
        return {
            name[: -len(".npy")]: np.load(os.path.join(folder, name))
            for name in sorted(os.listdir(folder))
            if name.endswith(".npy")
        }
    return dict(arrays)


def import_onnx(path, shapes: dict | None = None, with_info: bool = False):
    """Import an ONNX model (``tapestry import``): returns ``(graph, weights)``, a loaded Graph of
    the built-in kernels and ``{name: ndarray}`` of every initializer and float constant the
    graph reads as an input. Run it with ``graph.run({**weights, "x": x})``. ``shapes`` gives the
    static shape of inputs with dynamic dims (``{"x": [8, 3, 224, 224]}``, as ``--shape``).
    Models below opset 11 are converted to opset 13 first. ``with_info=True`` returns
    ``(graph, weights, info)``, info saying what the import did: ``inputs`` and ``outputs`` (the
    model's, by their graph names), ``opset``, ``converted_from`` (0 when not converted),
    ``nodes`` and ``renames`` (``(what, onnx_name, graph_name)`` triples).
    Raises GraphError naming the file and node on the first construct that does not map
    (``tapestry import MODEL --check`` lists all of them)."""
    from ._core import _import_onnx

    graph, weights, info = _import_onnx(path, dict(shapes or {}))
    return (graph, weights, info) if with_info else (graph, weights)


def load_weights(folder, graph: Graph | None = None) -> dict:
    """The ``.npy`` files of a folder as ``{name: ndarray}`` — the ``--weights DIR`` that
    ``tapestry import`` writes, or any ``--inputs``/``--outputs`` folder. Files are named after
    tensors with ``/`` written as ``_`` (``layer1/w`` → ``layer1_w.npy``): given ``graph``, the
    keys are its input names and every input that has a file is read (others are left out);
    without one, the keys are the file names without ``.npy``."""
    import os

    import numpy as np

    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise InputError(f"load_weights: {folder} is not a directory")
    if graph is None:
        return _arrays(folder, "load_weights")
    found = {}
    for t in graph.inputs:
        file = os.path.join(folder, t.name.replace("/", "_") + ".npy")
        if os.path.isfile(file):
            found[t.name] = np.load(file)
    return found


def train(graph: Graph, steps: int, data, state, **options):
    """``graph.train(steps, data, state, **options)`` where ``data`` and ``state`` may also be
    directories of ``<name>.npy`` files (``tapestry train --data DIR --state DIR``; a state
    directory's ``train.json`` sets ``start_step`` and ``seed`` unless they are given).
    Returns the per-step losses and the final state (arrays)."""
    import json
    import os

    if isinstance(state, (str, os.PathLike)):
        cursor = os.path.join(os.fspath(state), "train.json")
        if os.path.exists(cursor):
            with open(cursor) as f:
                done = json.load(f)
            options.setdefault("start_step", done["step"])
            options.setdefault("seed", done["seed"])
            options.setdefault("shuffle", done["shuffle"])
    return graph.train(steps, _arrays(data, "data"), _arrays(state, "state"), **options)

__all__ = [
    "Application",
    "Cost",
    "DeviceCost",
    "Error",
    "Explanation",
    "Front",
    "FrontMember",
    "Graph",
    "GraphError",
    "InputError",
    "Operation",
    "Range",
    "RunInfo",
    "ShardedGraph",
    "Tensor",
    "VerificationError",
    "calibrate",
    "describe_kernel",
    "import_onnx",
    "kernels",
    "load",
    "load_weights",
    "ops",
    "parse",
    "targets",
    "train",
]


def _tensor_operator(kernel: str, swap: bool = False):
    def method(self: Tensor, other: object):
        if not isinstance(other, Tensor):
            return NotImplemented
        return ops.call(kernel, other, self) if swap else ops.call(kernel, self, other)

    method.__name__ = f"__{kernel}__"
    method.__doc__ = f"``{kernel}`` of two tensors (numpy broadcasting)."
    return method


# Operators on builder tensors: each is the kernel of the same name, so `X @ W` builds the
# graph `matmul(X, W)` builds.
Tensor.__add__ = _tensor_operator("add")
Tensor.__sub__ = _tensor_operator("sub")
Tensor.__mul__ = _tensor_operator("mul")
Tensor.__truediv__ = _tensor_operator("div")
Tensor.__matmul__ = _tensor_operator("matmul")
Tensor.__neg__ = lambda self: ops.neg(self)
