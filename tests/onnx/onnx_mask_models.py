"""Models with masks computed at run time, for tests/onnx/onnx_masks_test.sh, exported from
PyTorch with torch.onnx.export (opset 14).

  onnx_mask_models.py OUT   writes OUT/<model>/{model.onnx, in/<input>.npy, torch/<output>.npy}

Each model computes a mask from its inputs — comparisons, And/Or/Not, Where — which Tapestry
imports as the mask kernels (kernels/masks.yaml): a mask is 0/1 in the compared values' dtype,
and a boolean model input is a float32 input holding 0/1 (in/<input>.npy is written so).
PyTorch's outputs are computed in float64 from the same float32 inputs, then stored as float32.
Exit 77 (skip) with the reason when torch or onnx is missing.
"""
import os
import sys

try:
    import numpy as np
    import onnx  # noqa: F401
    import torch
except ImportError as e:  # pragma: no cover
    print(f"skip: python3 cannot import torch/onnx/numpy: {e}")
    sys.exit(77)

torch.manual_seed(0)
out = sys.argv[1]
rng = np.random.default_rng(7)


def export(name, model, inputs, outputs=("y",)):
    """Exports `model` at `inputs` (a dict name → numpy array, in call order) to OUT/NAME, with
    PyTorch's float64 result of the same model as torch/<output>.npy (float32)."""
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "in"), exist_ok=True)
    os.makedirs(os.path.join(d, "torch"), exist_ok=True)
    args = tuple(torch.from_numpy(v) for v in inputs.values())
    torch.onnx.export(model, args, os.path.join(d, "model.onnx"), opset_version=14,
                      input_names=list(inputs), output_names=list(outputs))
    with torch.no_grad():
        wide = tuple(a.double() if a.is_floating_point() else a for a in args)
        y = model.double()(*wide)
    ys = y if isinstance(y, tuple) else (y,)
    for n, v in zip(outputs, ys):
        np.save(os.path.join(d, "torch", f"{n}.npy"), v.numpy().astype(np.float32))
    for n, v in inputs.items():  # a boolean input is a float32 0/1 mask in Tapestry
        np.save(os.path.join(d, "in", f"{n}.npy"), v.astype(np.float32) if v.dtype == bool else v)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


class MaskedFill(torch.nn.Module):
    """x.masked_fill(x < 0, 0) and a masked_fill with −inf into a softmax: the −inf must reach
    the softmax as a certain −inf (the mask product a·c + b·(1 − c) would make it NaN)."""

    def forward(self, x):
        r = x.masked_fill(x < 0, 0.0)
        s = torch.softmax(x.masked_fill(x > 1.0, float("-inf")), dim=-1)
        return r + s


class WhereTwo(torch.nn.Module):
    """torch.where(x > t, x, y), t a computed threshold (the row mean), and (a == b) & (c > d)
    on rounded values (exact ties), Or and Not."""

    def forward(self, x, y):
        t = x.mean(dim=-1, keepdim=True)
        w = torch.where(x > t, x, y)
        both = (torch.round(x) == torch.round(y)) & (x > y)
        either = (x <= -1.0) | ~(y < 1.0)
        return w + both.to(x.dtype) * 10 + torch.where(either, y, torch.zeros_like(y))


class PaddingAttention(torch.nn.Module):
    """Self-attention over padded sequences whose padding mask is computed from an input of
    lengths: arange(S) < lengths[:, None], negated (~), broadcast over the query rows and
    filled with −inf before the softmax."""

    def __init__(self, d=16):
        super().__init__()
        self.q = torch.nn.Linear(d, d)
        self.k = torch.nn.Linear(d, d)
        self.v = torch.nn.Linear(d, d)

    def forward(self, x, lengths, masked=True):
        s = x.shape[1]
        keep = torch.arange(s, dtype=x.dtype)[None, :] < lengths[:, None]  # [B, S]
        scores = self.q(x) @ self.k(x).transpose(1, 2) / 4.0               # [B, S, S]
        if masked:
            scores = scores.masked_fill(~keep[:, None, :], float("-inf"))
        return torch.softmax(scores, dim=-1) @ self.v(x)


class BoolInput(torch.nn.Module):
    """A boolean model input (a float32 0/1 mask in Tapestry): masked_fill by it, and by its
    And with a computed mask."""

    def forward(self, x, m):
        return x.masked_fill(m, 0.0) + x.masked_fill(m & (x > 0), -1.0)


class ConstantMaskLog(torch.nn.Module):
    """Where with a constant mask whose dropped cells of the computed branch are −inf (log 0):
    the where kernel selects; the old mask product gave NaN there."""

    def __init__(self):
        super().__init__()
        self.register_buffer("mask", torch.tensor([[True, False, True, False, True, False]]))

    def forward(self, x):
        return torch.where(self.mask, torch.log(x), torch.zeros_like(x))


export("masked_fill", MaskedFill(), {"x": f32(4, 6, 8)})
xw = np.round(f32(8, 12) * 2) / 2  # halves: many exact ties between round(x) and round(y)
yw = np.round(f32(8, 12) * 2) / 2
export("where_two", WhereTwo(), {"x": xw.astype(np.float32), "z": yw.astype(np.float32)})
pa, xa, la = PaddingAttention(), f32(3, 8, 16), np.array([8, 5, 2], np.float32)
export("padding_attention", pa, {"x": xa, "lengths": la})
# A fault for the test: the same attention with the padded keys attended (the mask dropped).
os.makedirs(os.path.join(out, "padding_attention", "nomask"), exist_ok=True)
with torch.no_grad():
    y = pa.double()(torch.from_numpy(xa).double(), torch.from_numpy(la).double(), masked=False)
np.save(os.path.join(out, "padding_attention", "nomask", "y.npy"), y.numpy().astype(np.float32))
export("bool_input", BoolInput(), {"x": f32(4, 10), "m": rng.random((4, 10)) < 0.4})
xl = np.abs(f32(3, 6)) + 0.5
xl[:, 1::2] = 0  # log(0) = −inf in every dropped cell
export("constant_mask_log", ConstantMaskLog(), {"x": xl})
print("exported to", out)
