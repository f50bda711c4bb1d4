#!/usr/bin/env python3
"""Does a target's cost model rank plans the way one GPU runs them?

For every example graph, several plans (the graph as written, the bundled plans, a few splits)
are run on the GPU (`tapestry run --device cuda --warmup 2 --repeat 7`: the median run's GPU
time, a CUDA graph replay) and priced on each target given (`tapestry cost --json`: makespan).
Every pair of plans of the same graph whose measured times differ by more than --tie (default
5%) counts as ranked right when the model orders it the same way. Prints a table per graph and
the share of pairs ranked right per target; --json writes everything.

    python3 bench/gpu_rank_plans.py --tapestry build/ci/src/cli/tapestry \\
        --target targets/h100-measured.json --target h100x8

Needs a GPU (the CUDA backend: docs/gpu.md); stdlib only. scripts/gpu-check.sh runs it.
`--reprice RANK.json` takes the measured times of an earlier run's --json instead (no GPU
needed) and prices them again, on the targets given: how a change to the cost model or a
target moves the share, against the same measurements.

    python3 bench/gpu_rank_plans.py --reprice rank.json --target targets/h200-measured.json
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (graph, label, plan arguments) — one GPU, so every plan's shards run on device 0.
PLANS = {
    "examples/linear_relu.tap": [
        ("as written", []),
        ("batch2-fused", ["--plan", "examples/plans/linear_relu-batch2-fused.json"]),
        ("split-in", ["--plan", "examples/plans/linear_relu-split-in.json"]),
        ("grid", ["--plan", "examples/plans/linear_relu-grid.json"]),
    ],
    "examples/mlp.tap": [
        ("as written", []),
        ("megatron", ["--plan", "examples/plans/mlp-megatron.json"]),
        ("data-parallel", ["--plan", "examples/plans/mlp-data-parallel.json"]),
        ("best", ["--plan", "examples/plans/mlp-best.json"]),
        ("batch 8", ["--split", "H/linear.batch=8", "--split", "H.d0=8", "--split", "Y.batch=8"]),
        ("in 4", ["--split", "Y.in=4"]),
    ],
    "examples/transformer_block.tap": [
        ("as written", []),
        ("heads", ["--plan", "examples/plans/transformer_block-heads.json"]),
    ],
    "examples/transformer_large.tap": [
        ("as written", []),
        ("rows", ["--plan", "examples/plans/transformer_large-rows.json"]),
    ],
    "examples/convnet.tap": [
        ("as written", []),
        ("batch", ["--plan", "examples/plans/convnet-batch.json"]),
    ],
    "examples/resnet_bottleneck.tap": [
        ("as written", []),
        ("batch", ["--plan", "examples/plans/resnet_bottleneck-batch.json"]),
    ],
    "tests/data/search/transformer_mlp_bf16.tap": [
        ("as written", []),
        ("ffn 2", ["--split", "H/linear.out=2", "--split", "H.d1=2", "--split", "Y.in=2"]),
        ("tokens 4", ["--split", "H/linear.batch=4", "--split", "H.d0=4", "--split", "Y.batch=4"]),
        ("ffn 8", ["--split", "H/linear.out=8", "--split", "H.d1=8", "--split", "Y.in=8"]),
    ],
}


def measure(tapestry: str, graph: str, plan: list[str], repeat: int) -> dict | None:
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "m.json")
        cmd = [tapestry, "run", graph, *plan, "--device", "cuda", "--quiet", "--warmup", "2",
               "--repeat", str(repeat), "--metrics", metrics]
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if p.returncode != 0:
            print(f"  run failed: {' '.join(cmd)}\n{p.stderr.strip()}", file=sys.stderr)
            return None
        with open(metrics) as f:
            return json.load(f)


def price(tapestry: str, graph: str, plan: list[str], target: str) -> float | None:
    cmd = [tapestry, "cost", graph, *plan, "--target", target, "--ignore-placement", "--json"]
    if not any(a == "--plan" or a == "--split" for a in plan):
        cmd.remove("--ignore-placement")
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if p.returncode != 0:
        print(f"  cost failed: {' '.join(cmd)}\n{p.stderr.strip()}", file=sys.stderr)
        return None
    return json.loads(p.stdout)["makespan_s"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tapestry", default=os.path.join(ROOT, "build/ci/src/cli/tapestry"))
    ap.add_argument("--target", action="append", required=True,
                    help="a target to price on (file or preset); repeatable")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--tie", type=float, default=0.05,
                    help="pairs measured within this fraction of each other are ties (skipped)")
    ap.add_argument("--json", help="write the measurements and predictions here")
    ap.add_argument("--only", action="append", help="graphs to run (substring); repeatable")
    ap.add_argument("--reprice", metavar="RANK_JSON",
                    help="the measured times of an earlier --json, priced again (no GPU run)")
    args = ap.parse_args()

    earlier = {}
    if args.reprice:
        with open(args.reprice) as f:
            for r in json.load(f)["rows"]:
                earlier[(r["graph"], r["plan"])] = {"wall_s": r["measured_s"],
                                                    "cuda": {"host_steps": r["host_steps"]}}
    rows = []
    for graph, plans in PLANS.items():
        if args.only and not any(o in graph for o in args.only):
            continue
        print(f"{graph}")
        for label, plan in plans:
            if args.reprice:
                m = earlier.get((graph, label))
            else:
                m = measure(args.tapestry, graph, plan, args.repeat)
            if m is None:
                continue
            predicted = {t: price(args.tapestry, graph, plan, t) for t in args.target}
            row = {"graph": graph, "plan": label, "measured_s": m["wall_s"],
                   "host_steps": m["cuda"]["host_steps"], "predicted_s": predicted}
            rows.append(row)
            pred = "  ".join(f"{os.path.basename(t)} {p * 1e3:9.3f} ms" if p else f"{t} -"
                             for t, p in predicted.items())
            print(f"  {label:<14} measured {m['wall_s'] * 1e3:9.3f} ms "
                  f"({m['cuda']['host_steps']} host steps)   predicted: {pred}")

    print()
    summary = {}
    for target in args.target:
        right = total = ties = 0
        for graph in PLANS:
            mine = [r for r in rows if r["graph"] == graph and r["predicted_s"].get(target)]
            for a, b in itertools.combinations(mine, 2):
                ma, mb = a["measured_s"], b["measured_s"]
                if abs(ma - mb) <= args.tie * max(ma, mb):
                    ties += 1
                    continue
                total += 1
                pa, pb = a["predicted_s"][target], b["predicted_s"][target]
                if (ma < mb) == (pa < pb):
                    right += 1
                else:
                    print(f"  wrong on {os.path.basename(target)}: {graph} '{a['plan']}' against "
                          f"'{b['plan']}': measured {ma * 1e3:.3f} / {mb * 1e3:.3f} ms, "
                          f"predicted {pa * 1e3:.3f} / {pb * 1e3:.3f} ms")
        share = right / total if total else float("nan")
        summary[target] = {"right": right, "pairs": total, "ties": ties, "share": share}
        print(f"{target}: {right}/{total} pairs ranked right ({100 * share:.0f}%), "
              f"{ties} ties within {100 * args.tie:.0f}% skipped   goal >= 90%")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "summary": summary}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
