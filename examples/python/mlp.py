#!/usr/bin/env python3
"""The MLP (examples/mlp.tap) from Python: build it, run it sharded on NumPy arrays, verify it, and
explain the plan on a target, search for better plans — the worked example of docs/python.md.

    PYTHONPATH=build/ci/python /usr/bin/python3 examples/python/mlp.py          # 1/16 size
    PYTHONPATH=build/ci/python /usr/bin/python3 examples/python/mlp.py --full   # X 4096×1024
"""

from __future__ import annotations

import argparse

import numpy as np

import tapestry
from tapestry import ops


def build_mlp(batch: int, d_in: int, hidden: int, d_out: int) -> tapestry.Graph:
    """Y = linear(relu(linear(X, W1, b1)), W2, b2): examples/mlp.tap, built in Python."""
    g = tapestry.Graph()
    X = g.input("X", "f32", [batch, d_in])
    W1 = g.input("W1", "f32", [hidden, d_in])
    b1 = g.input("b1", "f32", [hidden])
    W2 = g.input("W2", "f32", [d_out, hidden])
    b2 = g.input("b2", "f32", [d_out])
    g["H"] = ops.relu(ops.linear(X, W1, b1))  # operations H/linear and H, as in .tap
    g.output("Y", ops.linear(g["H"], W2, b2))
    return g


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the real size (68.7 GFLOP)")
    args = parser.parse_args()
    scale = 1 if args.full else 16
    g = build_mlp(4096 // scale, 1024 // scale, 4096 // scale, 1024 // scale)
    print(g)

    # Shard: cut H/linear's out dim in two (Megatron's column split) and Y's reduction dim in
    # two (a row split: partial sums, then a reduce).
    plan = {"ops": {"H/linear": {"split": {"out": 2}}, "Y": {"split": {"in": 2}}}}
    sharded = g.shard(plan)
    for op in sharded.operations:
        print(f"{op.name:<14} {op.kernel:<8} {len(op.applications)} applications, index {op.index}")

    # Run on NumPy arrays (read in place: no copy), 2 threads, checked against the unsharded
    # graph — each cell within its own error bar of a float64 oracle.
    rng = np.random.default_rng(0)
    inputs = {t.name: rng.uniform(-1, 1, t.shape).astype(np.float32) for t in g.inputs}
    outputs = g.run(inputs, plan=plan, threads=2, verify=True)
    print(g.last_run.verify_text, end="")
    print(f"Y {outputs['Y'].shape} {outputs['Y'].dtype}; {g.last_run}")

    # NumPy's own answer passes the same bar.
    h = np.maximum(inputs["X"] @ inputs["W1"].T + inputs["b1"], 0)
    print("numpy:", g.verify(inputs, {"Y": h @ inputs["W2"].T + inputs["b2"]})["pass"])

    # What the plan would cost on 8 H100s, and why.
    print(g.cost(plan, "h100x8"))
    print(g.explain(plan, "h100x8"))

    # Search plans on the same target: the Pareto front of time and memory.
    front = g.optimize("h100x8", objectives=["time", "memory"], max_evals=300, seed=1)
    fastest = front.best("time")
    print(f"front of {len(front)} plans after {front.evaluations} evaluations; fastest "
          f"{fastest.name}: {fastest.cost['makespan_s'] * 1e6:.1f} µs, plan {fastest.plan}")
    outputs = g.run(inputs, plan=fastest.plan, threads=2, verify=True)
    print(g.last_run.verify_text, end="")


if __name__ == "__main__":
    main()
