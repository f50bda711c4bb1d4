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


class TinyVit(torch.nn.Module):
    """torchvision's ViT front and back as exported: patches by a strided conv, the class token
    prepended with `class_token.expand(n, -1, -1)` and torch.cat (ConstantOfShape, Equal, Where,
    Expand on the shape; a float Concat), a position embedding, one encoder layer, and the head
    on x[:, 0] (a float Gather with a constant index)."""

    def __init__(self, d=32):
        super().__init__()
        self.conv_proj = torch.nn.Conv2d(3, d, 4, stride=4)
        self.class_token = torch.nn.Parameter(torch.randn(1, 1, d))
        self.pos_embedding = torch.nn.Parameter(torch.randn(1, 1 + 16, d))
        self.layer = torch.nn.TransformerEncoderLayer(d, 4, 2 * d, dropout=0.0, batch_first=True)
        self.head = torch.nn.Linear(d, 10)

    def forward(self, x):                                      # [n, 3, 16, 16]
        n = x.shape[0]
        x = self.conv_proj(x).reshape(n, -1, 16).permute(0, 2, 1)  # [n, 16, d]
        x = torch.cat([self.class_token.expand(n, -1, -1), x], dim=1) + self.pos_embedding
        return self.head(self.layer(x)[:, 0])


def encoder():
    return torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                            batch_first=True, activation="gelu")


class Mobile(torch.nn.Module):
    """MobileNet-style blocks: a grouped 3×3 convolution (4 groups), a depthwise 3×3 with
    ReLU6, a depthwise 5×5 with stride 2 and a channel multiplier of 2, a pointwise 1×1 —
    ONNX Conv with group > 1 → grouped_conv2d."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.grouped = torch.nn.Conv2d(16, 16, 3, padding=1, groups=4)
        self.dw = torch.nn.Conv2d(16, 16, 3, padding=1, groups=16, bias=False)
        self.dw2 = torch.nn.Conv2d(16, 32, 5, stride=2, padding=2, groups=16)
        self.pw = torch.nn.Conv2d(32, 8, 1)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        x = torch.relu(self.grouped(x))
        x = torch.nn.functional.relu6(self.dw(x))
        return self.pw(torch.relu(self.dw2(x)))


def export(name, model, x, opset=14, dynamic=False, axes=None, also=()):
    """Exports `model` at input `x` (OUT/NAME/model.onnx, in/x.npy, torch/y.npy); `dynamic` or
    `axes` ({axis: name}) make x's (and y's) dims dynamic, and each input in `also` is saved
    with PyTorch's output as OUT/NAME/at<K>/{in/x.npy,torch/y.npy} (K its index)."""
    model.eval()
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "in"), exist_ok=True)
    os.makedirs(os.path.join(d, "torch"), exist_ok=True)
    axes = axes or ({0: "batch"} if dynamic else None)
    kwargs = {"dynamic_axes": {"x": axes, "y": axes}} if axes else {}
    torch.onnx.export(model, (x,), os.path.join(d, "model.onnx"), opset_version=opset,
                      input_names=["x"], output_names=["y"], **kwargs)
    for k, (sub, xin) in enumerate([("", x)] + [(f"at{k}", a) for k, a in enumerate(also)]):
        for part in ("in", "torch"):
            os.makedirs(os.path.join(d, sub, part), exist_ok=True)
        with torch.no_grad():
            y = model(xin)
        np.save(os.path.join(d, sub, "in", "x.npy"), xin.numpy())
        np.save(os.path.join(d, sub, "torch", "y.npy"), y.numpy())


export("mlp", Mlp(), torch.randn(8, 32))
export("cnn", Cnn(), torch.randn(4, 3, 16, 16))
export("mobile", Mobile(), torch.randn(2, 3, 12, 12))
export("encoder14", encoder(), torch.randn(2, 8, 32), opset=14)
export("encoder17", encoder(), torch.randn(2, 8, 32), opset=17)
export("mlp_dynamic", Mlp(), torch.randn(8, 32), dynamic=True, also=[torch.randn(3, 32)])
# Dynamic axes kept as .tap dim variables: the flatten's reshape follows the batch; the encoder's
# reshapes follow batch and sequence length (batch*heads, seq*…).
export("cnn_dynamic", Cnn(), torch.randn(4, 3, 16, 16), dynamic=True,
       also=[torch.randn(1, 3, 16, 16), torch.randn(6, 3, 16, 16)])
export("encoder_dynamic", encoder(), torch.randn(2, 8, 32), opset=17,
       axes={0: "batch", 1: "seq"}, also=[torch.randn(3, 5, 32), torch.randn(1, 12, 32)])
export("conv_bn", ConvBn(), torch.randn(2, 3, 8, 8))
export("cnn_opset9", Cnn(), torch.randn(4, 3, 16, 16), opset=9)  # converted to 13 on import
export("gpt_causal14", GptBlock(float("-inf")), torch.randn(2, 64, 64), opset=14)
export("gpt_causal13_1e9", GptBlock(-1e9), torch.randn(2, 64, 64), opset=13)
export("tiny_vit", TinyVit(), torch.randn(2, 3, 16, 16), opset=13)



# Integer data at run time (issue 30): an embedding lookup of int64 ids fed as an input (gather),
# an argmax of the logits (an int64 output), x ** y of two graph tensors (pow).
class Tagger(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(50, 16)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, ids, x):                     # [2, 7] int64, [2, 7, 16]
        h = self.emb(ids) + x
        logits = self.fc(torch.tanh(h))
        return logits, torch.argmax(logits, dim=-1), torch.pow(torch.sigmoid(h) + 0.5, x)


def export_multi(name, model, inputs, outputs, opset=14):
    """As export, for named inputs and outputs: OUT/NAME/in/<input>.npy, torch/<output>.npy."""
    model.eval()
    d = os.path.join(out, name)
    for part in ("in", "torch"):
        os.makedirs(os.path.join(d, part), exist_ok=True)
    torch.onnx.export(model, tuple(inputs.values()), os.path.join(d, "model.onnx"),
                      opset_version=opset, input_names=list(inputs), output_names=outputs)
    with torch.no_grad():
        results = model(*inputs.values())
    for k, v in inputs.items():
        np.save(os.path.join(d, "in", k + ".npy"), v.numpy())
    for k, v in zip(outputs, results):
        np.save(os.path.join(d, "torch", k + ".npy"), v.numpy())


export_multi("tagger", Tagger(), {"ids": torch.randint(0, 50, (2, 7)), "x": torch.randn(2, 7, 16)},
             ["logits", "tag", "p"])

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
save("pool_storage_order", model([oh.make_node("MaxPool", ["x"], ["y"], name="pool",
                                               kernel_shape=[2, 2], storage_order=1)]))
# Three blockers, the later ones after the first (--check lists all three): Cos does not map,
# MaxPool's storage_order=1 (column-major indices) is out of scope, Sin does not map; the Relu
# between them converts.
save("three_blockers", model([oh.make_node("Cos", ["x"], ["c"], name="cosine"),
                              oh.make_node("Relu", ["c"], ["r"], name="rectify"),
                              oh.make_node("MaxPool", ["r"], ["p"], name="pool",
                                           kernel_shape=[2, 2], storage_order=1),
                              oh.make_node("Sin", ["p"], ["y"], name="sine")]))
# The same past a blocker on a float16 input: the stand-in for Cos's output is float16 too.
g = oh.make_graph([oh.make_node("Cos", ["x"], ["c"], name="cosine"),
                   oh.make_node("MaxPool", ["c"], ["y"], name="pool", kernel_shape=[2, 2],
                                storage_order=1)], "bad",
                  [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT16, [2, 3, 8, 8])],
                  [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT16, None)])
save("f16_blockers", oh.make_model(g, opset_imports=[oh.make_opsetid("", 14)]))
save("unknown_attr", model([oh.make_node("Relu", ["x"], ["y"], name="r", alpha=0.1)]))
save("unsupported_op", model([oh.make_node("Cos", ["x"], ["y"], name="cosine")]))
save("undefined_input", model([oh.make_node("Add", ["x", "ghost"], ["y"], name="adder")]))
# Filters for 2 groups of 6 channels: x has 3 (grouped_conv2d's check, named after the node).
w = oh.make_tensor("w", onnx.TensorProto.FLOAT, [4, 6, 3, 3], [0.0] * 216)
m = model([oh.make_node("Conv", ["x", "w"], ["y"], name="grouped", group=2)])
m.graph.initializer.append(w)
save("conv_group", m)
shape = oh.make_tensor("shape", onnx.TensorProto.INT64, [3], [2**62, 101, 8])
m = model([oh.make_node("Reshape", ["x", "shape"], ["y"], name="huge")])
m.graph.initializer.append(shape)
save("reshape_overflow", m)  # found by fuzz_onnx: the element count overflowed to a negative
# Shape's integer result as a graph output (the ONNX backend's test_shape*): an int64 weight.
g = oh.make_graph([oh.make_node("Shape", ["x"], ["dims"], name="shp")], "bad",
                  [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3, 8, 8])],
                  [oh.make_tensor_value_info("dims", onnx.TensorProto.INT64, [4])])
save("shape_output", oh.make_model(g, opset_imports=[oh.make_opsetid("", 14)]))
# A mask computed from data (x > 0) choosing between integer constants: refused at its node (a
# computed mask choosing floats is the where kernel: tests/onnx/onnx_masks_test.sh); and Gather
# of float indices (here the float x): refused, indices must be int32 or int64.
m = model([oh.make_node("Greater", ["x", "zero"], ["m"], name="positive"),
           oh.make_node("Where", ["m", "ione", "izero"], ["w"], name="select"),
           oh.make_node("Cast", ["w"], ["y"], to=onnx.TensorProto.FLOAT)])
m.graph.initializer.extend([oh.make_tensor("zero", onnx.TensorProto.FLOAT, [], [0.0]),
                            oh.make_tensor("ione", onnx.TensorProto.INT64, [], [1]),
                            oh.make_tensor("izero", onnx.TensorProto.INT64, [], [0])])
save("computed_mask", m)
# ConstantOfShape of [10¹², 1]: the import must refuse it, not try to allocate it.
m = model([oh.make_node("ConstantOfShape", ["big"], ["c"], name="huge"),
           oh.make_node("Add", ["x", "c"], ["y"], name="plus")])
m.graph.initializer.append(oh.make_tensor("big", onnx.TensorProto.INT64, [2], [10**12, 1]))
save("huge_constant", m)
save("computed_indices", model([oh.make_node("Gather", ["x", "x"], ["y"], name="lookup")]))
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

# Conv beyond 2-D with equal pads, against torch.nn.functional in float64: 1-D (grouped, stride,
# uneven pads), 2-D with uneven pads (pad2d before the conv), auto_pad SAME_UPPER and
# SAME_LOWER with stride 2 (the odd cell at the end / the start), a depthwise layer with a
# computed bias, and Pad with uneven amounts on the last two dims.
def t64(a):
    return torch.from_numpy(a.astype(np.float64))


def conv_ref(x, w, b=None, stride=1, pads=None, groups=1):
    """pads: ONNX order (begins, then ends), applied by F.pad (last dim first)."""
    xt = t64(x)
    if pads:
        half = len(pads) // 2
        flat = []
        for d in reversed(range(half)):
            flat += [pads[d], pads[half + d]]
        xt = torch.nn.functional.pad(xt, flat)
    conv = torch.nn.functional.conv1d if x.ndim == 3 else torch.nn.functional.conv2d
    y = conv(xt, t64(w), None if b is None else t64(b), stride=stride, groups=groups)
    return y.numpy()


x1, w1, b1 = f32(2, 6, 17), f32(4, 3, 3), f32(4)
reference_model("conv1d", [
    oh.make_node("Conv", ["x", "w", "b"], ["y"], name="c1", group=2, strides=[2], pads=[2, 1]),
], x1, conv_ref(x1, w1, b1, 2, [2, 1], 2), {"w": w1, "b": b1})
x2, w2 = f32(2, 3, 9, 8), f32(5, 3, 3, 2)
reference_model("conv_uneven_pads", [
    oh.make_node("Conv", ["x", "w"], ["y"], name="c2", pads=[1, 0, 2, 1]),
], x2, conv_ref(x2, w2, None, 1, [1, 0, 2, 1]), {"w": w2})
x3, w3 = f32(1, 4, 9, 10), f32(4, 1, 3, 3)
reference_model("conv_same_upper", [
    oh.make_node("Conv", ["x", "w"], ["y"], name="c3", group=4, strides=[2, 2],
                 auto_pad="SAME_UPPER"),
], x3, conv_ref(x3, w3, None, 2, [1, 0, 1, 1], 4), {"w": w3})
# SAME_UPPER, k 3, stride 2: height 9 → 5 rows need 2 pads (1 and 1), width 10 → 5 columns
# need 1 (at the end). SAME_LOWER, k 4: height 3 pads (2 first, 1 after), width 2 (1 and 1).
w3l = f32(4, 2, 4, 4)
reference_model("conv_same_lower", [
    oh.make_node("Conv", ["x", "w"], ["y"], name="c4", group=2, strides=[2, 2],
                 auto_pad="SAME_LOWER"),
], x3, conv_ref(x3, w3l, None, 2, [2, 1, 1, 1], 2), {"w": w3l})
x4 = f32(2, 8, 6, 6)
w4, bsrc = f32(8, 1, 3, 3), f32(8)
reference_model("conv_depthwise_computed_bias", [
    oh.make_node("Relu", ["bsrc"], ["b"], name="rb"),
    oh.make_node("Conv", ["x", "w", "b"], ["y"], name="dw", group=8, pads=[1, 1, 1, 1]),
], x4, conv_ref(x4, w4, np.maximum(bsrc, 0), 1, [1, 1, 1, 1], 8), {"w": w4, "bsrc": bsrc})
x5 = f32(2, 3, 4, 5)
reference_model("pad_uneven", [
    oh.make_node("Pad", ["x", "pads", "v"], ["y"], name="p"),
], x5, np.pad(x5, ((0, 0), (0, 0), (1, 2), (0, 3)), constant_values=0.5),
    {"pads": np.array([0, 0, 1, 0, 0, 0, 2, 3], np.int64), "v": np.array(0.5, np.float32)})

# Pools beyond square windows, against torch.nn.functional in float64: 1-D max and average, 2-D
# with a 3×2 window and strides (2, 1), ceil_mode (max, and average where the added cells do
# not count), count_include_pad=0 with pads, uneven pads (max: −inf, by numpy).
def tpool(kind, x, k, s, p=0, ceil=False, cip=True):
    f = getattr(torch.nn.functional, f"{kind}_pool{x.ndim - 2}d")
    kw = {"count_include_pad": cip} if kind == "avg" else {}
    return f(t64(x), k, s, p, ceil_mode=ceil, **kw).numpy()


x6 = f32(2, 3, 11)
reference_model("pool1d", [
    oh.make_node("MaxPool", ["x"], ["m"], name="mp", kernel_shape=[3], strides=[2], pads=[1, 1]),
    oh.make_node("AveragePool", ["m"], ["y"], name="ap", kernel_shape=[2], strides=[1]),
], x6, tpool("avg", tpool("max", x6, 3, 2, 1), 2, 1), {})
x7 = f32(2, 3, 9, 8)
reference_model("pool_rect", [
    oh.make_node("MaxPool", ["x"], ["m"], name="mp", kernel_shape=[3, 2], strides=[2, 1]),
    oh.make_node("AveragePool", ["m"], ["y"], name="ap", kernel_shape=[1, 3], strides=[1, 2]),
], x7, tpool("avg", tpool("max", x7, (3, 2), (2, 1)), (1, 3), (1, 2)), {})
x8 = f32(2, 3, 8, 8)
reference_model("pool_ceil", [
    oh.make_node("MaxPool", ["x"], ["m"], name="mp", kernel_shape=[3, 3], strides=[2, 2],
                 ceil_mode=1),
    oh.make_node("AveragePool", ["m"], ["y"], name="ap", kernel_shape=[2, 2], strides=[2, 2],
                 ceil_mode=1, pads=[1, 1, 1, 1], count_include_pad=1),
], x8, tpool("avg", tpool("max", x8, 3, 2, ceil=True), 2, 2, 1, ceil=True), {})
reference_model("avgpool_exclude_pad", [
    oh.make_node("AveragePool", ["x"], ["y"], name="ap", kernel_shape=[3, 3], strides=[2, 2],
                 pads=[1, 1, 1, 1], count_include_pad=0),
], x8, tpool("avg", x8, 3, 2, 1, cip=False), {})
xp = np.pad(x8.astype(np.float64), ((0, 0), (0, 0), (0, 2), (1, 0)), constant_values=-np.inf)
reference_model("maxpool_uneven_pads", [
    oh.make_node("MaxPool", ["x"], ["y"], name="mp", kernel_shape=[3, 3], strides=[1, 2],
                 pads=[0, 1, 2, 0]),
], x8 - 3.0, tpool("max", xp - 3.0, 3, (1, 2)), {})

# 3-D: Conv with a bias, stride 2 and uneven pads (pad3d, conv3d), MaxPool with ceil_mode and
# AveragePool with pads counted (max_pool3d, avg_pool3d), against torch in float64.
x12, w12, b12 = f32(2, 3, 6, 7, 8), f32(4, 3, 3, 2, 3), f32(4)
xt12 = torch.nn.functional.pad(t64(x12), (1, 2, 0, 1, 1, 0))  # (w: 1, 2), (h: 0, 1), (d: 1, 0)
c12 = torch.nn.functional.conv3d(xt12, t64(w12), t64(b12), stride=2)
m12 = torch.nn.functional.max_pool3d(c12, 2, 2, ceil_mode=True)
y12 = torch.nn.functional.avg_pool3d(m12, (1, 2, 2), 1, (0, 1, 1), count_include_pad=True)
reference_model("conv3d_pool3d", [
    oh.make_node("Conv", ["x", "w", "b"], ["c"], name="c3", strides=[2, 2, 2],
                 pads=[1, 0, 1, 0, 1, 2]),
    oh.make_node("MaxPool", ["c"], ["m"], name="mp", kernel_shape=[2, 2, 2], strides=[2, 2, 2],
                 ceil_mode=1),
    oh.make_node("AveragePool", ["m"], ["y"], name="ap", kernel_shape=[1, 2, 2],
                 pads=[0, 1, 1, 0, 1, 1], count_include_pad=1),
], x12, y12.numpy(), {"w": w12, "b": b12})

# Dilated Conv, 1-D and 2-D (dilated_conv2d; SAME_UPPER's pads cover the dilated window).
x13, w13 = f32(2, 3, 11, 10), f32(4, 3, 3, 3)
y13 = torch.nn.functional.conv2d(torch.nn.functional.pad(t64(x13), (2, 2, 2, 2)), t64(w13),
                                 dilation=2)
reference_model("conv_dilated", [
    oh.make_node("Conv", ["x", "w"], ["y"], name="cd", dilations=[2, 2], auto_pad="SAME_UPPER"),
], x13, y13.numpy(), {"w": w13})
x14, w14, b14 = f32(2, 3, 20), f32(5, 3, 3), f32(5)
y14 = torch.nn.functional.conv1d(t64(x14), t64(w14), t64(b14), stride=2, padding=1, dilation=4)
reference_model("conv1d_dilated", [
    oh.make_node("Conv", ["x", "w", "b"], ["y"], name="cd", dilations=[4], strides=[2],
                 pads=[1, 1]),
], x14, y14.numpy(), {"w": w14, "b": b14})

# ConvTranspose (conv2d_grad_input, then slices for the pads), against torch's conv_transpose in
# float64: 2-D with stride, pads, output_padding and a bias; 1-D; output_shape (the pads it
# implies: the odd cell at the start) and auto_pad SAME_UPPER (at the end) — both cropped from
# torch's full output by hand.
def tconv(x, w, b=None, stride=1, crop=None, out_pad=0):
    f = torch.nn.functional.conv_transpose1d if x.ndim == 3 else torch.nn.functional.conv_transpose2d
    y = f(t64(x), t64(w), None if b is None else t64(b), stride=stride, output_padding=out_pad)
    return y.numpy() if crop is None else y.numpy()[crop]


x9, w9, b9 = f32(2, 4, 5, 6), f32(4, 3, 3, 3), f32(3)
reference_model("conv_transpose", [
    oh.make_node("ConvTranspose", ["x", "w", "b"], ["y"], name="up", strides=[2, 2],
                 pads=[1, 1, 1, 1], output_padding=[1, 1]),
], x9, tconv(x9, w9, b9, 2, (slice(None), slice(None), slice(1, -1), slice(1, -1)), 1),
    {"w": w9, "b": b9})
x10, w10 = f32(2, 3, 7), f32(3, 5, 4)
reference_model("conv_transpose_1d", [
    oh.make_node("ConvTranspose", ["x", "w"], ["y"], name="up", strides=[3], pads=[2, 0]),
], x10, tconv(x10, w10, None, 3, (slice(None), slice(None), slice(2, None))), {"w": w10})
# The full 2-D output: (5 − 1)·2 + 3 = 11 rows, (6 − 1)·2 + 3 = 13 columns. output_shape
# [8, 12] crops 3 rows (2 first, 1 after) and 1 column (first); SAME_UPPER's 10 × 12 crops 1
# row and 1 column, each after.
w11 = f32(4, 2, 3, 3)
reference_model("conv_transpose_output_shape", [
    oh.make_node("ConvTranspose", ["x", "w"], ["y"], name="up", strides=[2, 2],
                 output_shape=[8, 12]),
], x9, tconv(x9, w11, None, 2, (slice(None), slice(None), slice(2, 10), slice(1, 13))),
    {"w": w11})
reference_model("conv_transpose_same_upper", [
    oh.make_node("ConvTranspose", ["x", "w"], ["y"], name="up", strides=[2, 2],
                 auto_pad="SAME_UPPER"),
], x9, tconv(x9, w11, None, 2, (slice(None), slice(None), slice(0, 10), slice(0, 12))),
    {"w": w11})

# ConvTranspose with a stride per dim (3, 2), dilations (2, 1), 2 groups, uneven pads and an
# output_padding past the kernel's common stride (gcd 1): X spread by zeros, W's taps spread,
# one conv2d_grad_input per group. torch's full output (no padding), cropped by hand.
x12, w12, b12 = f32(2, 4, 5, 6), f32(4, 3, 3, 2), f32(6)
y12 = torch.nn.functional.conv_transpose2d(t64(x12), t64(w12), t64(b12), stride=(3, 2),
                                           output_padding=(2, 1), groups=2, dilation=(2, 1))
reference_model("conv_transpose_strides_dilations_groups", [
    oh.make_node("ConvTranspose", ["x", "w", "b"], ["y"], name="up", strides=[3, 2],
                 dilations=[2, 1], group=2, pads=[1, 0, 2, 1], output_padding=[2, 1]),
], x12, y12.numpy()[:, :, 1:-2, 0:-1], {"w": w12, "b": b12})

# Conv with groups where the kernel has no group dim: 3-D (conv3d per group) with pads and a
# bias, and 2-D dilated with 2 groups (dilated_conv2d per group), against torch in float64.
x15, w15, b15 = f32(2, 4, 5, 6, 7), f32(6, 2, 3, 2, 3), f32(6)
reference_model("conv3d_groups", [
    oh.make_node("Conv", ["x", "w", "b"], ["y"], name="c3", group=2, strides=[2, 2, 2],
                 pads=[1, 0, 1, 1, 0, 1]),
], x15, torch.nn.functional.conv3d(t64(x15), t64(w15), t64(b15), stride=2, padding=(1, 0, 1),
                                   groups=2).numpy(), {"w": w15, "b": b15})
x16, w16 = f32(2, 4, 11, 12), f32(6, 2, 3, 3)
reference_model("conv_dilated_groups", [
    oh.make_node("Conv", ["x", "w"], ["y"], name="cd", group=2, dilations=[2, 2], pads=[2, 2, 2, 2]),
], x16, torch.nn.functional.conv2d(t64(x16), t64(w16), None, padding=2, dilation=2,
                                   groups=2).numpy(), {"w": w16})

# MaxPool with dilations: strides (2, 3) and dilations (3, 2) share no factor, so 3·2 phases of
# plain pools interleave; pads, ceil_mode; 1-D with d | s (one phase: the input subsampled).
# Mostly negative input, so a pad value of 0 would show. Against torch's max_pool in float64.
x13 = f32(2, 3, 17, 19) - 3.0
for ceil in (0, 1):
    reference_model(f"maxpool_dilated_ceil{ceil}", [
        oh.make_node("MaxPool", ["x"], ["y"], name="mp", kernel_shape=[3, 4], strides=[2, 3],
                     dilations=[3, 2], pads=[1, 2, 1, 2], ceil_mode=ceil),
    ], x13, torch.nn.functional.max_pool2d(t64(x13), (3, 4), (2, 3), (1, 2), (3, 2),
                                           ceil_mode=bool(ceil)).numpy(), {})
x14d = f32(2, 3, 41) - 3.0
reference_model("maxpool1d_dilated", [
    oh.make_node("MaxPool", ["x"], ["y"], name="mp", kernel_shape=[5], strides=[4],
                 dilations=[2], pads=[2, 2]),
], x14d, torch.nn.functional.max_pool1d(t64(x14d), 5, 4, 2, 2).numpy(), {})

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
# Indexing, masks and the shape code around them (ops_index.cpp): float Concat, Gather, Expand,
# Tile, Where with a constant mask, Trilu, and ConstantOfShape/Range/comparisons folded.
i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
zc = f32(2, 2, 4, 5)
ACTIVATIONS["concat"] = (
    [oh.make_node("Concat", ["x", "zc", "x"], ["c"], axis=1),          # [2, 8, 4, 5]
     oh.make_node("Concat", ["c", "c"], ["cc"], axis=-1),               # [2, 8, 4, 10]
     oh.make_node("Neg", ["cc"], ["y"])],
    -np.concatenate([np.concatenate([x, zc, x], 1)] * 2, -1), {"zc": zc})
ACTIVATIONS["gather"] = (
    [oh.make_node("Gather", ["x", "zero"], ["g0"], axis=1),             # x[:, 0]: [2, 4, 5]
     oh.make_node("Gather", ["x", "idx"], ["g1"], axis=-1),             # [2, 3, 4, 2, 2]
     oh.make_node("ReduceSum", ["g1", "axes_m1"], ["s1"], keepdims=0),   # [2, 3, 4, 2]
     oh.make_node("Gather", ["s1", "one"], ["g2"], axis=1),             # [2, 4, 2]
     oh.make_node("Gather", ["g0", "two"], ["g3"], axis=-1),            # [2, 4]
     oh.make_node("Unsqueeze", ["g3", "axes_m1"], ["g4"]),              # [2, 4, 1]
     oh.make_node("Mul", ["g2", "g4"], ["y"])],
    x[..., [[4, 0], [1, 2]]].sum(-1)[:, 1] * x[:, 0][..., 2][..., None],
    {"zero": i64(0).reshape(()), "idx": i64([4, 0], [1, 2]).reshape(2, 2), "one": i64(1).reshape(()),
     "two": i64(2).reshape(()), "axes_m1": i64(-1)})
xe = x[:, :1, :, :1]                                                    # [2, 1, 4, 1]
ACTIVATIONS["expand_tile"] = (
    [oh.make_node("Slice", ["x", "s0", "s1", "sax"], ["xe"]),
     oh.make_node("Expand", ["xe", "shape"], ["e"]),                    # [3, 2, 2, 4, 5]
     oh.make_node("Tile", ["x", "reps"], ["t"]),                        # [2, 3, 8, 10]
     oh.make_node("Slice", ["t", "t0", "t1", "tax"], ["ts"]),           # [2, 2, 4, 5]
     oh.make_node("Add", ["e", "ts"], ["y"])],
    np.broadcast_to(xe, (3, 2, 2, 4, 5)) + np.tile(x, (1, 1, 2, 2))[:, 1:, 4:, 3:8],
    {"s0": i64(0, 0), "s1": i64(1, 1), "sax": i64(1, 3), "shape": i64(3, 1, 2, 1, 5),
     "reps": i64(1, 1, 2, 2), "t0": i64(1, 4, 3), "t1": i64(3, 8, 8), "tax": i64(1, 2, 3)})
# A causal mask built as PyTorch's exporters do: Range → Unsqueeze → LessOrEqual (a constant
# boolean mask), Where(mask, x, −1e9), then Trilu of the result; ConstantOfShape/Equal/Where
# on the shape (x.expand(n, -1, -1)) choose the Expand's shape.
rows = np.arange(4)
causal = rows[None, :] <= rows[:, None]                                 # [4, 4]: col ≤ row
xm = f32(2, 3, 4, 4)
masked = np.where(causal, xm, np.float32(-1e9))
ACTIVATIONS["mask_where_trilu"] = (
    [oh.make_node("Range", ["r0", "r4", "r1"], ["r"]),
     oh.make_node("Unsqueeze", ["r", "ax0"], ["rcol"]),                  # [1, 4]
     oh.make_node("Unsqueeze", ["r", "ax1"], ["rrow"]),                  # [4, 1]
     oh.make_node("LessOrEqual", ["rcol", "rrow"], ["le"]),
     oh.make_node("Greater", ["rcol", "rrow"], ["gt"]),
     oh.make_node("Not", ["gt"], ["ngt"]),
     oh.make_node("And", ["le", "ngt"], ["mask"]),
     oh.make_node("Where", ["mask", "x", "big"], ["w"]),
     oh.make_node("Trilu", ["w"], ["tl"], upper=0),
     oh.make_node("Trilu", ["x", "k1"], ["tu"], upper=1),
     oh.make_node("ConstantOfShape", ["n3"], ["ones"], value=oh.make_tensor("v", onnx.TensorProto.INT64, [1], [1])),
     oh.make_node("Mul", ["ones", "m1"], ["minus"]),
     oh.make_node("Equal", ["target", "minus"], ["eq"]),
     oh.make_node("Where", ["eq", "ones", "target"], ["shape"]),        # [2, 3, 1, 1]
     oh.make_node("Expand", ["bias", "shape"], ["be"]),                 # [2, 3, 1, 4]
     oh.make_node("Add", ["tl", "tu"], ["s"]),
     oh.make_node("Add", ["s", "be"], ["y"])],
    np.tril(masked) + np.triu(xm, 1) + np.broadcast_to(np.float32([1, 2, 3, 4]).reshape(1, 1, 1, 4), (2, 3, 1, 4)),
    {"r0": i64(0).reshape(()), "r4": i64(4).reshape(()), "r1": i64(1).reshape(()),
     "ax0": i64(0), "ax1": i64(1), "big": np.float32(-1e9).reshape(()), "k1": i64(1).reshape(()),
     "n3": i64(4), "m1": i64(-1).reshape(()), "target": i64(2, 3, -1, -1),
     "bias": np.float32([1, 2, 3, 4]).reshape(1, 1, 1, 4)})
# Slice with steps: x[:, ::-1, :, 1::2] (a negative step from the end, and a step of 2).
ACTIVATIONS["slice_steps"] = (
    [oh.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["s"]), oh.make_node("Neg", ["s"], ["y"])],
    -x[:, ::-1, :, 1::2],
    {"st": i64(-1, 1), "en": i64(-2**63, 2**62), "ax": i64(1, 3), "sp": i64(-1, 2)})
# The other reductions, LogSoftmax, Log and Softplus (ops_reduce.cpp), against numpy in float64.
xd = x.astype(np.float64)
def log_softmax(v, axis):
    m = v.max(axis=axis, keepdims=True)
    return v - m - np.log(np.exp(v - m).sum(axis=axis, keepdims=True))
ACTIVATIONS["log_softmax"] = (
    [oh.make_node("LogSoftmax", ["x"], ["a"], axis=1), oh.make_node("LogSoftmax", ["x"], ["b"]),
     oh.make_node("Add", ["a", "b"], ["y"])],
    log_softmax(xd, 1) + log_softmax(xd, -1), {})
ACTIVATIONS["log_softplus"] = (
    [oh.make_node("Softplus", ["x"], ["s"]), oh.make_node("Log", ["s"], ["y"])],
    np.log(np.logaddexp(0, xd)), {})
ACTIVATIONS["softplus_extremes"] = (  # x·30: exp(x) would overflow float32 beyond 88.7
    [oh.make_node("Mul", ["x", "k"], ["big"]), oh.make_node("Softplus", ["big"], ["y"])],
    np.logaddexp(0, xd * 30), {"k": np.array(30, np.float32)})
ACTIVATIONS["reduce_more"] = (
    [oh.make_node("ReduceMin", ["x"], ["mn"], axes=[1, 3], keepdims=1),         # [2, 1, 4, 1]
     oh.make_node("ReduceProd", ["x"], ["pr"], axes=[-1], keepdims=1),          # [2, 3, 4, 1]
     oh.make_node("ReduceL1", ["x"], ["l1"], axes=[1], keepdims=1),             # [2, 1, 4, 5]
     oh.make_node("ReduceL2", ["x"], ["l2"], axes=[0, 2], keepdims=1),          # [1, 3, 1, 5]
     oh.make_node("ReduceSumSquare", ["x"], ["ss"], axes=[3], keepdims=1),      # [2, 3, 4, 1]
     oh.make_node("ReduceLogSumExp", ["x"], ["ls"], axes=[1, 2], keepdims=0),   # [2, 5]
     oh.make_node("Add", ["mn", "pr"], ["a1"]), oh.make_node("Add", ["a1", "l1"], ["a2"]),
     oh.make_node("Add", ["a2", "l2"], ["a3"]), oh.make_node("Add", ["a3", "ss"], ["a4"]),
     oh.make_node("Unsqueeze", ["ls", "ax12"], ["lsu"]),
     oh.make_node("Add", ["a4", "lsu"], ["y"])],
    xd.min(axis=(1, 3), keepdims=True) + xd.prod(axis=-1, keepdims=True)
    + np.abs(xd).sum(axis=1, keepdims=True) + np.sqrt((xd * xd).sum(axis=(0, 2), keepdims=True))
    + (xd * xd).sum(axis=3, keepdims=True)
    + np.log(np.exp(xd).sum(axis=(1, 2)))[:, None, None, :],
    {"ax12": np.array([1, 2], np.int64)})
# Pad modes reflect and edge (copies of cells: slices and concats), on any dims, against numpy.
ACTIVATIONS["pad_reflect"] = (
    [oh.make_node("Pad", ["x", "pads"], ["y"], mode="reflect")],
    np.pad(x, ((0, 0), (0, 0), (2, 1), (1, 4)), mode="reflect"),
    {"pads": i64(0, 0, 2, 1, 0, 0, 1, 4)})
ACTIVATIONS["pad_edge"] = (
    [oh.make_node("Pad", ["x", "pads"], ["y"], mode="edge")],
    np.pad(x, ((0, 0), (1, 2), (0, 0), (3, 1)), mode="edge"),
    {"pads": i64(0, 1, 0, 3, 0, 2, 0, 1)})
# InstanceNormalization: each (n, c) plane over its spatial dims, scale and B per channel.
in_s, in_b = f32(3), f32(3)
mu, var = xd.mean(axis=(2, 3), keepdims=True), xd.var(axis=(2, 3), keepdims=True)
ACTIVATIONS["instance_norm"] = (
    [oh.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-3)],
    (xd - mu) / np.sqrt(var + 1e-3) * in_s[:, None, None] + in_b[:, None, None],
    {"s": in_s, "b": in_b})
# Softsign, ReduceLogSum, GlobalMaxPool, DepthToSpace (DCR, CRD) and SpaceToDepth, against
# numpy (the depth/space rearrangements as ONNX's reference writes them).
def d2s(v, b, mode):
    n, c, h, w = v.shape
    if mode == "DCR":
        t = v.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        t = v.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return t.reshape(n, c // (b * b), h * b, w * b)
def s2d(v, b):
    n, c, h, w = v.shape
    return v.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4).reshape(
        n, c * b * b, h // b, w // b)
ACTIVATIONS["softsign_logsum"] = (
    [oh.make_node("Softsign", ["x"], ["s"]), oh.make_node("Exp", ["s"], ["e"]),
     oh.make_node("ReduceLogSum", ["e"], ["l"], axes=[1, 3], keepdims=1),
     oh.make_node("Add", ["s", "l"], ["y"])],
    xd / (1 + np.abs(xd)) + np.log(np.exp(xd / (1 + np.abs(xd))).sum(axis=(1, 3), keepdims=True)),
    {})
ACTIVATIONS["global_max_pool"] = (
    [oh.make_node("GlobalMaxPool", ["x"], ["g"]), oh.make_node("Add", ["x", "g"], ["y"])],
    xd + xd.max(axis=(2, 3), keepdims=True), {})
ACTIVATIONS["depth_space"] = (
    [oh.make_node("Concat", ["x", "x"], ["x6"], axis=1),                   # [2, 6, 4, 5]
     oh.make_node("Slice", ["x6", "s0", "s1", "sax"], ["x4"]),             # [2, 4, 4, 4]
     oh.make_node("DepthToSpace", ["x4"], ["dcr"], blocksize=2),           # [2, 1, 8, 8]
     oh.make_node("DepthToSpace", ["x4"], ["crd"], blocksize=2, mode="CRD"),
     oh.make_node("Sub", ["dcr", "crd"], ["d"]),
     oh.make_node("SpaceToDepth", ["d"], ["y"], blocksize=4)],             # [2, 16, 2, 2]
    s2d(d2s(np.concatenate([x, x], 1)[:, :4, :, :4], 2, "DCR")
        - d2s(np.concatenate([x, x], 1)[:, :4, :, :4], 2, "CRD"), 4),
    {"s0": i64(0, 0), "s1": i64(4, 4), "sax": i64(1, 3)})
for name, (nodes, want, inits) in ACTIVATIONS.items():
    xin = np.abs(x) + 0.5 if name == "reciprocal" else xm if name.startswith("mask") else x
    reference_model("act_" + name, nodes, xin, want, inits,
                    opset=17 if name.startswith("layer_norm") else 14)

# Resize nearest as PyTorch exports nn.Upsample / F.interpolate (asymmetric, floor) with constant
# scales: ×2 and ×3 (repeats), then ×0.5 (every other row), against torch's interpolate.
xu = f32(2, 3, 4, 5)
yu = torch.nn.functional.interpolate(t64(xu), scale_factor=(2, 3), mode="nearest")
yu = torch.nn.functional.interpolate(yu, scale_factor=(0.5, 1), mode="nearest")
reference_model("resize_nearest", [
    oh.make_node("Resize", ["x", "", "up"], ["u"], name="up", mode="nearest",
                 coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    oh.make_node("Resize", ["u", "", "down"], ["y"], name="down", mode="nearest",
                 coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
], xu, yu.numpy(), {"up": np.float32([1, 1, 2, 3]), "down": np.float32([1, 1, 0.5, 1])}, opset=13)

# Resize linear and cubic as PyTorch exports F.interpolate (bilinear: pytorch_half_pixel, or
# align_corners; bicubic: a = -0.75), up and down by non-integer factors, against torch; then
# a linear Resize of the channels and the rows of a [2, 3, 4, 5] (a middle axis: permuted) with
# asymmetric coordinates and a cubic with exclude_outside, against ONNX's reference (the
# interpolate_nd of onnx's backend test cases).
xl = f32(2, 3, 5, 7)
yl = torch.nn.functional.interpolate(t64(xl), size=(8, 4), mode="bilinear", align_corners=False)
yl = torch.nn.functional.interpolate(yl, size=(3, 9), mode="bilinear", align_corners=True)
yl = torch.nn.functional.interpolate(yl, size=(7, 6), mode="bicubic", align_corners=False)
reference_model("resize_linear_cubic", [
    oh.make_node("Resize", ["x", "", "", "s1"], ["a"], name="bilinear", mode="linear",
                 coordinate_transformation_mode="pytorch_half_pixel"),
    oh.make_node("Resize", ["a", "", "", "s2"], ["b"], name="corners", mode="linear",
                 coordinate_transformation_mode="align_corners"),
    oh.make_node("Resize", ["b", "", "", "s3"], ["y"], name="bicubic", mode="cubic",
                 coordinate_transformation_mode="pytorch_half_pixel", cubic_coeff_a=-0.75),
], xl, yl.numpy(), {"s1": np.array([2, 3, 8, 4], np.int64), "s2": np.array([2, 3, 3, 9], np.int64),
                    "s3": np.array([2, 3, 7, 6], np.int64)}, opset=13)
from onnx.backend.test.case.node.resize import (  # noqa: E402
    interpolate_nd, linear_coeffs, cubic_coeffs)
xl = f32(2, 3, 4, 5)
sc1 = np.array([1, 2, 1.5, 1], np.float32)
y1 = interpolate_nd(xl.astype(np.float64), linear_coeffs, scale_factors=sc1.astype(np.float64),
                    coordinate_transformation_mode="asymmetric")
sc2 = np.array([1, 1, 0.5, 1.8], np.float32)
y2 = interpolate_nd(y1, lambda r: cubic_coeffs(r, A=-0.5), scale_factors=sc2.astype(np.float64),
                    exclude_outside=True)
reference_model("resize_middle_axis", [
    oh.make_node("Resize", ["x", "", "sc1"], ["a"], name="channels", mode="linear",
                 coordinate_transformation_mode="asymmetric"),
    oh.make_node("Resize", ["a", "", "sc2"], ["y"], name="cubic", mode="cubic",
                 cubic_coeff_a=-0.5, exclude_outside=1),
], xl, y2, {"sc1": sc1, "sc2": sc2}, opset=13)

# Floor, Ceil, Round (halves to even) on multiples of 0.5 — ties everywhere — and Floor of a
# computed x·3 (a product whose bar straddles the integers it lands on: --verify must allow the
# one step it may move), against numpy.
xr = (np.round(f32(2, 3, 4, 5) * 4) / 2).astype(np.float32)
reference_model("floor_ceil_round", [
    oh.make_node("Floor", ["x"], ["f"]), oh.make_node("Ceil", ["x"], ["c"]),
    oh.make_node("Round", ["x"], ["r"]), oh.make_node("Mul", ["x", "three"], ["x3"]),
    oh.make_node("Floor", ["x3"], ["f3"]),
    oh.make_node("Mul", ["c", "ten"], ["c10"]), oh.make_node("Mul", ["r", "hundred"], ["r100"]),
    oh.make_node("Mul", ["f3", "thousand"], ["f1000"]),
    oh.make_node("Sum", ["f", "c10", "r100", "f1000"], ["y"])],
    xr, np.floor(xr) + 10 * np.ceil(xr) + 100 * np.round(xr) + 1000 * np.floor(3 * xr),
    {"three": np.float32(3), "ten": np.float32(10), "hundred": np.float32(100),
     "thousand": np.float32(1000)})

# Opset-6 models, converted on import: PRelu's [C] slope is per channel there (not numpy
# broadcasting along the last dim), and Add with broadcast=1 of a Constant and Softmax, whose
# adapters need shapes that only shape inference gives (PyTorch's old test_Softmin, test_operator_
# addconstant).
reference_model("prelu_opset6", [oh.make_node("PRelu", ["x", "slope"], ["y"])], x,
                np.where(x > 0, x, sl.reshape(3)[:, None, None] * x), {"slope": sl.reshape(3)},
                opset=6)
reference_model("broadcast_opset6", [
    oh.make_node("Constant", [], ["c"], value=onnx.numpy_helper.from_array(np.float32(0.25))),
    oh.make_node("Add", ["x", "c"], ["a"], broadcast=1),
    oh.make_node("Neg", ["a"], ["n"]),
    oh.make_node("Softmax", ["n"], ["y"], axis=1)],
    x, (lambda v: np.exp(v - v.max(axis=(1, 2, 3), keepdims=True))
        / np.exp(v - v.max(axis=(1, 2, 3), keepdims=True)).sum(axis=(1, 2, 3), keepdims=True))(
        -(xd + 0.25)), {}, opset=6)

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
