"""grouped_conv2d (kernels/conv.yaml) against PyTorch's conv2d(groups=g) in float64: grouped and
depthwise layers, strides and padding, with the reference and the fast kernels (oneDNN's grouped
convolution where a box holds whole groups, im2col + GEMM per group otherwise), unsharded and
sharded along the batch, the groups, the pixels, and the in-channels of a group as a split
reduction — each run verified (run(verify=True))."""

from __future__ import annotations

import numpy as np
import pytest

import tapestry

torch = pytest.importorskip("torch")
F = torch.nn.functional

KERNELS = ["reference", "fast"]
F32_RTOL = 2e-5

CASES = [  # n, c, o, groups, ih, iw, k, stride, padding
    (2, 6, 4, 2, 7, 6, 3, 1, 0),
    (3, 4, 8, 4, 9, 8, 3, 2, 1),     # two filters per group, (ih + 2p − k) % stride != 0
    (2, 16, 16, 16, 10, 10, 3, 1, 1),  # depthwise, big enough for oneDNN
    (1, 32, 32, 32, 12, 12, 5, 2, 2),  # depthwise 5×5 stride 2 (efficientnet's)
    (2, 12, 6, 3, 8, 8, 1, 1, 0),    # grouped 1×1
    (4, 8, 16, 8, 9, 11, 3, 2, 1),   # depthwise with a channel multiplier of 2
]

# og (the filters of a group) is not among them: the result's channel is g·og + f, so a shard of
# some of each group's filters would write scattered channels, which shard-grid refuses.
PLANS = [{"n": 2}, {"g": 2}, {"oh": 2, "ow": 2}, {"cg": 2}, {"g": 2, "n": 2}, {"g": 3, "cg": 2}]


def close(got: np.ndarray, want) -> None:
    want = np.asarray(want.numpy(), np.float64)
    assert got.shape == want.shape
    scale = max(np.abs(want).max(), 1e-30)
    err = np.abs(got.astype(np.float64) - want).max()
    assert err <= F32_RTOL * scale, f"max |Δ| {err} > {F32_RTOL} × {scale}"


def graph(x: np.ndarray, w: np.ndarray, groups: int, stride: int, padding: int) -> tapestry.Graph:
    t = "f32" if x.dtype == np.float32 else "f64"
    return tapestry.parse(
        f"X: {t}[{', '.join(map(str, x.shape))}]\nW: {t}[{', '.join(map(str, w.shape))}]\n"
        f"R = grouped_conv2d(X, W, groups={groups}, stride={stride}, padding={padding})\n"
        "output R\n")


def applicable(plan: dict, extents: dict) -> bool:
    return all(extents[d] >= parts for d, parts in plan.items())


@pytest.mark.parametrize("case", CASES)
def test_grouped_conv2d_is_torchs_conv2d_with_groups(case):
    n, c, o, groups, ih, iw, k, stride, padding = case
    rng = np.random.default_rng(sum(case))
    x = rng.uniform(-1, 1, size=(n, c, ih, iw)).astype(np.float32)
    w = rng.uniform(-1, 1, size=(o, c // groups, k, k)).astype(np.float32)
    want = F.conv2d(torch.from_numpy(x.astype(np.float64)), torch.from_numpy(w.astype(np.float64)),
                    stride=stride, padding=padding, groups=groups)
    g = graph(x, w, groups, stride, padding)
    extents = {"n": n, "g": groups, "og": o // groups, "oh": want.shape[2], "ow": want.shape[3],
               "cg": c // groups}
    runs = 0
    for kernels in KERNELS:
        close(g.run({"X": x, "W": w}, kernels=kernels, verify=True)["R"], want)
        for plan in PLANS:
            if not applicable(plan, extents):
                continue
            got = g.run({"X": x, "W": w}, plan={"ops": {"R": {"split": plan}}}, kernels=kernels,
                        verify=True)["R"]
            close(got, want)
            runs += 1
    assert runs >= 4  # at least two plans per kernel set


def test_the_filters_of_a_group_do_not_shard():
    x = np.ones((1, 4, 5, 5), np.float32)
    w = np.ones((8, 2, 3, 3), np.float32)
    with pytest.raises(tapestry.Error, match="scattered cells"):
        graph(x, w, 2, 1, 0).run({"X": x, "W": w}, plan={"ops": {"R": {"split": {"og": 2}}}})


def test_grouped_conv2d_float64_matches_torch_to_rounding():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 9, 8, 8))
    w = rng.standard_normal((6, 3, 3, 3))
    want = F.conv2d(torch.from_numpy(x), torch.from_numpy(w), groups=3, padding=1).numpy()
    for kernels in KERNELS:
        got = graph(x, w, 3, 1, 1).run({"X": x, "W": w}, kernels=kernels)["R"]
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_grouped_conv2d_is_not_a_dense_conv_over_all_channels():
    # A filter of group 1 must not see group 0's channels: with x zero outside group 1, group 0's
    # outputs are exactly zero.
    x = np.zeros((1, 4, 5, 5), np.float32)
    x[:, 2:] = 1
    w = np.ones((4, 2, 3, 3), np.float32)
    got = graph(x, w, 2, 1, 0).run({"X": x, "W": w})["R"]
    assert np.all(got[:, :2] == 0) and np.all(got[:, 2:] == 18)


@pytest.mark.parametrize("shapes, groups, message", [
    (((1, 6, 5, 5), (4, 2, 3, 3)), 2, "6 channels but 2 groups"),
    (((1, 6, 5, 5), (5, 3, 3, 3)), 2, "do not divide into 2 groups"),
])
def test_grouped_conv2d_refuses_channels_that_do_not_split(shapes, groups, message):
    xs, ws = shapes
    with pytest.raises(tapestry.Error, match=message):
        tapestry.parse(f"X: f32[{', '.join(map(str, xs))}]\nW: f32[{', '.join(map(str, ws))}]\n"
                       f"R = grouped_conv2d(X, W, groups={groups})\noutput R\n")
