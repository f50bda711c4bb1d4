"""bf16 and f16 graphs from Python: float16 arrays in and out, bfloat16 as uint16 bit patterns
(NumPy has no bfloat16), results against NumPy float64 within the 16-bit roundings."""

from __future__ import annotations

import numpy as np
import pytest

import tapestry

MLP = """
X:  {t}[16, 32]
W1: {t}[24, 32]
b1: {t}[24]
W2: {t}[8, 24]
b2: {t}[8]
H = relu(linear(X, W1, b1))
Y = linear(H, W2, b2)
output Y
"""


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 → bfloat16 bit patterns, round to nearest even (finite values)."""
    u = np.asarray(x, np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_value(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_mlp_runs_and_matches_numpy(tmp_path, dtype):
    path = tmp_path / f"mlp_{dtype}.tap"
    path.write_text(MLP.format(t=dtype))
    graph = tapestry.load(path)
    rng = np.random.default_rng(3)
    wide, given = {}, {}
    for t in graph.inputs:
        x = rng.uniform(-1, 1, size=t.shape).astype(np.float32)
        if dtype == "bf16":
            given[t.name] = bf16_bits(x)
            wide[t.name] = bf16_value(given[t.name]).astype(np.float64)
        else:
            given[t.name] = x.astype(np.float16)
            wide[t.name] = given[t.name].astype(np.float64)
    for kernels in ["reference", "fast"]:
        y = graph.run(given, kernels=kernels)["Y"]
        assert y.dtype == (np.uint16 if dtype == "bf16" else np.float16)
        got = bf16_value(y) if dtype == "bf16" else y.astype(np.float64)
        h = np.maximum(wide["X"] @ wide["W1"].T + wide["b1"], 0)
        want = h @ wide["W2"].T + wide["b2"]
        # H and Y each rounded once to 16 bits (u = 2^-8 bf16, 2^-11 f16), float32 sums below.
        u = 2.0**-8 if dtype == "bf16" else 2.0**-11
        scale = np.abs(np.maximum(wide["X"] @ np.abs(wide["W1"]).T, 0)) @ np.abs(wide["W2"]).T
        bar = u * (np.abs(want) + scale + 1) * 2
        assert np.all(np.abs(got - want) <= bar), (kernels, np.max(np.abs(got - want) / bar))
        # A dropped bias is far outside the bar.
        assert np.any(np.abs(got - (want - wide["b2"])) > bar)


def test_wrong_dtype_for_a_bf16_input_is_an_error(tmp_path):
    path = tmp_path / "relu.tap"
    path.write_text("X: bf16[4]\nY = relu(X)\noutput Y\n")
    graph = tapestry.load(path)
    with pytest.raises(Exception, match="uint16"):
        graph.run({"X": np.zeros(4, np.float32)})
    y = graph.run({"X": bf16_bits(np.array([-1.5, 0.25, 2.0, -0.0], np.float32))})["Y"]
    assert list(bf16_value(y)) == [0.0, 0.25, 2.0, 0.0]


def test_cast_op_rounds_to_nearest_even_like_numpy():
    """ops.cast: float64 → f16 as NumPy rounds it (directly, not through float32), f64 → bf16
    as the exact bit rounding of the float64 value, and back to f64 exactly."""
    from tapestry import ops

    g = tapestry.Graph()
    x = g.input("X", "f64", [4, 64])
    h = ops.cast(x, "float16")
    b = ops.cast(x, "bf16")
    g.output("H64", ops.cast(h, "f64"))
    g.output("B", b)
    rng = np.random.default_rng(11)
    v = rng.standard_normal((4, 64)) * np.exp2(rng.integers(-20, 20, size=(4, 64)))
    # Values just above an f16 tie (1 + 2^-11 + 2^-40): float32 would round them onto the tie.
    v[0, :8] = (1 + 2.0**-11 + 2.0**-40) * np.arange(1, 9)
    out = g.run({"X": v})
    assert out["H64"].dtype == np.float64
    np.testing.assert_array_equal(out["H64"], v.astype(np.float16).astype(np.float64))
    # bf16: round the float64 value to 8 significant bits, ties to even, with exact integers.
    m, e = np.frexp(v)  # v = m·2^e, 0.5 <= |m| < 1
    scaled = m * 2.0**8  # the significand with 8 bits before the point: exact in float64
    want = np.ldexp(np.round(scaled), e - 8)  # np.round: half to even
    assert out["B"].dtype == np.uint16
    np.testing.assert_array_equal(bf16_value(out["B"]).astype(np.float64), want)
