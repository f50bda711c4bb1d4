#!/usr/bin/env python3
"""How local the mutations of a search walk are (docs/optimizer.md, "The evaluator's speed").

A memo of rewritten fragments per operation (issue 33, step 2) re-rewrites only the operations
whose inputs to the rewrites changed. This counts them on a walk: for each plan, the operations
whose *local key* no earlier plan of the walk had. An operation's local key: the fusion mode and
the fusion groups naming it or a neighbour, the plan's other global members, its own plan entry
and those of its neighbours (the operations making or reading its tensors); its counts exact, or
(numbered) 1 kept and the others numbered by first appearance within the key, as the Evaluator's
memo key numbers count classes.

  tapestry build vit.tap -o vit.json
  search_bench --chain 200 --graph vit.tap --plans-out walk.jsonl
  /usr/bin/python3 bench/walk_locality.py vit.json walk.jsonl
"""
import json
import re
import sys


def neighbours(graph_path):
    nodes = json.load(open(graph_path))["nodes"]
    ops = [n for n in nodes if n["type"].endswith("/Operation")]
    producer, readers = {}, {}
    for op in ops:
        for sel in op["body"]["outputs"].values():
            for s in sel:
                producer[s["tensorId"]] = op["label"]
        for sel in op["body"]["inputs"].values():
            for s in sel:
                readers.setdefault(s["tensorId"], []).append(op["label"])
    near = {}
    for op in ops:
        made = [producer[s["tensorId"]] for sel in op["body"]["inputs"].values() for s in sel
                if s["tensorId"] in producer]
        read = [r for sel in op["body"]["outputs"].values() for s in sel
                for r in readers.get(s["tensorId"], [])]
        near[op["label"]] = sorted(set(made + read) - {op["label"]})
    return near


def numbered(text):
    classes = {}

    def number(m):
        v = int(m.group(1))
        if v == 1:
            return ": 1"
        classes.setdefault(v, len(classes))
        return f': "#{classes[v]}"'

    return re.sub(r":\s*(\d+)", number, text)


def main():
    near = neighbours(sys.argv[1])
    plans = [json.loads(line) for line in open(sys.argv[2])]
    for mode in ("exact", "numbered"):
        seen = {op: set() for op in near}
        fresh = []
        for plan in plans:
            entries = plan.get("ops", {})
            others = {k: v for k, v in plan.items() if k not in ("ops", "fuse")}
            n = 0
            for op, around in near.items():
                fuse = plan.get("fuse")
                if isinstance(fuse, list):
                    local = {op, *around}
                    fuse = ["groups"] + [g for g in fuse if local & set(g)]
                key = json.dumps([fuse, others, entries.get(op)] +
                                 [[x, entries.get(x)] for x in around], sort_keys=True)
                if mode == "numbered":
                    key = numbered(key)
                if key not in seen[op]:
                    seen[op].add(key)
                    n += 1
            fresh.append(n)
        rest = sorted(fresh[1:])
        print(f"{mode}: {len(near)} operations, {len(plans)} plans; after the first plan, operations "
              f"with a new local key: median {rest[len(rest) // 2]}, mean {sum(rest) / len(rest):.1f}, "
              f"max {rest[-1]}; plans with more than a fifth of them new: "
              f"{sum(1 for x in rest if x * 5 > len(near))}")


if __name__ == "__main__":
    main()
