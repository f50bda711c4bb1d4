"""Graph.shard, Graph.cost and Graph.explain: the lowered graph inspectable from Python, and
prices and explanations equal to what `tapestry cost` / `tapestry explain` print."""

from __future__ import annotations

import json

import pytest

import tapestry
from conftest import EXAMPLES, PLANS, run_cli


def test_shard_exposes_operations_applications_ranges_and_selections():
    g = tapestry.load(EXAMPLES / "linear_relu.tap")
    s = g.shard(PLANS / "linear_relu-batch2-fused.json")
    assert [op.name for op in s.operations] == ["Y"]
    (op,) = s.operations
    assert op.kernel == "fused" or op.kernel.startswith("fused")
    apps = s.applications
    assert len(apps) == 2 and [a.operation for a in apps] == ["Y", "Y"]
    # The two shards cut the batch dim (100 rows) in halves; each reads its rows of X (which
    # starts at row -40), all of W, and writes its rows of Y.
    assert [str(a.index) for a in apps] == ["zr[0:50, 0:32, 0:12]", "zr[50:100, 0:32, 0:12]"]
    assert apps[0].inputs["s0_w"] == [("W", tapestry.Range([0, 0], [32, 12]))]
    x_boxes = [sel for a in apps for port in a.inputs.values() for sel in port if sel[0] == "X"]
    assert [str(r) for _, r in x_boxes] == ["zr[-40:10, 20:32]", "zr[10:60, 20:32]"]
    y_boxes = [sel for a in apps for sel in a.outputs["result"]]
    assert [(n, str(r)) for n, r in y_boxes] == [("Y", "zr[0:50, 0:32]"), ("Y", "zr[50:100, 0:32]")]
    assert any("fuse-elementwise" in line for line in s.log)
    assert s.plan["ops"]["Y"]["split"] == {"batch": 2}
    assert json.loads(s.to_json())["nodes"]
    assert "<svg" in s._repr_svg_()
    assert repr(s) == "ShardedGraph(1 operations, 2 applications)"


def test_shard_equals_the_cli(tmp_path):
    plan = PLANS / "linear_relu-batch2-fused.json"
    run_cli("shard", EXAMPLES / "linear_relu.tap", "--plan", plan, "-o", tmp_path / "cli.json")
    tapestry.load(EXAMPLES / "linear_relu.tap").shard(plan).save(tmp_path / "py.json")
    assert json.loads((tmp_path / "py.json").read_text()) == json.loads(
        (tmp_path / "cli.json").read_text())


def test_shard_plan_errors_name_the_problem():
    g = tapestry.load(EXAMPLES / "linear_relu.tap")
    with pytest.raises(tapestry.Error, match=r"/ops/Nope: .*Nope") as raised:
        g.shard({"ops": {"Nope": {"split": {"batch": 2}}}})
    # The problem as data: located by the JSON pointer of the offending key.
    [diagnostic] = raised.value.diagnostics
    assert diagnostic["pointer"] == "/ops/Nope"
    assert "Nope" in diagnostic["message"]
    assert diagnostic["text"] in str(raised.value)
    with pytest.raises(tapestry.Error, match="no-such-plan.json"):
        g.shard(EXAMPLES / "no-such-plan.json")


@pytest.mark.parametrize("plan", ["mlp-megatron.json", "mlp-data-parallel.json", None])
@pytest.mark.parametrize("target", ["h100x8", "a100x8"])
def test_cost_equals_tapestry_cost(plan, target):
    g = tapestry.load(EXAMPLES / "mlp.tap")
    plan_path = PLANS / plan if plan else None
    args = ["cost", EXAMPLES / "mlp.tap", "--target", target, "--json"]
    if plan_path:
        args += ["--plan", plan_path]
    expected = json.loads(run_cli(*args).stdout)
    cost = g.cost(plan_path, target)
    assert cost.to_dict() == expected
    assert cost.makespan_s == expected["makespan_s"]
    assert cost.devices_used == expected["devices_used"]
    assert cost.devices_held == expected["devices_held"] >= cost.devices_used
    assert cost.idle_energy_j == expected["idle_energy_j"]
    assert [d.device for d in cost.per_device] == [d["device"] for d in expected["per_device"]]


def test_cost_of_many_plans_reuses_the_evaluator_and_tells_them_apart():
    g = tapestry.load(EXAMPLES / "mlp.tap")
    costs = [g.cost({"ops": {"Y": {"split": {"batch": n}}}}, "h100x8").makespan_s
             for n in (1, 2, 4, 8)]
    assert costs == sorted(costs, reverse=True) and costs[0] > costs[-1]
    target = json.loads(run_cli("targets", "h100x8", "--json").stdout)
    assert g.cost(None, target).to_dict() == g.cost(None, "h100x8").to_dict()


def test_explain_equals_tapestry_explain():
    plan = PLANS / "mlp-megatron.json"
    expected = run_cli("explain", EXAMPLES / "mlp.tap", "--plan", plan, "--target", "h100x8").stdout
    e = tapestry.load(EXAMPLES / "mlp.tap").explain(plan, "h100x8")
    assert str(e) == expected
    assert e.target == "h100x8"
    assert {op["name"] for op in e.operations} >= {"Y"}
    assert e.critical_path["bound"] in ("compute", "communication", "waiting")
    assert e.to_dict()["cost"]["makespan_s"] == e.cost.makespan_s
    assert e.strategy["kind"] == "tensor parallel" and e.strategy["megatron"] is True
    assert [g["baseline"] for g in e.gains] == ["one device", "data parallel ×8"]
    assert e.to_dict()["strategy"] == e.strategy


def test_target_errors():
    g = tapestry.load(EXAMPLES / "mlp.tap")
    with pytest.raises(tapestry.Error, match="h200x9"):
        g.cost(None, "h200x9")
    with pytest.raises(TypeError, match="target"):
        g.cost(None, 8)
    assert "h100x8" in tapestry.targets()


def test_optimize_returns_the_front_of_tapestry_optimize(tmp_path):
    g = tapestry.load(EXAMPLES / "mlp.tap")
    args = dict(objectives=["time", "memory"], max_evals=150, seed=3)
    front = g.optimize("h100x8", threads=2, **args)
    assert front.objectives == ["time", "memory"] and len(front) >= 2
    assert front.evaluations == 150 and front.stopped_by == "max-evals"
    run_cli("optimize", EXAMPLES / "mlp.tap", "--target", "h100x8", "--objectives", "time,memory",
            "--max-evals", "150", "--seed", "3", "--threads", "1", "--quiet",
            "-o", tmp_path / "front.json")
    cli = json.loads((tmp_path / "front.json").read_text())
    # The same front as the CLI's, on another thread count (the search is deterministic).
    assert [m.plan for m in front] == [m["plan"] for m in cli["front"]]
    assert [m.cost for m in front] == [m["cost"] for m in cli["front"]]
    fastest = front.best("time")
    assert fastest.score[0] == min(m.score[0] for m in front)
    assert g.cost(fastest.plan, "h100x8").makespan_s == fastest.cost["makespan_s"]
    assert "<svg" in front._repr_svg_()
    with pytest.raises(ValueError, match="energy"):
        front.best("energy")


def test_optimize_plans_run_and_the_front_plots():
    g = tapestry.load(EXAMPLES / "linear_relu.tap")
    front = g.optimize("cpu-local", objectives="time,memory", max_evals=40, seed=1, threads=1)
    import numpy as np

    rng = np.random.default_rng(0)
    inputs = {t.name: rng.uniform(-1, 1, t.shape).astype(np.float32) for t in g.inputs}
    for member in front:
        g.run(inputs, plan=member.plan, verify=True)
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    ax = front.plot()
    assert ax.get_xlabel() == "time" and ax.get_ylabel() == "memory"


def test_optimize_errors():
    g = tapestry.load(EXAMPLES / "linear_relu.tap")
    with pytest.raises(ValueError, match="time_budget"):
        g.optimize("h100x8")
    with pytest.raises(tapestry.Error, match="speed"):
        g.optimize("h100x8", objectives=["speed"], max_evals=10)
