"""Type stubs of the compiled part of Tapestry (``tapestry._core``); import from ``tapestry``."""

from __future__ import annotations

import os
from typing import Any, Callable, Literal, Mapping, Sequence, Union, overload

import numpy as np
import numpy.typing as npt

from .front import Front

PathLike = Union[str, os.PathLike[str]]
Plan = Union[None, Mapping[str, Any], PathLike]
"""None (one application per operation), a dict (the plan's JSON form), or a plan file."""
Target = Union[str, os.PathLike[str], Mapping[str, Any]]
"""A preset name (``"h100x8"``, see ``targets()``), a target file, or a dict (its JSON form)."""
DTypeLike = Union[str, npt.DTypeLike]

class Range:
    """A box of integer points: ``start`` inclusive, ``end`` exclusive, per dim."""

    def __init__(self, start: Sequence[int], end: Sequence[int]) -> None: ...
    @staticmethod
    def parse(text: str) -> Range:
        """Parses ``zr[0:2, 0:3]``."""
    @property
    def start(self) -> tuple[int, ...]: ...
    @property
    def end(self) -> tuple[int, ...]: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def rank(self) -> int: ...
    @property
    def size(self) -> int:
        """The number of points."""
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

Selection = tuple[str, Range]
"""A box of one tensor: (tensor name, Range)."""

class Tensor:
    """A tensor of a graph; a builder handle while the graph is being built (``ops`` take it)."""

    @property
    def name(self) -> str:
        """Its label: the input's or operation's name."""
    @property
    def dtype(self) -> str:
        """float32, float64, int32, int64, bfloat16 or float16."""
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def range(self) -> Range:
        """Its coordinates (a tensor may start anywhere, e.g. zr[-40:60, 20:32])."""
    @property
    def graph(self) -> Graph | None:
        """The graph being built it belongs to (None for a loaded or sharded graph's tensor)."""
    @property
    def is_input(self) -> bool:
        """No operation computes it: a run needs it."""
    @property
    def is_output(self) -> bool: ...
    def __add__(self, other: Tensor) -> Tensor: ...
    def __sub__(self, other: Tensor) -> Tensor: ...
    def __mul__(self, other: Tensor) -> Tensor: ...
    def __truediv__(self, other: Tensor) -> Tensor: ...
    def __matmul__(self, other: Tensor) -> Tensor: ...
    def __neg__(self) -> Tensor: ...

class Application:
    """One shard of an operation: its index sub-box and the tensor boxes it reads and writes."""

    @property
    def name(self) -> str: ...
    @property
    def operation(self) -> str: ...
    @property
    def index(self) -> Range | None: ...
    @property
    def inputs(self) -> dict[str, list[Selection]]:
        """{port: [(tensor name, Range), …]}"""
    @property
    def outputs(self) -> dict[str, list[Selection]]: ...

class Operation:
    """An operation: a kernel over an index space, cut into applications."""

    @property
    def name(self) -> str: ...
    @property
    def kernel(self) -> str: ...
    @property
    def params(self) -> dict[str, Any] | None: ...
    @property
    def index(self) -> Range | None: ...
    @property
    def index_names(self) -> list[str]: ...
    @property
    def reductions(self) -> dict[str, str]:
        """{index dim: monoid} for its reduction dims."""
    @property
    def inputs(self) -> dict[str, list[Selection]]: ...
    @property
    def outputs(self) -> dict[str, list[Selection]]: ...
    @property
    def applications(self) -> list[Application]: ...

class ShardedGraph:
    """A graph lowered under a plan (``Graph.shard``): every operation cut into applications."""

    @property
    def operations(self) -> list[Operation]: ...
    @property
    def applications(self) -> list[Application]: ...
    @property
    def tensors(self) -> list[Tensor]: ...
    @property
    def log(self) -> list[str]:
        """The rewrites applied and refused (``tapestry shard --explain``)."""
    @property
    def plan(self) -> dict[str, Any]:
        """The plan as the rewrites left it (it names the final operations)."""
    def to_json(self) -> str:
        """The loom JSON of the application graph."""
    def save(self, path: PathLike) -> None: ...
    def to_dot(self) -> str: ...
    def _repr_svg_(self) -> str: ...

class RunInfo:
    """What the latest ``Graph.run`` did (``Graph.last_run``)."""

    @property
    def wall_s(self) -> float: ...
    @property
    def flops(self) -> int: ...
    @property
    def gflops(self) -> float: ...
    @property
    def threads(self) -> int: ...
    @property
    def applications(self) -> int: ...
    @property
    def operations(self) -> int: ...
    @property
    def peak_memory_bytes(self) -> int: ...
    @property
    def kernels(self) -> Literal["fast", "reference"]: ...
    @property
    def device(self) -> Literal["cpu", "cuda"]:
        """'cpu' or 'cuda'."""
    @property
    def host_steps(self) -> int:
        """device='cuda': applications that ran on the CPU (no GPU kernel)."""
    @property
    def inputs_in_place(self) -> list[str]:
        """Inputs the run read from the caller's arrays, without a copy."""
    @property
    def inputs_copied(self) -> list[str]:
        """Inputs copied first (not C-contiguous, or misaligned)."""
    @property
    def verify(self) -> dict[str, Any] | None:
        """The verification report (verify=True), else None."""
    @property
    def verify_text(self) -> str:
        """One PASS/FAIL/UNCHECKED line per output, as ``tapestry run --verify`` prints them."""
    @property
    def metrics(self) -> dict[str, Any]:
        """Per operation and per application timings (``tapestry run --metrics``)."""
    def summary(self) -> str:
        """The table ``tapestry run`` prints."""

class DeviceCost:
    """One device's share of a Cost."""

    device: str
    applications: int
    compute_s: float
    comm_s: float
    idle_s: float
    finish_s: float
    peak_memory_bytes: int
    bytes_sent: int
    bytes_received: int
    energy_j: float

class Cost:
    """What a plan costs on a target (``tapestry cost --json``)."""

    makespan_s: float
    peak_memory_bytes: int
    devices_used: int
    devices_held: int
    energy_j: float
    idle_energy_j: float
    bytes_moved: int
    fits: bool
    per_device: list[DeviceCost]
    def to_dict(self) -> dict[str, Any]: ...

class Explanation:
    """A priced plan in DTensor terms (``tapestry explain``); ``str()`` is the text."""

    target: str
    cost: Cost
    @property
    def strategy(self) -> dict[str, Any]:
        """The strategy in one line: ``summary``, ``kind``, ``data``, ``tensor``, ``megatron``."""
    @property
    def gains(self) -> list[dict[str, Any]]:
        """Against one device and against data parallelism: ``baseline``, ``baseline_s``,
        ``ratio``, ``baseline_fits`` (or ``reason``)."""
    @property
    def operations(self) -> list[dict[str, Any]]: ...
    @property
    def communication(self) -> list[dict[str, Any]]: ...
    @property
    def critical_path(self) -> dict[str, Any]: ...
    def to_dict(self) -> dict[str, Any]: ...
    def _repr_pretty_(self, printer: Any, cycle: bool) -> None: ...

class Graph:
    """A tensor block-operation graph: built here with ``input``/``ops``/``output``, or read
    with ``tapestry.load`` / ``tapestry.parse``."""

    def __init__(self, kernels: PathLike | Sequence[PathLike] | None = None) -> None:
        """An empty graph to build; ``kernels``: directories of extra kernel files."""
    def input(
        self, name: str, dtype: DTypeLike, shape: Sequence[int], start: Sequence[int] | None = None
    ) -> Tensor:
        """A graph input: dtype ``"f32"``/``"float32"``/``numpy.float32``, …; ``start``: where
        its coordinates begin (the origin by default)."""
    def call(self, kernel: str, /, *inputs: Tensor, **params: Any) -> Tensor:
        """Kernel ``kernel`` on ``inputs`` (see ``tapestry.ops``)."""
    def assign(self, name: str, value: Tensor) -> Tensor:
        """Names ``value``'s operation ``name`` and the unnamed operations feeding it
        ``name/<kernel>`` (the ``.tap`` rule: ``H = relu(linear(…))`` gives H/linear and H)."""
    @overload
    def output(self, value: Tensor) -> Tensor: ...
    @overload
    def output(self, name: str, value: Tensor) -> Tensor: ...
    def output(self, *args: Any) -> Tensor:
        """Marks a graph output, naming it first when a name is given."""
    def update(self, state: Tensor, next: Tensor) -> None:
        """Declares training state: after a step, ``next``'s value becomes input ``state``'s
        (``update W <- Wn`` in .tap); ``next`` becomes a graph output."""
    def grad(
        self,
        loss: Tensor,
        wrt: Sequence[Tensor],
        seed: Tensor | None = None,
        names: Sequence[str] | None = None,
    ) -> list[Tensor]:
        """Reverse-mode gradients of ``loss`` (rank 0, or with ``seed`` of its shape) with respect
        to ``wrt``, added to this graph as ordinary operations and labelled ``d<name>`` (or
        ``names``); docs/training.md. A ``wrt`` tensor the loss does not read gets zeros and a
        UserWarning."""
    def __getitem__(self, name: str) -> Tensor: ...
    def __setitem__(self, name: str, value: Tensor) -> None:
        """``g["H"] = t`` is ``g.assign("H", t)``."""
    def __contains__(self, name: str) -> bool: ...
    @property
    def inputs(self) -> list[Tensor]: ...
    @property
    def outputs(self) -> list[Tensor]: ...
    @property
    def tensors(self) -> list[Tensor]: ...
    @property
    def operations(self) -> list[Operation]: ...
    @property
    def source(self) -> str:
        """The file or name it was read from; ``<builder>`` for a built graph."""
    def validate(self) -> None:
        """Raises GraphError listing the issues when the graph is invalid."""
    def to_json(self) -> str: ...
    def save(self, path: PathLike) -> None:
        """Writes the loom JSON (``tapestry build -o``)."""
    def to_tap(self) -> str: ...
    def to_dot(self, detail: str = "auto") -> str:
        """DOT text; ``detail``: ``"full"``, ``"summary"`` (groups by name path, repeats once) or
        ``"auto"`` (the summary above 40 operations)."""
    def _repr_svg_(self) -> str: ...
    def shard(self, plan: Plan) -> ShardedGraph:
        """The graph lowered under ``plan`` (``tapestry shard``)."""
    def train(
        self,
        steps: int,
        data: Mapping[str, npt.ArrayLike],
        state: Mapping[str, npt.ArrayLike],
        plan: Plan = None,
        threads: int | None = None,
        kernels: Literal["fast", "reference"] = "fast",
        seed: int = 0,
        shuffle: bool = True,
        loss: str | None = None,
        step_input: str | None = None,
        updates: Mapping[str, str] | None = None,
        start_step: int = 0,
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Runs the training step ``steps`` times (``tapestry train``), carrying the state.

        ``data`` holds an array of N rows per data input (an input that is neither updated
        state nor the step input); each step reads a batch of the input's dim 0, the rows
        shuffled per epoch by ``seed`` (in order when ``shuffle=False``). ``state`` holds the
        initial value of every state input. ``start_step`` steps are taken as done (a resumed
        run: the batches and the step input continue from there). The plan is lowered and its
        executor built once. Returns the per-step losses (float64) and the final state."""
    def run(
        self,
        inputs: Mapping[str, npt.ArrayLike],
        plan: Plan = None,
        threads: int | None = None,
        kernels: Literal["fast", "reference"] = "fast",
        verify: bool | Literal["exact"] = False,
        allow_unchecked: bool = False,
        device: Literal["cpu", "cuda"] = "cpu",
    ) -> dict[str, np.ndarray]:
        """Runs the graph under ``plan`` on the block executor (``tapestry run``), or with
        ``device="cuda"`` on the GPU (``tapestry run --device cuda``; the CUDA executor is kept
        with the compiled plan, so later runs replay its CUDA graph; docs/gpu.md).

        Every graph input is given by name; a C-contiguous, aligned array of the tensor's dtype
        is read in place, without a copy. Wrong names, dtypes or shapes raise InputError before
        any work. The GIL is released while the engine runs. Returns every graph output as an
        array that owns its memory. ``verify=True`` checks each output against the unsharded
        graph (bitwise with reference kernels and no reduction split, else within each cell's
        error bar of a float64 oracle) and raises VerificationError on a FAIL, and on an
        UNCHECKED output (cells whose error the oracle cannot bound) unless
        ``allow_unchecked=True`` — unsafe: a wrong value in those cells then passes, with a
        warning in the report; ``"exact"`` needs inputs in {-1, 0, 1}. ``last_run`` tells what
        the run did."""
    @property
    def last_run(self) -> RunInfo | None: ...
    def verify(
        self,
        inputs: Mapping[str, npt.ArrayLike],
        outputs: Mapping[str, npt.ArrayLike],
        mode: Literal["bound", "bitwise", "exact"] = "bound",
        allow_unchecked: bool = False,
    ) -> dict[str, Any]:
        """Judges outputs computed anywhere (NumPy, PyTorch, another run) against the unsharded
        graph on ``inputs``, as ``tapestry verify`` does; returns the report on PASS, raises
        VerificationError on FAIL and on UNCHECKED (the report's ``verdict`` says which;
        ``allow_unchecked=True`` accepts unchecked cells with a warning: unsafe)."""
    def cost(self, plan: Plan, target: Target) -> Cost:
        """What ``plan`` costs on ``target``, without running (``tapestry cost``)."""
    def explain(self, plan: Plan, target: Target) -> Explanation:
        """``plan`` on ``target`` in DTensor terms (``tapestry explain``)."""
    def release(self) -> None:
        """Frees the program, buffers and evaluator kept for the next run or price."""
    def optimize(
        self,
        target: Target,
        objectives: str | Sequence[str] | None = None,
        time_budget: float | None = None,
        max_evals: int | None = None,
        seed: int = 0,
        threads: int | None = None,
        max_memory_per_device: int | str | None = None,
        max_devices: int | None = None,
        tie_layers: bool = False,
    ) -> Front:
        """The Pareto front of plans on ``target`` (``tapestry optimize``; tapestry/front.py)."""

def load(
    path: PathLike,
    kernels: PathLike | Sequence[PathLike] | None = None,
    dims: dict[str, int] | None = None,
) -> Graph:
    """Reads a ``.tap`` program or a loom JSON graph, validated; ``dims`` binds the program's
    ``dim`` variables (``{"batch": 32}``, as ``--dim batch=32``)."""

def parse(
    text: str,
    name: str = "<string>",
    kernels: PathLike | Sequence[PathLike] | None = None,
    dims: dict[str, int] | None = None,
) -> Graph:
    """Builds ``.tap`` source text; errors name ``name:line:col``; ``dims`` as in ``load``."""

def call(kernel: str, inputs: Sequence[Tensor], params: Mapping[str, Any]) -> Tensor: ...
def kernels(kernels: PathLike | Sequence[PathLike] | None = None) -> list[str]:
    """The kernel names (the built-ins, plus those of ``kernels`` directories)."""

def describe_kernel(name: str) -> str:
    """A built-in kernel's declaration (``tapestry kernels NAME``)."""

def targets() -> list[str]:
    """The preset target names (``tapestry targets``)."""

def calibrate(seconds: float = 10.0, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Measures this machine as ``tapestry calibrate`` does (about ``seconds`` of measuring, plus
    set-up) and returns the target as a dict, for ``target=``; ``progress`` hears each benchmark's
    name."""
