#!/usr/bin/env python3
"""Graph.run (the Python package) vs `tapestry run` on the MLP of docs/design.md: does Python add
measurable overhead?

Both run examples/mlp.tap (X 4096×1024, 68.7 GFLOP) under examples/plans/mlp-best.json with
the fast kernels on --threads threads, on the same inputs:

  cli     `tapestry run --inputs DIR --warmup 2 --repeat N --metrics m.json`: the median run's
          wall time of execution alone (metrics wall_s; inputs already in memory)
  python  g.run(inputs, plan, threads) after 2 untimed runs: the median wall time of the whole
          call as Python sees it — input binding, lowering (kept between runs, as the CLI keeps
          its program across --repeat), execution, outputs wrapped as arrays

The ratio printed is cli / python (throughput of Graph.run relative to `tapestry run`; the
target is >= 0.97). The pairs alternate --rounds times so both see the same machine load.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/python_vs_cli.py build/release
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", nargs="?", default=str(ROOT / "build" / "release"))
    parser.add_argument("--reps", type=int, default=5, help="timed runs per round (median)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating cli/python rounds")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--graph", default=str(ROOT / "examples" / "mlp.tap"))
    parser.add_argument("--plan", default=str(ROOT / "examples" / "plans" / "mlp-best.json"))
    args = parser.parse_args()

    sys.path.insert(0, str(Path(args.build) / "python"))
    import tapestry

    cli = Path(args.build) / "src" / "cli" / "tapestry"
    g = tapestry.load(args.graph)
    rng = np.random.default_rng(1)
    inputs = {t.name: rng.uniform(-1, 1, t.shape).astype(np.float32) for t in g.inputs}

    with tempfile.TemporaryDirectory() as tmp:
        for name, array in inputs.items():
            np.save(Path(tmp) / f"{name}.npy", array)
        cli_times, py_times, py_exec = [], [], []
        for _ in range(args.rounds):
            metrics = Path(tmp) / "metrics.json"
            subprocess.run([cli, "run", args.graph, "--plan", args.plan, "--inputs", tmp,
                            "--threads", str(args.threads), "--warmup", "2", "--repeat",
                            str(args.reps), "--metrics", metrics, "--quiet"],
                           check=True, stdout=subprocess.DEVNULL)
            cli_times.append(json.loads(metrics.read_text())["wall_s"])

            for _ in range(2):
                g.run(inputs, plan=args.plan, threads=args.threads)
            calls, execs = [], []
            for _ in range(args.reps):
                start = time.perf_counter()
                g.run(inputs, plan=args.plan, threads=args.threads)
                calls.append(time.perf_counter() - start)
                execs.append(g.last_run.wall_s)
            py_times.append(statistics.median(calls))
            py_exec.append(statistics.median(execs))

    flops = g.last_run.flops
    cli_s, py_s = statistics.median(cli_times), statistics.median(py_times)
    print(f"MLP {flops / 1e9:.1f} GFLOP, plan {Path(args.plan).name}, {args.threads} threads, "
          f"median of {args.rounds} rounds × {args.reps} runs")
    print(f"tapestry run   {cli_s * 1e3:8.1f} ms  {flops / cli_s / 1e9:6.1f} GFLOP/s  "
          f"(rounds: {', '.join(f'{t * 1e3:.1f}' for t in cli_times)})")
    print(f"Graph.run      {py_s * 1e3:8.1f} ms  {flops / py_s / 1e9:6.1f} GFLOP/s  "
          f"(rounds: {', '.join(f'{t * 1e3:.1f}' for t in py_times)}; executor alone "
          f"{statistics.median(py_exec) * 1e3:.1f} ms)")
    print(f"Python's own share of a call (call − executor): "
          f"{(py_s - statistics.median(py_exec)) * 1e3:.2f} ms")
    print(f"ratio (tapestry run time / Graph.run time): {cli_s / py_s:.3f}   target >= 0.97")
    return 0


if __name__ == "__main__":
    sys.exit(main())
