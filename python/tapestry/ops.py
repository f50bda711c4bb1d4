"""The built-in kernels as functions over builder tensors (``tapestry.Graph().input(...)``).

Each function adds one operation to the graph its inputs belong to and returns its result,
checked at once by the kernel's metakernel — a mismatch raises ``tapestry.GraphError`` with the
kernel's message (``linear: X has 1024 columns but W1 has 512 (its in dimension)``). They mirror
the C++ builder (``metakernel/builder_ops.h``) and the ``.tap`` calls of the same names;
``tapestry.describe_kernel(name)`` prints a kernel's full declaration, and ``call`` reaches any
kernel by name, user kernels (``tapestry.Graph(kernels=[dir])``) included.

    H = ops.relu(ops.linear(X, W, b))
    C = ops.conv2d(Img, K, stride=2, padding=1)      # pad + conv2d
    S = ops.softmax(ops.matmul(Q, ops.transpose(K)))
"""

from __future__ import annotations

from typing import Sequence

from . import _core
from ._core import Tensor

__all__ = [
    "call",
    "linear", "linear_nobias", "matmul", "bias_add",
    "relu", "gelu", "exp", "neg", "tanh", "sigmoid", "sqrt", "log", "floor", "ceil", "round",
    "add", "sub", "mul", "div", "maximum", "pow",
    # masks (kernels/masks.yaml): 0/1 in the operands' dtype
    "equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not", "where",
    "sum", "max", "mean", "variance", "reduce", "softmax", "argmax", "argmin",
    "transpose", "permute", "reshape", "slice", "cast", "gather",
    "pad", "conv2d", "max_pool2d", "avg_pool2d",
    "pad2d", "pad3d", "grouped_conv2d", "dilated_conv2d", "conv3d", "dilated_conv3d",
    "max_pool2d_rect", "avg_pool2d_rect", "max_pool3d", "avg_pool3d",
    # what gradients use (kernels/autodiff.yaml, docs/training.md)
    "ones_like", "zeros_like", "sum_to", "broadcast", "expand", "unslice", "unpad",
    "mul_scalar",
    "relu_grad", "gelu_grad", "tanh_grad", "sigmoid_grad", "sqrt_grad",
    "maximum_grad_a", "maximum_grad_b", "linear_grad_w",
    "softmax_grad", "conv2d_grad_input", "conv2d_grad_weight", "max_grad",
    "reduce_grad",
    "max_pool2d_grad", "avg_pool2d_grad", "mse", "mse_grad", "cross_entropy",
    "cross_entropy_grad", "sgd", "sgd_momentum", "adam",
]  # fmt: skip


def call(kernel: str, /, *inputs: Tensor, **params: object) -> Tensor:
    """Applies kernel ``kernel`` (a name or alias, resolved by the number of inputs) to
    ``inputs`` with keyword parameters ``params``; returns its result."""
    return _core.call(kernel, list(inputs), params)


def _given(**params: object) -> dict[str, object]:
    """The parameters given (not None): the rest keep the kernel's defaults, as in ``.tap``."""
    return {k: v for k, v in params.items() if v is not None}


# ---- linear algebra ---------------------------------------------------------------------------
def linear(x: Tensor, w: Tensor, bias: Tensor) -> Tensor:
    """Fully connected layer: ``x·wᵀ + bias`` (PyTorch layout: ``w`` is ``[out, in]``)."""
    return call("linear", x, w, bias)


def linear_nobias(x: Tensor, w: Tensor) -> Tensor:
    """Fully connected layer without a bias: ``x·wᵀ`` (PyTorch's ``F.linear(x, w)``)."""
    return call("linear_nobias", x, w)


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """Batched matrix product: ``result[..., m, n] = Σ_k a[..., m, k] · b[..., k, n]``."""
    return call("matmul", a, b)


def bias_add(x: Tensor, bias: Tensor) -> Tensor:
    """``x + bias`` over the last dim."""
    return call("bias_add", x, bias)


# ---- elementwise, unary -----------------------------------------------------------------------
def relu(x: Tensor) -> Tensor:
    """``max(x, 0)``, elementwise."""
    return call("relu", x)


def gelu(x: Tensor) -> Tensor:
    """``x·Φ(x)`` (exact GELU), elementwise."""
    return call("gelu", x)


def exp(x: Tensor) -> Tensor:
    """``e^x``, elementwise."""
    return call("exp", x)


def neg(x: Tensor) -> Tensor:
    """``-x``, elementwise."""
    return call("neg", x)


def tanh(x: Tensor) -> Tensor:
    """``tanh(x)``, elementwise."""
    return call("tanh", x)


def sigmoid(x: Tensor) -> Tensor:
    """``1 / (1 + e^-x)``, elementwise."""
    return call("sigmoid", x)


def sqrt(x: Tensor) -> Tensor:
    """``√x``, elementwise (NaN for x < 0)."""
    return call("sqrt", x)


def log(x: Tensor) -> Tensor:
    """``ln x``, elementwise (−inf at 0, NaN for x < 0)."""
    return call("log", x)


def floor(x: Tensor) -> Tensor:
    """``⌊x⌋``, elementwise (exact; no gradient flows through it)."""
    return call("floor", x)


def ceil(x: Tensor) -> Tensor:
    """``⌈x⌉``, elementwise (exact; no gradient flows through it)."""
    return call("ceil", x)


def round(x: Tensor) -> Tensor:  # noqa: A001 — the kernel's name, as numpy's and torch's
    """x rounded to the nearest integer, halves to even, elementwise (exact)."""
    return call("round", x)


# ---- elementwise, binary (numpy broadcasting) -------------------------------------------------
def add(a: Tensor, b: Tensor) -> Tensor:
    """``a + b``, elementwise with numpy broadcasting."""
    return call("add", a, b)


def sub(a: Tensor, b: Tensor) -> Tensor:
    """``a - b``, elementwise with numpy broadcasting."""
    return call("sub", a, b)


def mul(a: Tensor, b: Tensor) -> Tensor:
    """``a · b``, elementwise with numpy broadcasting."""
    return call("mul", a, b)


def div(a: Tensor, b: Tensor) -> Tensor:
    """``a / b``, elementwise with numpy broadcasting (integer division rounds toward zero)."""
    return call("div", a, b)


def maximum(a: Tensor, b: Tensor) -> Tensor:
    """``max(a, b)``, elementwise with numpy broadcasting."""
    return call("maximum", a, b)


def pow(a: Tensor, b: Tensor) -> Tensor:  # noqa: A001 - the kernel's name
    """``a ** b``, elementwise with numpy broadcasting (C's ``pow`` on floats; integers: exact,
    a negative exponent an error)."""
    return call("pow", a, b)


# ---- masks (kernels/masks.yaml) ------------------------------------------------------------------
# A graph holds no boolean tensors: a mask is 0/1 in its operands' dtype, and a logical operand or
# where's condition is true where it is not 0 (NaN too).
def equal(a: Tensor, b: Tensor) -> Tensor:
    """1 where ``a == b``, else 0 (NaN equals nothing), with numpy broadcasting."""
    return call("equal", a, b)


def less(a: Tensor, b: Tensor) -> Tensor:
    """1 where ``a < b``, else 0, with numpy broadcasting."""
    return call("less", a, b)


def less_equal(a: Tensor, b: Tensor) -> Tensor:
    """1 where ``a <= b``, else 0, with numpy broadcasting."""
    return call("less_equal", a, b)


def greater(a: Tensor, b: Tensor) -> Tensor:
    """1 where ``a > b``, else 0, with numpy broadcasting."""
    return call("greater", a, b)


def greater_equal(a: Tensor, b: Tensor) -> Tensor:
    """1 where ``a >= b``, else 0, with numpy broadcasting."""
    return call("greater_equal", a, b)


def logical_and(a: Tensor, b: Tensor) -> Tensor:
    """1 where ``a != 0`` and ``b != 0``, else 0, with numpy broadcasting."""
    return call("logical_and", a, b)


def logical_or(a: Tensor, b: Tensor) -> Tensor:
    """1 where ``a != 0`` or ``b != 0``, else 0, with numpy broadcasting."""
    return call("logical_or", a, b)


def logical_xor(a: Tensor, b: Tensor) -> Tensor:
    """1 where exactly one of ``a``, ``b`` is not 0, else 0, with numpy broadcasting."""
    return call("logical_xor", a, b)


def logical_not(x: Tensor) -> Tensor:
    """1 where ``x == 0``, else 0."""
    return call("logical_not", x)


def where(cond: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """``a`` where ``cond != 0``, else ``b`` (a select: ±inf or NaN in the branch not taken never
    reach the result), numpy broadcasting of all three; ``cond`` may have another dtype."""
    return call("where", cond, a, b)


# ---- reductions -------------------------------------------------------------------------------
def sum(x: Tensor, dim: int | None = None) -> Tensor:  # noqa: A001 - the kernel's name
    """Sum over dimension ``dim`` (negative counts from the end; default the last)."""
    return call("sum", x, **_given(dim=dim))


def max(x: Tensor, dim: int | Tensor | None = None) -> Tensor:  # noqa: A001 - the kernel's name
    """Maximum over dimension ``dim`` (default the last); ``max(a, b)`` with two tensors is
    ``maximum``."""
    if isinstance(dim, Tensor):
        return call("maximum", x, dim)
    return call("max", x, **_given(dim=dim))


def mean(x: Tensor, dim: int | None = None) -> Tensor:
    """Mean over dimension ``dim`` (default the last), kept with size 1."""
    return call("mean", x, **_given(dim=dim))


def variance(x: Tensor, dim: int | None = None) -> Tensor:
    """Population variance over dimension ``dim`` (default the last), kept with size 1."""
    return call("variance", x, **_given(dim=dim))


def reduce(x: Tensor, op: str | None = None) -> Tensor:
    """Combines partial results along the leading block dim with ``op`` (sum — the default —,
    max, min, prod)."""
    return call("reduce", x, **_given(op=op))


def softmax(x: Tensor) -> Tensor:
    """Softmax over the last dim."""
    return call("softmax", x)


def argmax(x: Tensor, axis: int | None = None, keepdims: bool | None = None,
           select_last_index: bool | None = None) -> Tensor:
    """Position (int64) of the largest element along ``axis`` (default the last): the first, or
    the last with ``select_last_index``; NaN wins. ``keepdims`` keeps the axis with extent 1."""
    return call("argmax", x,
                **_given(axis=axis, keepdims=keepdims, select_last_index=select_last_index))


def argmin(x: Tensor, axis: int | None = None, keepdims: bool | None = None,
           select_last_index: bool | None = None) -> Tensor:
    """Position (int64) of the smallest element along ``axis``; as ``argmax``."""
    return call("argmin", x,
                **_given(axis=axis, keepdims=keepdims, select_last_index=select_last_index))


# ---- layout -----------------------------------------------------------------------------------
def transpose(x: Tensor) -> Tensor:
    """Swaps the last two dims."""
    return call("transpose", x)


def permute(x: Tensor, perm: Sequence[int]) -> Tensor:
    """Reorders dims: result dim ``i`` is ``x`` dim ``perm[i]``."""
    return call("permute", x, perm=list(perm))


def reshape(x: Tensor, shape: Sequence[int]) -> Tensor:
    """Splits or merges adjacent dims (row-major); one entry of ``shape`` may be -1."""
    return call("reshape", x, shape=list(shape))


def slice(x: Tensor, dim: int, start: int, end: int) -> Tensor:  # noqa: A001 - the kernel's name
    """The cells ``start <= i < end`` of dimension ``dim`` (counted from x's start)."""
    return call("slice", x, dim=dim, start=start, end=end)


def gather(x: Tensor, indices: Tensor, axis: int | None = None) -> Tensor:
    """The cells of ``x`` that the integer ``indices`` pick along ``axis`` (default 0): numpy's
    ``take``, an embedding lookup ``gather(table, ids)``; a negative index counts from the end."""
    return call("gather", x, indices, **_given(axis=axis))


_DTYPE_SHORT = {"float32": "f32", "float64": "f64", "bfloat16": "bf16", "float16": "f16"}


def cast(x: Tensor, to: str) -> Tensor:
    """``x`` converted to float dtype ``to`` (``"f32"``, ``"f64"``, ``"bf16"``, ``"f16"``, or
    the long names ``"float32"``…): widening is exact, narrowing rounds to nearest even."""
    return call("cast", x, to=_DTYPE_SHORT.get(to, to))


# ---- convolution ------------------------------------------------------------------------------
def pad(x: Tensor, padding: int, value: float | None = None) -> Tensor:
    """Pads the last two dims by ``padding`` cells of ``value`` (default 0) on every side."""
    return call("pad", x, padding=padding, **_given(value=value))


def conv2d(x: Tensor, w: Tensor, stride: int | None = None, padding: int | None = None) -> Tensor:
    """2-d convolution, NCHW (``stride`` default 1); a non-zero ``padding`` becomes a ``pad``
    operation first."""
    return call("conv2d", x, w, **_given(stride=stride, padding=padding))


def max_pool2d(x: Tensor, kernel: int, stride: int) -> Tensor:
    """2-d max pooling, NCHW, over ``kernel``×``kernel`` windows ``stride`` apart."""
    return call("max_pool2d", x, kernel=kernel, stride=stride)


def avg_pool2d(x: Tensor, kernel: int, stride: int) -> Tensor:
    """2-d average pooling, NCHW, over ``kernel``×``kernel`` windows ``stride`` apart."""
    return call("avg_pool2d", x, kernel=kernel, stride=stride)


def pad2d(x: Tensor, top: int = 0, bottom: int = 0, left: int = 0, right: int = 0,
          value: float | None = None) -> Tensor:
    """Pads the last two dims by an amount per side of ``value`` (default 0)."""
    return call("pad2d", x, top=top, bottom=bottom, left=left, right=right,
                **_given(value=value))


def pad3d(x: Tensor, front: int = 0, back: int = 0, top: int = 0, bottom: int = 0,
          left: int = 0, right: int = 0, value: float | None = None) -> Tensor:
    """Pads the last three dims by an amount per side of ``value`` (default 0)."""
    return call("pad3d", x, front=front, back=back, top=top, bottom=bottom, left=left,
                right=right, **_given(value=value))


def grouped_conv2d(x: Tensor, w: Tensor, groups: int, stride: int | None = None,
                   padding: int | None = None) -> Tensor:
    """2-d convolution in ``groups`` groups (PyTorch's ``conv2d(groups=g)``; depthwise is
    groups = channels), w ``[o, c / groups, kh, kw]``; the group is an index dim."""
    return call("grouped_conv2d", x, w, groups=groups, **_given(stride=stride, padding=padding))


def dilated_conv2d(x: Tensor, w: Tensor, stride: int | None = None,
                   dilation: int | None = None) -> Tensor:
    """2-d convolution with filter taps ``dilation`` cells apart (no padding: pad first)."""
    return call("dilated_conv2d", x, w, **_given(stride=stride, dilation=dilation))


def conv3d(x: Tensor, w: Tensor, stride: int | None = None) -> Tensor:
    """3-d convolution, NCDHW (no padding: pad3d first)."""
    return call("conv3d", x, w, **_given(stride=stride))


def dilated_conv3d(x: Tensor, w: Tensor, stride: int | None = None,
                   dilation: int | None = None) -> Tensor:
    """3-d convolution with filter taps ``dilation`` cells apart."""
    return call("dilated_conv3d", x, w, **_given(stride=stride, dilation=dilation))


def max_pool2d_rect(x: Tensor, kernel_h: int, kernel_w: int, stride_h: int,
                    stride_w: int) -> Tensor:
    """2-d max pooling over ``kernel_h``×``kernel_w`` windows, a stride per dim."""
    return call("max_pool2d_rect", x, kernel_h=kernel_h, kernel_w=kernel_w, stride_h=stride_h,
                stride_w=stride_w)


def avg_pool2d_rect(x: Tensor, kernel_h: int, kernel_w: int, stride_h: int,
                    stride_w: int) -> Tensor:
    """2-d average pooling over ``kernel_h``×``kernel_w`` windows, a stride per dim."""
    return call("avg_pool2d_rect", x, kernel_h=kernel_h, kernel_w=kernel_w, stride_h=stride_h,
                stride_w=stride_w)


def max_pool3d(x: Tensor, kernel_d: int, kernel_h: int, kernel_w: int, stride_d: int,
               stride_h: int, stride_w: int) -> Tensor:
    """3-d max pooling, NCDHW, a window and a stride per dim."""
    return call("max_pool3d", x, kernel_d=kernel_d, kernel_h=kernel_h, kernel_w=kernel_w,
                stride_d=stride_d, stride_h=stride_h, stride_w=stride_w)


def avg_pool3d(x: Tensor, kernel_d: int, kernel_h: int, kernel_w: int, stride_d: int,
               stride_h: int, stride_w: int) -> Tensor:
    """3-d average pooling, NCDHW, a window and a stride per dim."""
    return call("avg_pool3d", x, kernel_d=kernel_d, kernel_h=kernel_h, kernel_w=kernel_w,
                stride_d=stride_d, stride_h=stride_h, stride_w=stride_w)


# ---- what gradients use (kernels/autodiff.yaml; Graph.grad builds them) ---------------------
def ones_like(x: Tensor) -> Tensor:
    """1 everywhere, in ``x``'s shape and dtype."""
    return call("ones_like", x)


def zeros_like(x: Tensor) -> Tensor:
    """0 everywhere, in ``x``'s shape and dtype."""
    return call("zeros_like", x)


def sum_to(x: Tensor, shape: Sequence[int]) -> Tensor:
    """``x`` summed down to ``shape`` over the dims broadcasting stretched."""
    return call("sum_to", x, shape=list(shape))


def broadcast(x: Tensor, dim: int, size: int) -> Tensor:
    """``x`` repeated ``size`` times along a new dim at position ``dim`` (sum's adjoint)."""
    return call("broadcast", x, dim=dim, size=size)


def expand(x: Tensor, dim: int, size: int) -> Tensor:
    """``x``'s extent-1 dim ``dim`` repeated ``size`` times."""
    return call("expand", x, dim=dim, size=size)


def unslice(x: Tensor, dim: int, start: int, size: int) -> Tensor:
    """``x`` placed at ``start`` of a dim of extent ``size``, zeros elsewhere (slice's adjoint)."""
    return call("unslice", x, dim=dim, start=start, size=size)


def unpad(x: Tensor, padding: int) -> Tensor:
    """``x`` without ``padding`` cells on each side of its last two dims (pad's adjoint)."""
    return call("unpad", x, padding=padding)


def mul_scalar(x: Tensor, factor: float | None = None, divisor: int | None = None) -> Tensor:
    """``x · factor / divisor``, elementwise."""
    return call("mul_scalar", x, **_given(factor=factor, divisor=divisor))


def relu_grad(x: Tensor, d_result: Tensor) -> Tensor:
    """``d_result`` where ``x > 0``, else 0."""
    return call("relu_grad", x, d_result)


def gelu_grad(x: Tensor, d_result: Tensor) -> Tensor:
    """``d_result · (Φ(x) + x·φ(x))``: exact GELU's derivative times ``d_result``."""
    return call("gelu_grad", x, d_result)


def tanh_grad(y: Tensor, d_result: Tensor) -> Tensor:
    """``d_result · (1 − y²)`` from tanh's result ``y``."""
    return call("tanh_grad", y, d_result)


def sigmoid_grad(y: Tensor, d_result: Tensor) -> Tensor:
    """``d_result · y · (1 − y)`` from sigmoid's result ``y``."""
    return call("sigmoid_grad", y, d_result)


def sqrt_grad(y: Tensor, d_result: Tensor) -> Tensor:
    """``d_result / (2·y)`` from sqrt's result ``y``."""
    return call("sqrt_grad", y, d_result)


def maximum_grad_a(a: Tensor, b: Tensor, d_result: Tensor) -> Tensor:
    """``d_result`` where ``a ≥ b`` (maximum took a), else 0."""
    return call("maximum_grad_a", a, b, d_result)


def maximum_grad_b(a: Tensor, b: Tensor, d_result: Tensor) -> Tensor:
    """``d_result`` where ``b > a``, else 0."""
    return call("maximum_grad_b", a, b, d_result)


def linear_grad_w(x: Tensor, d_result: Tensor) -> Tensor:
    """linear's weight gradient: ``result[o, i] = Σ_b d_result[b…, o] · x[b…, i]``."""
    return call("linear_grad_w", x, d_result)
# ---- training (kernels/training.yaml; docs/metakernels.md, "Training kernels") ----------------
# A gradient takes the forward operation's inputs and ``d_result``, the cotangent of its result,
# and returns the cotangent of one input.
def softmax_grad(y: Tensor, d_result: Tensor) -> Tensor:
    """softmax's input gradient from its result ``y``: ``y ⊙ (d_result − Σ_row d_result ⊙ y)``."""
    return call("softmax_grad", y, d_result)


def conv2d_grad_input(x: Tensor, w: Tensor, d_result: Tensor, stride: int | None = None) -> Tensor:
    """``conv2d(x, w, stride)``'s gradient with respect to ``x`` (whose shape and range it takes)."""
    return call("conv2d_grad_input", x, w, d_result, **_given(stride=stride))


def conv2d_grad_weight(x: Tensor, d_result: Tensor, kh: int, kw: int,
                       stride: int | None = None) -> Tensor:
    """``conv2d(x, w, stride)``'s gradient with respect to its ``kh``×``kw`` filters ``w``."""
    return call("conv2d_grad_weight", x, d_result, kh=kh, kw=kw, **_given(stride=stride))


def max_grad(x: Tensor, y: Tensor, d_result: Tensor, dim: int) -> Tensor:
    """``y = max(x, dim)``'s gradient: ``d_result`` at the first maximal cell of each row."""
    return call("max_grad", x, y, d_result, dim=dim)


def reduce_grad(x: Tensor, y: Tensor, d_result: Tensor, op: str | None = None) -> Tensor:
    """``y = reduce(x, op)``'s gradient over x's blocks (sum: to each; max, min: the first
    extremal one; prod: times the others' product)."""
    return call("reduce_grad", x, y, d_result, **_given(op=op))


def max_pool2d_grad(x: Tensor, d_result: Tensor, kernel: int, stride: int) -> Tensor:
    """max_pool2d's input gradient: each window's cotangent to its first maximal cell."""
    return call("max_pool2d_grad", x, d_result, kernel=kernel, stride=stride)


def avg_pool2d_grad(x: Tensor, d_result: Tensor, kernel: int, stride: int) -> Tensor:
    """avg_pool2d's input gradient: each window's cotangent / kernel² to every cell of it."""
    return call("avg_pool2d_grad", x, d_result, kernel=kernel, stride=stride)


def mse(pred: Tensor, target: Tensor) -> Tensor:
    """Mean squared error of two ``[n, f]`` tensors, a rank-0 tensor."""
    return call("mse", pred, target)


def mse_grad(pred: Tensor, target: Tensor, d_result: Tensor) -> Tensor:
    """mse's gradient with respect to ``pred`` (``d_result`` rank 0)."""
    return call("mse_grad", pred, target, d_result)


def cross_entropy(logits: Tensor, labels: Tensor) -> Tensor:
    """Mean cross entropy of ``logits [n, c]`` and integer class ``labels [n]``, rank 0."""
    return call("cross_entropy", logits, labels)


def cross_entropy_grad(logits: Tensor, labels: Tensor, d_result: Tensor) -> Tensor:
    """cross_entropy's gradient with respect to the logits (``d_result`` rank 0)."""
    return call("cross_entropy_grad", logits, labels, d_result)


def sgd(param: Tensor, grad: Tensor, lr: float, weight_decay: float | None = None) -> Tensor:
    """One SGD step (torch.optim.SGD without momentum): the new parameter."""
    return call("sgd", param, grad, lr=lr, **_given(weight_decay=weight_decay))


def _outputs(first: Tensor, *ports: str) -> tuple[Tensor, ...]:
    """``first`` (a multi-output operation's ``result``) and its other outputs ``<op>.<port>``."""
    graph = first.graph
    base = first.name.removesuffix(".result")
    return (first, *(graph[f"{base}.{port}"] for port in ports))


def sgd_momentum(param: Tensor, grad: Tensor, velocity: Tensor, lr: float, momentum: float,
                 weight_decay: float | None = None) -> tuple[Tensor, Tensor]:
    """One step of torch.optim.SGD(momentum=…): the new parameter and the new velocity."""
    first = call("sgd_momentum", param, grad, velocity, lr=lr, momentum=momentum,
                 **_given(weight_decay=weight_decay))
    return _outputs(first, "velocity_next")  # type: ignore[return-value]


def adam(param: Tensor, grad: Tensor, m: Tensor, v: Tensor, step: Tensor,
         lr: float | None = None, beta1: float | None = None, beta2: float | None = None,
         eps: float | None = None, weight_decay: float | None = None,
         decoupled: bool | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """One Adam step (AdamW with ``decoupled=True``); ``step`` is a rank-0 integer tensor holding
    this update's number (from 1). Returns the new parameter, m and v."""
    first = call("adam", param, grad, m, v, step,
                 **_given(lr=lr, beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay,
                          decoupled=decoupled))
    return _outputs(first, "m_next", "v_next")  # type: ignore[return-value]
