#!/usr/bin/env python3
"""How well the cost model predicts this machine: predicted makespan vs measured wall time.

For every example under >= 10 plans (unsharded, batch/row splits, out splits, reduction splits,
grids, fused and not), runs

    tapestry cost GRAPH --plan P --target TARGET --json      -> makespan_s (predicted)
    tapestry run  GRAPH --plan P --metrics M --repeat R ...  -> wall_s     (median of R runs;
                                                                          median over rounds)

and prints, per example and overall, the relative error of each plan and the fraction of plan
pairs (same example, measured times more than 15% apart) that the model orders correctly —
FlexFlow's test of a simulator. Usage (from the repository root, after `make build`):

    bench/cost_fidelity.py [--tapestry build/ci/src/cli/tapestry] [--target cpu-local]
                           [--repeat 3] [--rounds 3] [--min-time 0.2]
                           [--examples mlp,convnet] [--json out.json]

Every plan is measured once per round, the rounds interleaved (all plans, then all again), and
the median over the rounds counts: on this shared VM a process sometimes runs at half speed on
both threads for seconds, which one round absorbs.

A plan whose --repeat runs take less than --min-time seconds is measured again with as many
runs as fill it (at most 1,000, a tenth of them as warm-ups): the median of 5 runs of a 5 µs
plan is mostly scheduler noise.

Needs only the Python standard library. Output: a Markdown table (docs/cost.md quotes one).
"""
import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile

# Plans per example: (name, plan JSON).
PLANS = {
    "linear_relu": [
        ("unsharded", {}),
        ("fuse", {"fuse": "auto"}),
        ("batch2", {"ops": {"Y/linear": {"split": {"batch": 2}}, "Y": {"split": {"d0": 2}}}}),
        ("batch2-fused", {"ops": {"Y/linear": {"split": {"batch": 2}}}, "fuse": [["Y/linear", "Y"]]}),
        ("batch4", {"ops": {"Y/linear": {"split": {"batch": 4}}, "Y": {"split": {"d0": 4}}}}),
        ("out2", {"ops": {"Y/linear": {"split": {"out": 2}}, "Y": {"split": {"d1": 2}}}}),
        ("grid4x2", {"ops": {"Y/linear": {"split": {"batch": 4, "out": 2}}, "Y": {"split": {"d0": 4, "d1": 2}}}}),
        ("in2", {"ops": {"Y/linear": {"split": {"in": 2}}}}),
        ("in3-batch2-fused", {"ops": {"Y/linear": {"split": {"in": 3, "batch": 2}}}, "fuse": "auto"}),
        ("batch10", {"ops": {"Y/linear": {"split": {"batch": 10}}, "Y": {"split": {"d0": 10}}}}),
        ("batch25-fused", {"ops": {"Y/linear": {"split": {"batch": 25}}}, "fuse": "auto"}),
    ],
    "mlp": [
        ("unsharded", {}),
        ("fuse", {"fuse": "auto"}),
        ("batch2", {"ops": {"H/linear": {"split": {"batch": 2}}, "H": {"split": {"d0": 2}},
                            "Y": {"split": {"batch": 2}}}}),
        ("batch2-fused", {"ops": {"H/linear": {"split": {"batch": 2}}, "Y": {"split": {"batch": 2}}},
                          "fuse": "auto"}),
        ("batch8-fused", {"ops": {"H/linear": {"split": {"batch": 8}}, "Y": {"split": {"batch": 8}}},
                          "fuse": "auto"}),
        ("megatron", {"ops": {"H/linear": {"split": {"out": 2}}, "H": {"split": {"d1": 2}},
                              "Y": {"split": {"in": 2}}}, "fuse": [["H/linear", "H"]]}),
        ("out2", {"ops": {"H/linear": {"split": {"out": 2}}, "H": {"split": {"d1": 2}},
                          "Y": {"split": {"out": 2}}}}),
        ("grid2x2", {"ops": {"H/linear": {"split": {"batch": 2, "out": 2}},
                             "Y": {"split": {"batch": 2, "out": 2}}}, "fuse": "auto"}),
        ("in4", {"ops": {"H/linear": {"split": {"in": 4}}, "Y": {"split": {"in": 4}}}}),
        ("batch32-fused", {"ops": {"H/linear": {"split": {"batch": 32}}, "Y": {"split": {"batch": 32}}},
                           "fuse": "auto"}),
    ],
    "convnet": [
        ("unsharded", {}),
        ("fuse", {"fuse": "auto"}),
        ("batch2", {"ops": {"C1/conv2d": {"split": {"n": 2}}, "C2/conv2d": {"split": {"n": 2}}}}),
        ("batch2-fused", {"ops": {"C1/conv2d": {"split": {"n": 2}}, "C2/conv2d": {"split": {"n": 2}}},
                          "fuse": "auto"}),
        ("batch2-in2", {"ops": {"C1/conv2d": {"split": {"n": 2}}, "C2/conv2d": {"split": {"n": 2}},
                                "Logits": {"split": {"in": 2}}}, "fuse": "auto"}),
        ("batch8-fused", {"ops": {"C1/conv2d": {"split": {"n": 8}}, "C2/conv2d": {"split": {"n": 8}}},
                          "fuse": "auto"}),
        ("cout2", {"ops": {"C1/conv2d": {"split": {"o": 2}}, "C2/conv2d": {"split": {"o": 2}}}}),
        ("rows2", {"ops": {"C1/conv2d": {"split": {"oh": 2}}, "C2/conv2d": {"split": {"oh": 2}}}}),
        ("grid2x2", {"ops": {"C1/conv2d": {"split": {"n": 2, "o": 2}},
                             "C2/conv2d": {"split": {"n": 2, "o": 2}}}, "fuse": "auto"}),
        ("in4", {"ops": {"Logits": {"split": {"in": 4}}}}),
    ],
    "transformer_block": [
        ("unsharded", {}),
        ("fuse", {"fuse": "auto"}),
        ("heads", "examples/plans/transformer_block-heads.json"),
        ("heads2", {"ops": {"Scores/matmul": {"split": {"batch1": 2}}, "P": {"split": {"batch1": 2}},
                            "Ctx": {"split": {"batch1": 2}}}}),
        ("heads8", {"ops": {"Scores/matmul": {"split": {"batch1": 8}}, "P": {"split": {"batch1": 8}},
                            "Ctx": {"split": {"batch1": 8}}, "Scores": {"split": {"d1": 8}}}}),
        ("rows2", {"ops": {n: {"split": {"batch": 2}} for n in
                           ["Q/linear", "K/linear", "V/linear", "Attn", "M/linear", "M"]}}),
        ("rows4-fused", {"ops": {n: {"split": {"batch": 4}} for n in
                                 ["Q/linear", "K/linear", "V/linear", "Attn", "M/linear", "M"]},
                         "fuse": "auto"}),
        ("mlp-out2", {"ops": {"M/linear": {"split": {"out": 2}}, "M/gelu": {"split": {"d1": 2}},
                              "M": {"split": {"in": 2}}}, "fuse": [["M/linear", "M/gelu"]]}),
        ("qkv-out4", {"ops": {n: {"split": {"out": 4}} for n in ["Q/linear", "K/linear", "V/linear"]}}),
        ("mlp-in4", {"ops": {"M": {"split": {"in": 4}}, "Attn": {"split": {"in": 4}}}}),
    ],
}


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}\n{p.stderr}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tapestry", default="build/ci/src/cli/tapestry")
    ap.add_argument("--target", default="cpu-local")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3,
                    help="measure every plan once per round, rounds interleaved; report the median")
    ap.add_argument("--min-time", type=float, default=0.2,
                    help="timed runs of a plan fill at least this many seconds (max 1000 runs)")
    ap.add_argument("--examples", default=",".join(PLANS))
    ap.add_argument("--json", help="also write the rows as JSON here")
    args = ap.parse_args()
    if args.repeat < 1 or args.rounds < 1 or args.min_time < 0:
        ap.error("--repeat and --rounds must be >= 1, --min-time >= 0")
    unknown = [e for e in args.examples.split(",") if e not in PLANS]
    if unknown:
        ap.error(f"unknown example(s) {', '.join(unknown)} (known: {', '.join(PLANS)})")

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "m.json")

        def measure(graph, plan_file, repeat, warmup):
            run([args.tapestry, "run", graph, "--plan", plan_file, "--metrics", metrics,
                 "--repeat", str(repeat), "--warmup", str(warmup), "--quiet"])
            with open(metrics) as f:
                return json.load(f)["wall_s"]

        cases = []  # (example, plan name, graph, plan file, predicted)
        for example in args.examples.split(","):
            graph = f"examples/{example}.tap"
            for name, plan in PLANS[example]:
                if isinstance(plan, str):
                    plan_file = plan
                else:
                    plan_file = os.path.join(tmp, f"{example}-{name}.json")
                    with open(plan_file, "w") as f:
                        json.dump(plan, f)
                predicted = json.loads(run([args.tapestry, "cost", graph, "--plan", plan_file,
                                            "--target", args.target, "--json"]))["makespan_s"]
                cases.append((example, name, graph, plan_file, predicted))
        # Every plan once per round, rounds interleaved: a process that runs at half speed for
        # a while (this shared VM's vCPUs sometimes do, both threads at once) costs one sample.
        repeats = {}
        samples = {i: [] for i in range(len(cases))}
        for _ in range(args.rounds):
            for i, (example, name, graph, plan_file, _) in enumerate(cases):
                if i not in repeats:
                    first = measure(graph, plan_file, args.repeat, 1)
                    # Short plans: the median of as many runs as fill --min-time (up to 1000),
                    # so that a 5 µs plan is not judged on five samples of scheduler noise.
                    repeats[i] = args.repeat
                    if first * args.repeat < args.min_time:
                        repeats[i] = min(1000, max(args.repeat,
                                                   int(args.min_time / max(first, 1e-7))))
                warmup = 1 if repeats[i] == args.repeat else max(1, repeats[i] // 10)
                samples[i].append(measure(graph, plan_file, repeats[i], warmup))
        for i, (example, name, _, _, predicted) in enumerate(cases):
            measured = statistics.median(samples[i])
            rows.append({"example": example, "plan": name, "predicted_s": predicted,
                         "measured_s": measured, "rounds_s": samples[i],
                         "error": (predicted - measured) / measured})
            print(f"{example:18} {name:18} predicted {predicted*1e3:10.3f} ms  measured "
                  f"{measured*1e3:10.3f} ms  error {rows[-1]['error']*100:+7.1f}%", file=sys.stderr)

    def ranking(subset):
        right = total = 0
        for a, b in itertools.combinations(subset, 2):
            lo, hi = sorted([a["measured_s"], b["measured_s"]])
            if hi <= 1.15 * lo:
                continue
            total += 1
            right += (a["predicted_s"] < b["predicted_s"]) == (a["measured_s"] < b["measured_s"])
        return right, total

    print("| example | plan | predicted | measured | error |")
    print("|---|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['example']} | {r['plan']} | {r['predicted_s']*1e3:.3f} ms | "
              f"{r['measured_s']*1e3:.3f} ms | {r['error']*100:+.1f}% |")
    print()
    print("| example | plans | median \\|error\\| | pairs ranked right (measured > 15% apart) |")
    print("|---|---:|---:|---:|")
    all_right = all_total = 0
    for example in args.examples.split(","):
        subset = [r for r in rows if r["example"] == example]
        right, total = ranking(subset)
        all_right += right
        all_total += total
        med = statistics.median(abs(r["error"]) for r in subset)
        print(f"| {example} | {len(subset)} | {med*100:.1f}% | {right}/{total} "
              f"({100*right/max(total,1):.0f}%) |")
    med = statistics.median(abs(r["error"]) for r in rows)
    print(f"| **all** | {len(rows)} | {med*100:.1f}% | {all_right}/{all_total} "
          f"({100*all_right/max(all_total,1):.0f}%) |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
