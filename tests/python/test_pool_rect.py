"""max_pool2d_rect, avg_pool2d_rect and pad2d (kernels/pool.yaml, kernels/conv.yaml) against
PyTorch in float64: non-square windows and strides, 1-d pools as 2-d ones of height 1, pads that
differ per side — with the reference and the fast kernels, unsharded and split along every
index dim, each run verified (run(verify=True))."""

from __future__ import annotations

import numpy as np
import pytest

import tapestry

torch = pytest.importorskip("torch")
F = torch.nn.functional

KERNELS = ["reference", "fast"]


def close(got: np.ndarray, want: np.ndarray, rtol: float = 2e-6) -> None:
    assert got.shape == want.shape
    scale = max(np.abs(want).max(), 1e-30)
    err = np.abs(got.astype(np.float64) - want).max()
    assert err <= rtol * scale, f"max |Δ| {err} > {rtol} × {scale}"


def run_everywhere(source: str, x: np.ndarray, plans) -> list[np.ndarray]:
    g = tapestry.parse(f"X: f32[{', '.join(map(str, x.shape))}]\n{source}\noutput R\n")
    out = []
    for kernels in KERNELS:
        out.append(g.run({"X": x}, kernels=kernels, verify=True)["R"])
        for plan in plans:
            out.append(g.run({"X": x}, plan={"ops": {"R": {"split": plan}}}, kernels=kernels,
                             verify=True)["R"])
    return out


POOLS = [  # shape, kernel (h, w), stride (h, w)
    ((2, 3, 9, 8), (3, 2), (2, 1)),
    ((2, 4, 1, 17), (1, 3), (1, 2)),   # a 1-d pool
    ((2, 2, 7, 7), (2, 3), (3, 2)),
    ((3, 2, 6, 10), (1, 1), (1, 3)),
]


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("case", POOLS)
def test_rect_pools_are_torchs(kind, case):
    shape, (kh, kw), (sh, sw) = case
    x = np.random.default_rng(sum(shape) + kh).uniform(-1, 1, size=shape).astype(np.float32)
    pool = F.max_pool2d if kind == "max" else F.avg_pool2d
    want = pool(torch.from_numpy(x.astype(np.float64)), (kh, kw), (sh, sw)).numpy()
    source = (f"R = {kind}_pool2d_rect(X, kernel_h={kh}, kernel_w={kw}, stride_h={sh}, "
              f"stride_w={sw})")
    plans = [{"n": 2}, {"c": 2}, {"ow": 2}] + ([{"oh": 2}] if want.shape[2] > 1 else [])
    for got in run_everywhere(source, x, plans):
        close(got, want)


def test_rect_pool_refuses_a_window_larger_than_x():
    with pytest.raises(tapestry.Error, match="smaller than the 1×5 pooling window"):
        tapestry.parse("X: f32[1, 1, 3, 4]\nR = max_pool2d_rect(X, kernel_h=1, kernel_w=5, "
                       "stride_h=1, stride_w=1)\noutput R\n")


@pytest.mark.parametrize("pads", [(1, 0, 2, 3), (0, 2, 0, 0), (3, 1, 0, 1)])
def test_pad2d_pads_each_side_like_numpy(pads):
    top, bottom, left, right = pads
    x = np.random.default_rng(sum(pads)).uniform(-1, 1, size=(2, 3, 4, 5)).astype(np.float32)
    want = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)),
                  constant_values=-2.5)
    # pad2d's result starts (top, left) before x; the next operation (a pool reading it from its
    # first cell) sees the padded tensor as numpy does: a 1×1 pool is the identity.
    source = (f"P = pad2d(X, top={top}, bottom={bottom}, left={left}, right={right}, "
              "value=-2.5)\nR = max_pool2d_rect(P, kernel_h=1, kernel_w=1, stride_h=1, stride_w=1)")
    for got in run_everywhere(source, x, [{"n": 2}, {"c": 3}]):
        close(got, want, rtol=0)
