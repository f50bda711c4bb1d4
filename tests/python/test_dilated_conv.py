"""dilated_conv2d, dilated_conv3d and conv3d (kernels/conv.yaml) against PyTorch's conv2d /
conv3d in float64, with the reference and the fast kernels, unsharded and split along the
batch, the filters, the pixels and the reductions (in-channels and, for the dilated kernels,
the filter taps), each run verified (run(verify=True))."""

from __future__ import annotations

import numpy as np
import pytest

import tapestry

torch = pytest.importorskip("torch")
F = torch.nn.functional

KERNELS = ["reference", "fast"]


def close(got: np.ndarray, want: np.ndarray, rtol: float = 2e-5) -> None:
    assert got.shape == want.shape
    scale = max(np.abs(want).max(), 1e-30)
    err = np.abs(got.astype(np.float64) - want).max()
    assert err <= rtol * scale, f"max |Δ| {err} > {rtol} × {scale}"


def check(source: str, x: np.ndarray, w: np.ndarray, want: np.ndarray, plans) -> None:
    g = tapestry.parse(f"X: f32[{', '.join(map(str, x.shape))}]\n"
                       f"W: f32[{', '.join(map(str, w.shape))}]\n{source}\noutput R\n")
    for kernels in KERNELS:
        close(g.run({"X": x, "W": w}, kernels=kernels, verify=True)["R"], want)
        for plan in plans:
            close(g.run({"X": x, "W": w}, plan={"ops": {"R": {"split": plan}}}, kernels=kernels,
                        verify=True)["R"], want)


def data(seed, xs, ws):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, size=xs).astype(np.float32),
            rng.uniform(-1, 1, size=ws).astype(np.float32))


@pytest.mark.parametrize("stride, dilation", [(1, 2), (2, 3), (1, 1)])
def test_dilated_conv2d_is_torchs(stride, dilation):
    x, w = data(stride + dilation, (2, 3, 13, 12), (4, 3, 3, 2))
    want = F.conv2d(torch.from_numpy(x.astype(np.float64)), torch.from_numpy(w.astype(np.float64)),
                    stride=stride, dilation=dilation).numpy()
    check(f"R = dilated_conv2d(X, W, stride={stride}, dilation={dilation})", x, w, want,
          [{"n": 2}, {"o": 2}, {"oh": 2, "ow": 2}, {"c": 3}, {"i": 3}, {"j": 2}])


def test_dilated_conv3d_is_torchs():
    x, w = data(3, (2, 2, 7, 8, 9), (3, 2, 2, 3, 2))
    want = F.conv3d(torch.from_numpy(x.astype(np.float64)), torch.from_numpy(w.astype(np.float64)),
                    stride=2, dilation=2).numpy()
    check("R = dilated_conv3d(X, W, stride=2, dilation=2)", x, w, want,
          [{"n": 2}, {"od": 2}, {"c": 2}, {"h": 2}])


@pytest.mark.parametrize("stride", [1, 2])
def test_conv3d_is_torchs(stride):
    x, w = data(stride, (2, 4, 6, 7, 8), (5, 4, 3, 2, 3))
    want = F.conv3d(torch.from_numpy(x.astype(np.float64)), torch.from_numpy(w.astype(np.float64)),
                    stride=stride).numpy()
    check(f"R = conv3d(X, W, stride={stride})", x, w, want,
          [{"n": 2}, {"o": 5}, {"od": 2, "ow": 2}, {"c": 2}])


def test_a_dilated_filter_larger_than_x_is_refused():
    with pytest.raises(tapestry.Error, match="smaller than the 3×3 filters W at dilation 3"):
        tapestry.parse("X: f32[1, 1, 6, 9]\nW: f32[1, 1, 3, 3]\n"
                       "R = dilated_conv2d(X, W, dilation=3)\noutput R\n")
