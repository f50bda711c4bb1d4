"""Models for tests/onnx/onnx_import_test.sh, exported from PyTorch with torch.onnx.export.

  onnx_models.py OUT    writes OUT/<model>/{model.onnx, in/x.npy, torch/y.npy} for the MLP, the
                        small CNN, the transformer encoder layer (opset 14 and 17), a GPT-style
                        block with a causal mask (−inf at opset 14, −1e9 at opset 13), a model
                        with a dynamic batch dim, and OUT/bad/*.onnx: models the importer must
                        refuse. Exit 77 (skip) with the reason when torch or onnx is missing.
"""
import os
import sys

try:
    import numpy as np
    import onnx
    import onnx.helper as oh
    import torch
except Exception as e:  # noqa: BLE001 - any import failure means "skip"
    print(f"skip: python3 cannot import torch/onnx/numpy: {e}")
    sys.exit(77)

torch.manual_seed(0)
out = sys.argv[1]


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(32, 64)
        self.fc2 = torch.nn.Linear(64, 16)

    def forward(self, x):
        return torch.softmax(self.fc2(torch.tanh(self.fc1(x))), dim=-1)


class ConvBn(torch.nn.Module):
    """Conv + BatchNorm (eval): the export folds them into one Conv whose weight and bias
    PyTorch names onnx::Conv_<n>; the import names them after the Conv node."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, bias=False)
        self.bn = torch.nn.BatchNorm2d(4)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-1, 1)
            self.bn.running_var.uniform_(0.5, 2)
            self.bn.weight.uniform_(0.5, 2)
            self.bn.bias.uniform_(-1, 1)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.pool = torch.nn.MaxPool2d(2)
        self.avg = torch.nn.AvgPool2d(2)
        self.fc = torch.nn.Linear(16 * 2 * 2, 10)

    def forward(self, x):                          # [4, 3, 16, 16]
        x = self.pool(torch.relu(self.conv1(x)))   # [4, 8, 8, 8]
        x = torch.sigmoid(self.conv2(x))           # [4, 16, 4, 4]
        x = self.avg(x)                            # [4, 16, 2, 2]
        return self.fc(torch.flatten(x, 1))


class GptBlock(torch.nn.Module):
    """A GPT-style block: pre-norm causal self-attention (nn.MultiheadAttention with a float
    attn_mask of `masked` above the diagonal, 0 elsewhere) and a GELU MLP, both residual."""

    def __init__(self, masked, d=64, heads=4, tokens=64):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(d)
        self.attn = torch.nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = torch.nn.LayerNorm(d)
        self.fc1 = torch.nn.Linear(d, 4 * d)
        self.fc2 = torch.nn.Linear(4 * d, d)
        above = torch.triu(torch.ones(tokens, tokens, dtype=torch.bool), 1)
        self.register_buffer("mask", torch.zeros(tokens, tokens).masked_fill(above, masked))

    def forward(self, x):                          # [2, 64, 64]
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, attn_mask=self.mask, need_weights=False)
        x = x + a
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


def encoder():
    return torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                            batch_first=True, activation="gelu")


def export(name, model, x, opset=14, dynamic=False):
    model.eval()
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "in"), exist_ok=True)
    os.makedirs(os.path.join(d, "torch"), exist_ok=True)
    kwargs = {"dynamic_axes": {"x": {0: "batch"}, "y": {0: "batch"}}} if dynamic else {}
    torch.onnx.export(model, (x,), os.path.join(d, "model.onnx"), opset_version=opset,
                      input_names=["x"], output_names=["y"], **kwargs)
    with torch.no_grad():
        y = model(x)
    np.save(os.path.join(d, "in", "x.npy"), x.numpy())
    np.save(os.path.join(d, "torch", "y.npy"), y.numpy())


export("mlp", Mlp(), torch.randn(8, 32))
export("cnn", Cnn(), torch.randn(4, 3, 16, 16))
export("encoder14", encoder(), torch.randn(2, 8, 32), opset=14)
export("encoder17", encoder(), torch.randn(2, 8, 32), opset=17)
export("mlp_dynamic", Mlp(), torch.randn(8, 32), dynamic=True)
export("conv_bn", ConvBn(), torch.randn(2, 3, 8, 8))
export("cnn_opset9", Cnn(), torch.randn(4, 3, 16, 16), opset=9)  # converted to 13 on import
export("gpt_causal14", GptBlock(float("-inf")), torch.randn(2, 64, 64), opset=14)
export("gpt_causal13_1e9", GptBlock(-1e9), torch.randn(2, 64, 64), opset=13)

# ---- models the importer must refuse ----------------------------------------------------------
bad = os.path.join(out, "bad")
os.makedirs(bad, exist_ok=True)
data = open(os.path.join(out, "mlp", "model.onnx"), "rb").read()
open(os.path.join(bad, "truncated.onnx"), "wb").write(data[: len(data) // 2])
open(os.path.join(bad, "not_onnx.onnx"), "wb").write(b"this is not a protobuf\xff\xff\xff")


def model(nodes, opset=14, inputs=None):
    x = oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3, 8, 8])
    y = oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    g = oh.make_graph(nodes, "bad", inputs or [x], [y])
    return oh.make_model(g, opset_imports=[oh.make_opsetid("", opset)])


def save(name, m):
    onnx.save(m, os.path.join(bad, name + ".onnx"))


save("cycle", model([oh.make_node("Add", ["x", "b"], ["a"], name="first"),
                     oh.make_node("Relu", ["a"], ["b"], name="second"),
                     oh.make_node("Relu", ["a"], ["y"], name="third")]))
save("opset99", model([oh.make_node("Relu", ["x"], ["y"], name="r")], opset=99))
save("ceil_mode", model([oh.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[2, 2],
                                      ceil_mode=1)]))
# Three blockers, the later ones after the first (--check lists all three): Cos does not map,
# MaxPool's ceil_mode is out of scope, Sin does not map; the Relu between them converts.
save("three_blockers", model([oh.make_node("Cos", ["x"], ["c"], name="cosine"),
                              oh.make_node("Relu", ["c"], ["r"], name="rectify"),
                              oh.make_node("MaxPool", ["r"], ["p"], name="pool",
                                           kernel_shape=[2, 2], ceil_mode=1),
                              oh.make_node("Sin", ["p"], ["y"], name="sine")]))
save("avgpool_exclude_pad", model([oh.make_node("AveragePool", ["x"], ["y"], name="avg",
                                                kernel_shape=[3, 3], pads=[1, 1, 1, 1])]))
save("unknown_attr", model([oh.make_node("Relu", ["x"], ["y"], name="r", alpha=0.1)]))
save("unsupported_op", model([oh.make_node("Cos", ["x"], ["y"], name="cosine")]))
save("undefined_input", model([oh.make_node("Add", ["x", "ghost"], ["y"], name="adder")]))
w = oh.make_tensor("w", onnx.TensorProto.FLOAT, [4, 6, 3, 3], [0.0] * 216)
m = model([oh.make_node("Conv", ["x", "w"], ["y"], name="grouped", group=2)])
m.graph.initializer.append(w)
save("conv_group", m)
shape = oh.make_tensor("shape", onnx.TensorProto.INT64, [3], [2**62, 101, 8])
m = model([oh.make_node("Reshape", ["x", "shape"], ["y"], name="huge")])
m.graph.initializer.append(shape)
save("reshape_overflow", m)  # found by fuzz_onnx: the element count overflowed to a negative
# Shape's integer result as a graph output (the ONNX backend's test_shape*): it must name the file,
# the output and the node that computes it.
g = oh.make_graph([oh.make_node("Shape", ["x"], ["dims"], name="shp")], "bad",
                  [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3, 8, 8])],
                  [oh.make_tensor_value_info("dims", onnx.TensorProto.INT64, [4])])
save("shape_output", oh.make_model(g, opset_imports=[oh.make_opsetid("", 14)]))
print("exported to", out)

# ---- hand-built models with numpy references (attribute combinations PyTorch rarely exports) ----
rng = np.random.default_rng(0)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def reference_model(name, nodes, x, y, inits, opset=14):
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "in"), exist_ok=True)
    os.makedirs(os.path.join(d, "torch"), exist_ok=True)
    xi = oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, list(x.shape))
    yi = oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, list(y.shape))
    g = oh.make_graph(nodes, name, [xi], [yi],
                      [onnx.numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = oh.make_model(g, opset_imports=[oh.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(d, "model.onnx"))
    np.save(os.path.join(d, "in", "x.npy"), x)
    np.save(os.path.join(d, "torch", "y.npy"), y.astype(np.float32))


import onnx.numpy_helper  # noqa: E402

# Gemm with transA, no transB, alpha, beta and a [M, N] C; then a second Gemm with transB and a
# [1, N] C broadcasting.
x, b1, c1 = f32(6, 4), f32(6, 5), f32(4, 5)
w2, c2 = f32(3, 5), f32(1, 3)
h = 0.5 * x.T @ b1 + 2.0 * c1
reference_model("gemm", [
    oh.make_node("Gemm", ["x", "b1", "c1"], ["h"], name="g1", transA=1, alpha=0.5, beta=2.0),
    oh.make_node("Gemm", ["h", "w2", "c2"], ["y"], name="g2", transB=1),
], x, h @ w2.T + c2, {"b1": b1, "c1": c1, "w2": w2, "c2": c2})

# Reductions with keepdims on and off, Softmax over a middle axis, Unsqueeze/Squeeze.
x = f32(2, 3, 4, 5)
s = x.sum(axis=1)                                    # ReduceSum axes [1] keepdims 0: [2, 4, 5]
mx = s.max(axis=-1, keepdims=True)                   # ReduceMax: [2, 4, 1]
e = np.exp(s - s.max(axis=1, keepdims=True))
sm = e / e.sum(axis=1, keepdims=True)                # Softmax axis 1 of s
mean = (sm * mx).mean(axis=(1, 2), keepdims=False)   # ReduceMean axes [1, 2]: [2]
reference_model("reduce", [
    oh.make_node("ReduceSum", ["x", "axes1"], ["s"], name="rsum", keepdims=0),
    oh.make_node("ReduceMax", ["s"], ["mx"], name="rmax", axes=[-1], keepdims=1),
    oh.make_node("Softmax", ["s"], ["sm"], name="soft", axis=1),
    oh.make_node("Mul", ["sm", "mx"], ["p"], name="prod"),
    oh.make_node("ReduceMean", ["p"], ["m"], name="rmean", axes=[1, 2], keepdims=0),
    oh.make_node("Unsqueeze", ["m", "axes0"], ["u"], name="unsq"),
    oh.make_node("Squeeze", ["u", "axes0"], ["y"], name="sq"),
], x, mean, {"axes1": np.array([1], np.int64), "axes0": np.array([0], np.int64)}, opset=13)

# GlobalAveragePool and Pow/Sqrt.
x = np.abs(f32(2, 3, 4, 4)) + 0.1
reference_model("pool", [
    oh.make_node("GlobalAveragePool", ["x"], ["g"], name="gap"),
    oh.make_node("Pow", ["g", "two"], ["p"], name="square"),
    oh.make_node("Sqrt", ["p"], ["y"], name="root"),
], x, np.sqrt(x.mean(axis=(2, 3), keepdims=True) ** 2), {"two": np.array(2.0, np.float32)})
# Reshape with allowzero of a tensor with no cells ([0, 3, 4] → [3, 4, 0]; the ONNX backend's
# test_reshape_allowzero_reordered): the error once showed an internal flattened shape.
reference_model("reshape_allowzero", [
    oh.make_node("Reshape", ["x", "shape"], ["y"], name="r", allowzero=1),
], np.zeros((0, 3, 4), np.float32), np.zeros((3, 4, 0), np.float32),
    {"shape": np.array([3, 4, 0], np.int64)})
# Pooling with pads (torchvision ResNet's stem: MaxPool 3×3, stride 2, pads 1) and AveragePool
# with pads counted (count_include_pad=1, PyTorch's default), against numpy.
def pool_ref(x, k, s, p, fill, reduce):
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), constant_values=fill)
    oh_, ow_ = (xp.shape[2] - k) // s + 1, (xp.shape[3] - k) // s + 1
    y = np.empty(x.shape[:2] + (oh_, ow_), np.float32)
    for i in range(oh_):
        for j in range(ow_):
            y[:, :, i, j] = reduce(xp[:, :, i * s:i * s + k, j * s:j * s + k], axis=(2, 3))
    return y


x = f32(2, 3, 9, 9) - 3.0  # mostly negative: a zero pad would change the maxima
mp = pool_ref(x, 3, 2, 1, -np.inf, np.max)
reference_model("pool_pads", [
    oh.make_node("MaxPool", ["x"], ["m"], name="maxpool", kernel_shape=[3, 3], strides=[2, 2],
                 pads=[1, 1, 1, 1]),
    oh.make_node("AveragePool", ["m"], ["y"], name="avgpool", kernel_shape=[2, 2],
                 strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=1),
], x, pool_ref(mp, 2, 1, 1, 0.0, np.mean), {})

# Activations, variadic ops, Dropout and BatchNormalization (import-time rewrites into kernels),
# one model each, against numpy's formulas.
x = f32(2, 3, 4, 5) * 3
sl = np.abs(f32(3, 1, 1)) * 0.3
z = f32(2, 3, 4, 5)
bn = {"scale": f32(3), "bias": f32(3), "mean": f32(3), "var": np.abs(f32(3)) + 0.5}
def sig(v, a, b): return np.clip(a * v + b, 0, 1)
def elu(v, a): return np.where(v > 0, v, a * (np.exp(v) - 1))
ACTIVATIONS = {
    "abs": ([oh.make_node("Abs", ["x"], ["y"])], np.abs(x), {}),
    "clip": ([oh.make_node("Clip", ["x", "lo", "hi"], ["y"])], np.clip(x, -1.5, 2.0),
             {"lo": np.array(-1.5, np.float32), "hi": np.array(2.0, np.float32)}),
    "clip_hi_only": ([oh.make_node("Clip", ["x", "", "hi"], ["y"])], np.minimum(x, 0.5),
                     {"hi": np.array(0.5, np.float32)}),
    "leaky_relu": ([oh.make_node("LeakyRelu", ["x"], ["y"], alpha=0.1)],
                   np.where(x > 0, x, 0.1 * x), {}),
    "leaky_relu_steep": ([oh.make_node("LeakyRelu", ["x"], ["y"], alpha=3.0)],
                         np.where(x > 0, x, 3.0 * x), {}),
    "prelu": ([oh.make_node("PRelu", ["x", "slope"], ["y"])], np.where(x > 0, x, sl * x),
              {"slope": sl}),
    "hard_sigmoid": ([oh.make_node("HardSigmoid", ["x"], ["y"], alpha=0.3, beta=0.4)],
                     sig(x, 0.3, 0.4), {}),
    "hard_swish": ([oh.make_node("HardSwish", ["x"], ["y"])], x * sig(x, 1 / 6, 0.5), {}),
    "elu": ([oh.make_node("Elu", ["x"], ["y"], alpha=0.7)], elu(x, 0.7), {}),
    "selu": ([oh.make_node("Selu", ["x"], ["y"])],
             1.0507009873554805 * elu(x, 1.6732632423543772), {}),
    "celu": ([oh.make_node("Celu", ["x"], ["y"], alpha=2.0)],
             np.maximum(x, 0) + np.minimum(0, 2.0 * (np.exp(x / 2.0) - 1)), {}),
    "reciprocal": ([oh.make_node("Reciprocal", ["x"], ["y"])], 1 / (np.abs(x) + 0.5),
                   {}),  # x replaced below
    "max_min_sum_mean": ([oh.make_node("Max", ["x", "z", "sl"], ["a"]),
                          oh.make_node("Min", ["x", "z"], ["b"]),
                          oh.make_node("Sum", ["a", "b", "x"], ["c"]),
                          oh.make_node("Mean", ["c", "z", "x"], ["y"])],
                         ((np.maximum(np.maximum(x, z), sl) + np.minimum(x, z) + x) + z + x) / 3,
                         {"z": z, "sl": sl}),
    "dropout": ([oh.make_node("Dropout", ["x"], ["d"]), oh.make_node("Relu", ["d"], ["y"])],
                np.maximum(x, 0), {}),
    "batch_norm": ([oh.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"],
                                 ["y"], epsilon=1e-3)],
                   (x - bn["mean"][:, None, None]) / np.sqrt(bn["var"][:, None, None] + 1e-3)
                   * bn["scale"][:, None, None] + bn["bias"][:, None, None], bn),
}
# Split: equal parts along axis 1, and sizes [2, 3] along the last axis (PyTorch's qkv.chunk(3)
# and torch.split export these).
a3, b3, c3 = np.split(x, 3, axis=1)
a2, b2 = x[..., :2], x[..., 2:]
ACTIVATIONS["split_equal"] = (
    [oh.make_node("Split", ["x"], ["a", "b", "c"], axis=1),
     oh.make_node("Mul", ["a", "b"], ["ab"]), oh.make_node("Sub", ["ab", "c"], ["y"])],
    a3 * b3 - c3, {})
ACTIVATIONS["split_sizes"] = (
    [oh.make_node("Split", ["x", "sizes"], ["a", "b"], axis=-1),
     oh.make_node("ReduceMean", ["a"], ["m"], axes=[-1], keepdims=1),
     oh.make_node("Add", ["m", "b"], ["y"])],
    a2.mean(axis=-1, keepdims=True) + b2, {"sizes": np.array([2, 3], np.int64)})

# LayerNormalization over the dims from axis on (not only the last): axis -2 and axis 1.
def layer_norm(v, axis, scale, bias, eps=1e-5):
    dims = tuple(range(axis % v.ndim, v.ndim))
    mu = v.mean(axis=dims, keepdims=True)
    var = v.var(axis=dims, keepdims=True)
    return (v - mu) / np.sqrt(var + eps) * scale + bias


for axis in (-2, 1):
    tail = x.shape[axis % x.ndim:]
    ln_s, ln_b = f32(*tail), f32(*tail)
    ACTIVATIONS[f"layer_norm_axis{axis}".replace("-", "m")] = (
        [oh.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=axis)],
        layer_norm(x.astype(np.float64), axis, ln_s, ln_b), {"s": ln_s, "b": ln_b})
for name, (nodes, want, inits) in ACTIVATIONS.items():
    xin = np.abs(x) + 0.5 if name == "reciprocal" else x
    reference_model("act_" + name, nodes, xin, want, inits,
                    opset=17 if name.startswith("layer_norm") else 14)

# Cast and CastLike between float dtypes (the cast kernel): f32 → f16 → relu → f32, and
# f32 → bf16 → relu → CastLike(·, x) back to f32; numpy rounds the same way (bf16 by its bits).
def to_bf16(v):
    u = v.astype(np.float32).view(np.uint32).astype(np.uint64)
    return (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)


x = f32(4, 6) * 3
reference_model("cast_f16", [
    oh.make_node("Cast", ["x"], ["h"], name="narrow", to=onnx.TensorProto.FLOAT16),
    oh.make_node("Relu", ["h"], ["r"], name="relu"),
    oh.make_node("Cast", ["r"], ["y"], name="widen", to=onnx.TensorProto.FLOAT),
], x, np.maximum(x.astype(np.float16), 0).astype(np.float32), {})
reference_model("castlike_bf16", [
    oh.make_node("Cast", ["x"], ["h"], name="narrow", to=onnx.TensorProto.BFLOAT16),
    oh.make_node("Relu", ["h"], ["r"], name="relu"),
    oh.make_node("CastLike", ["r", "x"], ["y"], name="widen"),
], x, np.maximum(to_bf16(x), 0), {}, opset=15)
print("built the reference models")
