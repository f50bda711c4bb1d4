"""Shared helpers of the Python package's tests (run by ctest: tests/python/CMakeLists.txt).

The environment names what the build made: PYTHONPATH holds build/<preset>/python, TAPESTRY_CLI
the `tapestry` command, TAPESTRY_ROOT the source tree, TAPESTRY_BUILD the build directory.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(os.environ.get("TAPESTRY_ROOT", Path(__file__).resolve().parents[2]))
EXAMPLES = ROOT / "examples"
PLANS = EXAMPLES / "plans"
SMALL = ROOT / "tests" / "data" / "cli"  # stand-ins of the big examples, same operation names


def cli_path() -> str:
    cli = os.environ.get("TAPESTRY_CLI")
    if not cli:
        pytest.fail("TAPESTRY_CLI is not set (run the tests through ctest)")
    return cli


def run_cli(*args: str | os.PathLike[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    """Runs `tapestry ARGS…`; fails the test with its output when it exits non-zero."""
    done = subprocess.run([cli_path(), *map(str, args)], capture_output=True, text=True)
    if check and done.returncode != 0:
        pytest.fail(f"tapestry {' '.join(map(str, args))} exited {done.returncode}:\n"
                    f"{done.stdout}{done.stderr}")
    return done


def random_inputs(graph, seed: int = 1) -> dict[str, np.ndarray]:
    """Inputs for every graph input: uniform in [-1, 1), of the tensor's dtype and shape."""
    rng = np.random.default_rng(seed)
    out = {}
    for t in graph.inputs:
        out[t.name] = rng.uniform(-1, 1, size=t.shape).astype(t.dtype)
    return out


def save_inputs(inputs: dict[str, np.ndarray], directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, array in inputs.items():
        np.save(directory / f"{name}.npy", array)
    return directory


def cli_outputs(graph_file: Path, inputs: dict[str, np.ndarray], tmp: Path,
                *args: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """`tapestry run GRAPH --inputs … --outputs … ARGS`, its outputs read back."""
    in_dir = save_inputs(inputs, tmp / "in")
    out_dir = tmp / "out"
    run_cli("run", graph_file, "--inputs", in_dir, "--outputs", out_dir, "--quiet", *args)
    return {p.stem: np.load(p) for p in out_dir.glob("*.npy")}


def bitwise_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
