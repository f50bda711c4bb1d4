"""Random inputs for a graph, one NAME.npy per graph input (tests/cli/codegen_test.sh).

usage: codegen_inputs.py GRAPH.json DIR SEED
GRAPH.json is `tapestry build` output; the graph inputs are the tensors no operation writes.
Floats are uniform in [-1, 1); integers (class labels) uniform in [0, 10)."""
import json
import os
import sys

import numpy as np

graph_file, out, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
nodes = json.load(open(graph_file))["nodes"]
written = set()
for n in nodes:
    if n["type"].endswith("/Operation"):
        for lst in n["body"].get("outputs", {}).values():
            written.update(s["tensorId"] for s in lst)
dtypes = {"float32": np.float32, "float64": np.float64, "int32": np.int32, "int64": np.int64}
rng = np.random.default_rng(seed)
os.makedirs(out, exist_ok=True)
for n in nodes:
    if not n["type"].endswith("/Tensor") or n["id"] in written:
        continue
    body = n["body"]
    shape = [e - s for s, e in zip(body["range"]["start"], body["range"]["end"])]
    dtype = dtypes[body["dtype"]]
    if np.issubdtype(dtype, np.integer):
        data = rng.integers(0, 10, size=shape).astype(dtype)
    else:
        data = rng.uniform(-1, 1, size=shape).astype(dtype)
    np.save(os.path.join(out, n.get("label", n["id"]) + ".npy"), data)
