#!/usr/bin/python3
"""Runs training steps of train_sgd.tap or train_adam.tap, each step's new state fed back as the
next step's input (docs/training.md, "A worked example: digits").

    /usr/bin/python3 examples/digits/steps.py DIR {sgd,adam} --steps N [--plan P] [--threads T]
        [--ranks R] [--kernels K] [--shuffle SEED] [--out OUT]

DIR is what prepare.py wrote. Step s (from 0) trains on the rows of DIR/data/ reference.py's
step s trains on: in order (30 batches of 50 per epoch), or with --shuffle SEED a new
permutation of the rows each epoch (NumPy's default_rng(SEED + epoch)). The state (the
parameters and the optimizer's buffers) starts from DIR/<optimizer>/; each step's outputs W1n,
W1n.velocity_next (SGD) or W1n.m_next and W1n.v_next (Adam), … are the next step's W1, W1_v
or W1_m and W1_v, …; Adam's `step` input is the step's number from 1.

Threads: the step runs in this process (tapestry.Graph.run, the plan and compiled program kept
from step to step). --ranks R: every step is one `tapestry launch -n R -- run … --executor mpi
--inputs … --outputs …` (R ranks of Open MPI; the plan places the shards on them).

Prints one line per step (`step 1 loss 2.3190…`); --out OUT writes OUT/losses.npy and the final
state (OUT/W1.npy, …, the buffers too) for evaluate.py.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
BATCH = 50
PARAMS = ["W1", "b1", "W2", "b2"]
# The state each optimizer carries, as (input suffix, output suffix): W1<in> is fed from W1n<out>.
STATE = {"sgd": [("", ".result"), ("_v", ".velocity_next")],
         "adam": [("", ".result"), ("_m", ".m_next"), ("_v", ".v_next")]}


def updates(optimizer: str) -> dict[str, str]:
    """The step's state inputs and the outputs that update them: {"W1": "W1n.result", "W1_v":
    "W1n.velocity_next", …} (the `update` statement's pairs)."""
    return {f"{p}{i}": f"{p}n{o}" for p in PARAMS for i, o in STATE[optimizer]}


def batch_rows(rows: int, steps: int, shuffle: int | None = None, batch: int = BATCH
               ) -> np.ndarray:
    """An i64 [steps, batch] array: the data rows of each step. In order: step s reads rows
    [batch·(s mod E), +batch), E = rows // batch; shuffled: epoch e's order is
    default_rng(shuffle + e).permutation(rows), cut the same way (the tail dropped)."""
    per_epoch = rows // batch
    out = np.empty((steps, batch), np.int64)
    for s in range(steps):
        epoch, k = divmod(s, per_epoch)
        order = (np.arange(rows) if shuffle is None
                 else np.random.default_rng(shuffle + epoch).permutation(rows))
        out[s] = order[batch * k: batch * (k + 1)]
    return out


def load_state(directory: Path, optimizer: str) -> dict[str, np.ndarray]:
    return {name: np.load(directory / optimizer / f"{name}.npy") for name in updates(optimizer)}


def tapestry_cli() -> str:
    return os.environ.get("TAPESTRY_CLI") or shutil.which("tapestry") or "tapestry"


class Stepper:
    """One step of the graph at a time, on threads (in process) or on MPI ranks (the CLI)."""

    def __init__(self, optimizer: str, plan=None, threads: int | None = None, ranks: int = 0,
                 kernels: str = "fast", graph_path: Path | None = None):
        self.graph_path = graph_path or HERE / f"train_{optimizer}.tap"
        self.plan, self.threads, self.ranks, self.kernels = plan, threads, ranks, kernels
        if not ranks:
            import tapestry

            self.graph = tapestry.load(str(self.graph_path))

    def __call__(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if not self.ranks:
            return self.graph.run(inputs, plan=self.plan, threads=self.threads,
                                  kernels=self.kernels)
        with tempfile.TemporaryDirectory(prefix="digits-step-") as tmp:
            ins, outs = Path(tmp) / "in", Path(tmp) / "out"
            ins.mkdir()
            for name, a in inputs.items():
                np.save(ins / f"{name}.npy", a)
            command = [tapestry_cli(), "launch", "-n", str(self.ranks), "--", "run",
                       str(self.graph_path), "--inputs", str(ins), "--outputs", str(outs),
                       "--kernels", self.kernels, "--quiet"]
            if self.plan is not None:
                command += ["--plan", str(self.plan)]
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(command)} exited {done.returncode}:\n"
                                   f"{done.stdout}{done.stderr}")
            return {f.stem: np.load(f) for f in outs.glob("*.npy")}


def train(directory: Path, optimizer: str, steps: int, stepper: Stepper,
          order: np.ndarray | None = None, state: dict[str, np.ndarray] | None = None,
          on_step=None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The per-step losses and the final state of `steps` steps from `state` (default: DIR's
    initial state)."""
    x, y = np.load(directory / "data" / "X.npy"), np.load(directory / "data" / "Y.npy")
    order = batch_rows(len(y), steps) if order is None else order
    state = load_state(directory, optimizer) if state is None else dict(state)
    pairs = updates(optimizer)
    losses = []
    for s in range(steps):
        inputs = {"X": x[order[s]], "Y": y[order[s]], **state}
        if optimizer == "adam":
            inputs["step"] = np.array(s + 1, np.int64)
        out = stepper(inputs)
        losses.append(float(out["L"]))
        state = {name: out[source] for name, source in pairs.items()}
        if on_step:
            on_step(s, losses[-1])
    return np.array(losses), state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path, help="prepare.py's directory")
    parser.add_argument("optimizer", choices=sorted(STATE))
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--plan", type=Path, help="a plan file (examples/plans/digits-*.json)")
    parser.add_argument("--threads", type=int, help="block executor threads (in process)")
    parser.add_argument("--ranks", type=int, default=0, help="run each step on R MPI ranks")
    parser.add_argument("--kernels", default="fast", choices=["fast", "reference"])
    parser.add_argument("--shuffle", type=int, help="a new permutation of the rows each epoch")
    parser.add_argument("--out", type=Path, help="write losses.npy and the final state here")
    args = parser.parse_args()
    stepper = Stepper(args.optimizer, plan=str(args.plan) if args.plan else None,
                      threads=args.threads, ranks=args.ranks, kernels=args.kernels)
    x_rows = len(np.load(args.dir / "data" / "Y.npy"))
    order = batch_rows(x_rows, args.steps, args.shuffle)
    losses, state = train(args.dir, args.optimizer, args.steps, stepper, order,
                          on_step=lambda s, loss: print(f"step {s + 1} loss {loss:.6f}",
                                                        flush=True))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        np.save(args.out / "losses.npy", losses)
        for name, a in state.items():
            np.save(args.out / f"{name}.npy", a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
