#!/usr/bin/python3
"""The digits example's training in PyTorch: the oracle that train_sgd.tap and train_adam.tap
are compared with (docs/training.md, "A worked example: digits").

    /usr/bin/python3 examples/digits/reference.py DIR {sgd,adam} --steps N [--out OUT] [--order FILE]

DIR is what prepare.py wrote. The model is the .tap steps' MLP (nn.Linear 64 → 32 → 10 with a
ReLU, float32) starting from DIR/<optimizer>/'s weights, the loss F.cross_entropy (the batch
mean), the optimizer torch.optim.SGD(lr=0.05, momentum=0.9) or torch.optim.Adam(lr=0.01) — the
hyper-parameters of the .tap files. Step s (from 0) trains on the rows of DIR/data/ that the
loop gives it: in order, rows [B·(s mod E), B·(s mod E) + B) for batch size B = 50 and E the
number of whole batches; with --order FILE, the rows FILE's row s lists (an i64 [steps, B]
.npy). Prints one line per step (`step 1 loss 2.3190…`); --out OUT writes OUT/losses.npy
(float64 [steps], each loss as float32 computed it) and the final W1 b1 W2 b2.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

BATCH = 50
PARAMS = ["W1", "b1", "W2", "b2"]
OPTIMIZERS = {
    "sgd": lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9),
    "adam": lambda params: torch.optim.Adam(params, lr=0.01),
}


def batches(rows: int, steps: int, batch: int = BATCH) -> np.ndarray:
    """The in-order batches: step s reads rows [batch·(s mod E), +batch), E whole batches."""
    per_epoch = rows // batch
    return np.stack([np.arange(batch) + batch * (s % per_epoch) for s in range(steps)])


def train(directory: Path, optimizer: str, steps: int, order: np.ndarray | None = None
          ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """PyTorch's losses of `steps` steps and the final parameters."""
    x = torch.from_numpy(np.load(directory / "data" / "X.npy"))
    y = torch.from_numpy(np.load(directory / "data" / "Y.npy"))
    params = {n: torch.from_numpy(np.load(directory / optimizer / f"{n}.npy")).requires_grad_(True)
              for n in PARAMS}
    opt = OPTIMIZERS[optimizer](list(params.values()))
    order = batches(len(y), steps) if order is None else order
    losses = []
    for s in range(steps):
        rows = torch.from_numpy(order[s])
        h = F.relu(F.linear(x[rows], params["W1"], params["b1"]))
        loss = F.cross_entropy(F.linear(h, params["W2"], params["b2"]), y[rows])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return np.array(losses), {n: p.detach().numpy().copy() for n, p in params.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path, help="prepare.py's directory")
    parser.add_argument("optimizer", choices=sorted(OPTIMIZERS))
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--out", type=Path, help="write losses.npy and the final weights here")
    parser.add_argument("--order", type=Path, help="an i64 [steps, batch] .npy of the rows per step")
    args = parser.parse_args()
    order = np.load(args.order) if args.order else None
    losses, params = train(args.dir, args.optimizer, args.steps, order)
    for s, loss in enumerate(losses):
        print(f"step {s + 1} loss {loss:.6f}")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        np.save(args.out / "losses.npy", losses)
        for n, p in params.items():
            np.save(args.out / f"{n}.npy", p)


if __name__ == "__main__":
    main()
