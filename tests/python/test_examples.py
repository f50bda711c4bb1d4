"""Every example graph run from Python equals the CLI's output bitwise, for the same inputs and
plan, with the fast kernels and the reference kernels: Graph.run is the engine `tapestry run`
runs, not a second implementation. The default run uses the small stand-ins of the big examples
(tests/data/cli, the same operation names, so every bundled plan applies); the `slow` run the
examples at their real sizes."""

from __future__ import annotations

from pathlib import Path

import pytest

import tapestry
from conftest import EXAMPLES, PLANS, SMALL, bitwise_equal, cli_outputs, random_inputs

EXAMPLE_NAMES = ["linear_relu", "mlp", "convnet", "transformer_block"]


def graph_file(example: str, small: bool) -> Path:
    stand_in = SMALL / f"{example}_small.tap"
    return stand_in if small and stand_in.exists() else EXAMPLES / f"{example}.tap"


def cases(small: bool):
    for example in EXAMPLE_NAMES:
        plans = [None, *sorted(PLANS.glob(f"{example}-*.json"))]
        for plan in plans:
            for kernels in ("fast", "reference"):
                if not small and kernels == "reference" and example == "mlp":
                    continue  # minutes of reference GEMM; the stand-in covers it
                yield pytest.param(example, plan, kernels,
                                   id=f"{example}-{plan.stem if plan else 'noplan'}-{kernels}")


def check_equals_cli(example: str, plan: Path | None, kernels: str, small: bool, tmp_path: Path):
    path = graph_file(example, small)
    g = tapestry.load(path)
    inputs = random_inputs(g, seed=7)
    args = ["--threads", "2", "--kernels", kernels]
    if plan is not None:
        args += ["--plan", plan]
    expected = cli_outputs(path, inputs, tmp_path, *args)
    got = g.run(inputs, plan=plan, threads=2, kernels=kernels)
    assert sorted(got) == sorted(expected)
    assert got  # every example has an output
    for name, array in got.items():
        assert bitwise_equal(array, expected[name]), (
            f"{name}: max |Δ| {abs(array.astype('f8') - expected[name]).max()}")
    assert g.last_run.inputs_in_place == [t.name for t in g.inputs]


@pytest.mark.parametrize("example,plan,kernels", list(cases(small=True)))
def test_example_equals_cli_bitwise(example, plan, kernels, tmp_path):
    check_equals_cli(example, plan, kernels, small=True, tmp_path=tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("example,plan,kernels", list(cases(small=False)))
def test_full_size_example_equals_cli_bitwise(example, plan, kernels, tmp_path):
    check_equals_cli(example, plan, kernels, small=False, tmp_path=tmp_path)


def test_a_changed_input_changes_the_output(tmp_path):
    # The comparison above could pass vacuously if both sides ignored their inputs.
    g = tapestry.load(EXAMPLES / "linear_relu.tap")
    inputs = random_inputs(g, seed=7)
    before = g.run(inputs)["Y"]
    inputs["b"] = inputs["b"] + 1
    after = g.run(inputs)["Y"]
    assert not bitwise_equal(before, after)
