#!/usr/bin/python3
"""Prepares the digits example (docs/training.md, "A worked example: digits"): the data, a fixed
split and the initial state of the training steps train_sgd.tap and train_adam.tap.

    /usr/bin/python3 examples/digits/prepare.py OUT [--seed 0] [--hidden 32]

The data is scikit-learn's copy of the UCI 8×8 handwritten digits (sklearn.datasets.load_digits:
1797 images shipped with Debian's python3-sklearn, nothing is downloaded), pixels scaled from
0…16 to [0, 1]. The rows are shuffled once with the seed; the first 1500 are the training set,
the other 297 are held out. OUT gets

    data/X.npy   f32[1500, 64]   data/Y.npy   i64[1500]     the training set, in the shuffled order
    test/X.npy   f32[297, 64]    test/Y.npy   i64[297]      the held-out digits
    sgd/         W1 b1 W2 b2 (PyTorch's nn.Linear initialisation, torch.manual_seed(seed)) and
                 the momentum buffers W1_v b1_v W2_v b2_v (zeros): train_sgd.tap's state
    adam/        the same W1 b1 W2 b2 and Adam's moments W1_m … b2_m, W1_v … b2_v (zeros):
                 train_adam.tap's state (its step input is the loop's)
    step1-sgd/, step1-adam/   every input of the first step (the first batch as X and Y, the
                 initial state, step = 1), as `tapestry run --inputs DIR` reads them

Step s (from 0) of an in-order run trains on rows [50·(s mod 30), 50·(s mod 30) + 50) of data/:
30 batches of 50 per epoch. reference.py reads the same files.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

N_TRAIN = 1500
BATCH = 50  # the step graphs' batch
CLASSES = 10


def initial_weights(seed: int, hidden: int, features: int = 64) -> dict[str, np.ndarray]:
    """PyTorch's default nn.Linear initialisation (Kaiming-uniform weights, uniform biases) of
    the two layers, seeded: what reference.py's model starts from."""
    import torch

    torch.manual_seed(seed)
    first, second = torch.nn.Linear(features, hidden), torch.nn.Linear(hidden, CLASSES)
    layers = {"W1": first.weight, "b1": first.bias, "W2": second.weight, "b2": second.bias}
    return {name: t.detach().numpy().astype(np.float32) for name, t in layers.items()}


def digits(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """All 1797 digits, pixels in [0, 1], rows shuffled with the seed."""
    from sklearn.datasets import load_digits

    data = load_digits()
    order = np.random.default_rng(seed).permutation(len(data.target))
    x = (data.data[order] / 16.0).astype(np.float32)
    y = data.target[order].astype(np.int64)
    return x, y


def save(directory: Path, arrays: dict[str, np.ndarray]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, a in arrays.items():
        np.save(directory / f"{name}.npy", np.asarray(a, order="C"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the directory to write (created)")
    parser.add_argument("--seed", type=int, default=0, help="the split's and the weights' seed")
    parser.add_argument("--hidden", type=int, default=32, help="the hidden layer's width")
    args = parser.parse_args()

    x, y = digits(args.seed)
    save(args.out / "data", {"X": x[:N_TRAIN], "Y": y[:N_TRAIN]})
    save(args.out / "test", {"X": x[N_TRAIN:], "Y": y[N_TRAIN:]})
    weights = initial_weights(args.seed, args.hidden)
    zeros = {name: np.zeros_like(w) for name, w in weights.items()}
    save(args.out / "sgd", weights | {f"{n}_v": z for n, z in zeros.items()})
    adam = weights | {f"{n}_m": z for n, z in zeros.items()} | {f"{n}_v": z for n, z in zeros.items()}
    save(args.out / "adam", adam)
    first = {"X": x[:BATCH], "Y": y[:BATCH]}
    save(args.out / "step1-sgd", first | weights | {f"{n}_v": z for n, z in zeros.items()})
    save(args.out / "step1-adam", first | adam | {"step": np.array(1, np.int64)})
    print(f"wrote {args.out}: {N_TRAIN} training and {len(y) - N_TRAIN} held-out digits, "
          f"a 64 → {args.hidden} → {CLASSES} MLP's initial state for SGD and Adam")


if __name__ == "__main__":
    main()
