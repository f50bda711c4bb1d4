"""tapestry.calibrate: `tapestry calibrate` from Python — the same measurements (the workflow
module's), the target as a dict that Graph.cost takes."""

from __future__ import annotations

import pytest

import tapestry
from conftest import EXAMPLES, PLANS


def test_calibrate_returns_a_target_graph_cost_takes():
    heard: list[str] = []
    target = tapestry.calibrate(seconds=0.2, progress=heard.append)
    assert heard[0] == "matmul f32" and heard[-1] == "gemm 1024"
    assert "dispatch" in heard and "gelu" in heard
    assert target["name"] == "cpu-local"
    (core,) = target["device_types"].values()
    assert core["peak_flops"]["float32"] > 0 and core["memory_bandwidth_Bps"] > 0
    assert target["nodes"]["devices"]["hw-thread"] == target["calibration"]["hardware_threads"]
    assert target["calibration"]["seconds"] == 0.2
    cost = tapestry.load(EXAMPLES / "mlp.tap").cost(PLANS / "mlp-data-parallel.json", target)
    assert cost.makespan_s > 0


@pytest.mark.parametrize("seconds", [0, -1, 3601, float("nan"), float("inf")])
def test_calibrate_refuses_a_budget_out_of_range(seconds):
    with pytest.raises(ValueError, match=r"expected a time in \(0, 3600\]"):
        tapestry.calibrate(seconds=seconds)
