#!/usr/bin/python3
"""ONNX backend test data through `tapestry import` + `tapestry run`, counted.

Reads Debian's libonnx-testdata (/usr/share/libonnx-testdata/data: node tests, PyTorch model
tests, simple models). For every case it imports model.onnx, feeds test_data_set_0's inputs,
runs the graph unsharded with the fast kernels and compares each output with the expected one
at the ONNX backend's default tolerance (|got - want| <= atol + rtol·|want|, rtol 1e-3,
atol 1e-7; NaN matches NaN; a bfloat16 output within one bf16 unit in the last place, as ONNX
1.12's expected values truncate to bf16 where Tapestry rounds to nearest even). Each input's
shape is its data's (`--shape`: a backend takes the shapes at run time). Each case gets exactly one outcome:

  pass         every output within tolerance
  wrong        ran, but an output differs (or has the wrong shape) — a bug
  crash        a signal or an exit code other than 0/1/2 (3 is an internal error) — a bug
  unsupported  import refused an operator Tapestry does not map
  refused      import refused something else (opset, dtype, attribute, shape) with a clear error
  run-error    imported, but `run` refused it (exit 2) — e.g. an input the graph lacks

Usage:
  bench/onnx_conformance.py --tapestry build/ci/src/cli/tapestry [--data DIR] [--only SUBSTR]
                            [--jobs N] [--list OUTCOME] [--json FILE] [--require-pass]
                            [--supported] [--int-inputs-at-import]

Prints a table of counts per suite and outcome, then the refusal reasons most often met.
`--list wrong` prints every case with that outcome and its message. `--supported` prints the
node tests whose operators `tapestry import --list-ops` all lists that do not pass, grouped by
their refusal (docs/onnx.md explains each group). `--int-inputs-at-import` runs each case with
its integer and boolean inputs (shapes, axes, pads, indices, masks — which Tapestry folds at
import and a backend takes at run time) made initializers holding the case's data: the
operators' results when those are known at import. Exit 1 if any case is
`wrong` or `crash`, or (`--require-pass`, for tests/onnx's copies of cases that must pass) any
case that does not pass.
"""
import argparse
import collections
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

RTOL, ATOL = 1e-3, 1e-7
SUITES = ("node", "pytorch-converted", "pytorch-operator", "simple")


def read_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def listed(stdout, key):
    for line in stdout.splitlines():
        parts = line.split(maxsplit=1)
        if parts and parts[0] == key:
            return [n.strip() for n in parts[1].split(",")] if len(parts) > 1 else []
    return []


def reason_of(message):
    """A refusal message without the file and node names, for grouping."""
    m = re.sub(r"^tapestry \w+: error: ", "", message.strip().splitlines()[-1] if message.strip() else "")
    m = re.sub(r"^\S+\.onnx: ", "", m)
    m = re.sub(r"^node '[^']*' \(([^,]+), node \d+\): ", r"\1: ", m)
    m = re.sub(r"'[^']*'", "'…'", m)
    m = re.sub(r"\d+", "N", m)
    return m[:140]


def bf16_bits(v):
    """A bf16 tensor as the runtime's .npy holds it: uint16 bit patterns. The test data holds
    bf16 as uint16 bits already (ONNX 1.12 writes them so) or, read through numpy_helper, as
    float32 values."""
    return v if v.dtype == np.uint16 else (v.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def bf16_values(v):
    return (v.astype(np.uint32) << 16).view(np.float32)


INT_TYPES = {onnx.TensorProto.INT8, onnx.TensorProto.INT16, onnx.TensorProto.INT32,
             onnx.TensorProto.INT64, onnx.TensorProto.UINT8, onnx.TensorProto.UINT16,
             onnx.TensorProto.UINT32, onnx.TensorProto.UINT64, onnx.TensorProto.BOOL}


def with_int_inputs_at_import(model, data, tmp):
    """--int-inputs-at-import: the model with its integer and boolean inputs made initializers
    holding the case's data (shapes, axes, indices, masks known at import, as Tapestry folds
    them), and a data folder without them; None when the case has none."""
    proto = onnx.load(model)
    initialized = {t.name for t in proto.graph.initializer}
    inputs = [i for i in proto.graph.input if i.name not in initialized]
    files = sorted((f for f in os.listdir(data) if f.startswith("input_")),
                   key=lambda f: int(re.findall(r"\d+", f)[0]))
    baked = [(i, f) for i, f in zip(inputs, files)
             if i.type.HasField("tensor_type") and i.type.tensor_type.elem_type in INT_TYPES]
    if not baked:
        return None
    for info, f in baked:
        t = onnx.TensorProto()
        with open(os.path.join(data, f), "rb") as fh:
            t.ParseFromString(fh.read())
        t.name = info.name
        proto.graph.initializer.append(t)
    names = {info.name for info, _ in baked}
    # (They stay in graph.input too: an initializer must be listed there below IR version 4,
    # and may be from 4 on.)
    new_data = os.path.join(tmp, "data")
    os.makedirs(new_data)
    k = 0
    for info, f in zip(inputs, files):
        if info.name not in names:
            shutil.copy(os.path.join(data, f), os.path.join(new_data, f"input_{k}.pb"))
            k += 1
    for f in os.listdir(data):
        if f.startswith("output_"):
            shutil.copy(os.path.join(data, f), new_data)
    new_model = os.path.join(tmp, "model.onnx")
    onnx.save(proto, new_model)
    return new_model, new_data


def run_case(tapestry, case_dir, int_inputs_at_import=False):
    if int_inputs_at_import and os.path.isdir(os.path.join(case_dir, "test_data_set_0")):
        with tempfile.TemporaryDirectory() as tmp:
            derived = with_int_inputs_at_import(os.path.join(case_dir, "model.onnx"),
                                                os.path.join(case_dir, "test_data_set_0"), tmp)
            if derived is None:
                return run_case(tapestry, case_dir)
            return run_model(tapestry, *derived)
    return run_model(tapestry, os.path.join(case_dir, "model.onnx"),
                     os.path.join(case_dir, "test_data_set_0"))


def run_model(tapestry, model, data):
    proto = onnx.load(model)
    initialized = {t.name for t in proto.graph.initializer}
    proto_inputs = [i for i in proto.graph.input if i.name not in initialized]
    proto_outputs = list(proto.graph.output)
    is_bf16 = lambda info: info.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16  # noqa: E731
    # The data's shapes are the inputs' shapes (a backend takes them at run time: a model may
    # declare a dynamic dim, or — ONNX's CastLike tests — a shape its data does not have).
    shapes = []
    if os.path.isdir(data):
        for info, f in zip(proto_inputs, sorted((f for f in os.listdir(data) if f.startswith("input_")),
                                                key=lambda f: int(re.findall(r"\d+", f)[0]))):
            if not info.type.HasField("tensor_type"):
                continue  # a sequence or an optional: the import refuses it
            try:
                v = read_pb(os.path.join(data, f))
            except Exception:  # noqa: BLE001 — data the import refuses anyway
                continue
            if v.ndim > 0:
                shapes += ["--shape", f"{info.name}={','.join(str(d) for d in v.shape)}"]
    with tempfile.TemporaryDirectory() as tmp:
        graph = os.path.join(tmp, "g.tap")
        weights = os.path.join(tmp, "in")
        r = subprocess.run([tapestry, "import", model, "-o", graph, "--weights", weights] + shapes,
                           capture_output=True, text=True)
        if r.returncode not in (0, 2):
            return "crash", f"import exit {r.returncode}: {r.stderr.strip()[-300:]}"
        if r.returncode == 2:
            kind = "unsupported" if "is not supported (`tapestry import --list-ops`" in r.stderr else "refused"
            return kind, r.stderr.strip()
        inputs, outputs = listed(r.stdout, "inputs"), listed(r.stdout, "outputs")
        if not os.path.isdir(data):
            return "refused", "the case has no test_data_set_0"
        given = sorted(f for f in os.listdir(data) if f.startswith("input_"))
        wanted = sorted(f for f in os.listdir(data) if f.startswith("output_"))
        given.sort(key=lambda f: int(re.findall(r"\d+", f)[0]))
        wanted.sort(key=lambda f: int(re.findall(r"\d+", f)[0]))
        if len(given) != len(inputs) or len(wanted) != len(outputs):
            return "run-error", (f"the graph has {len(inputs)} inputs and {len(outputs)} outputs, "
                                 f"the data {len(given)} and {len(wanted)}")
        for (name, f), info in zip(zip(inputs, given), proto_inputs):
            v = read_pb(os.path.join(data, f))
            if v.dtype == np.bool_:  # a boolean input is a float32 0/1 mask (docs/onnx.md)
                v = v.astype(np.float32)
            np.save(os.path.join(weights, name + ".npy"), bf16_bits(v) if is_bf16(info) else v)
        out_dir = os.path.join(tmp, "out")
        r = subprocess.run([tapestry, "run", graph, "--inputs", weights, "--outputs", out_dir,
                            "--quiet", "--threads", "1"], capture_output=True, text=True)
        if r.returncode not in (0, 2):
            return "crash", f"run exit {r.returncode}: {r.stderr.strip()[-300:]}"
        if r.returncode == 2:
            return "run-error", r.stderr.strip()
        for (name, f), info in zip(zip(outputs, wanted), proto_outputs):
            want = read_pb(os.path.join(data, f))
            got = np.load(os.path.join(out_dir, name + ".npy"))
            if is_bf16(info):  # both as float32 values
                want, got = bf16_values(bf16_bits(want)), bf16_values(bf16_bits(got))
            if got.shape != want.shape:
                return "wrong", f"output {name}: shape {got.shape}, expected {want.shape}"
            w = want.astype(np.float64)
            g = got.astype(np.float64)
            tol = ATOL + RTOL * np.abs(w)
            if is_bf16(info):
                # One bf16 unit in the last place of the expected value (8 significant bits: rtol
                # 1e-3 is below bf16's resolution): ONNX 1.12's reference truncates float32 to
                # bf16 where its Cast spec and Tapestry round to nearest even. (The bit patterns
                # compared as integers at rtol 1e-3, as before, allowed ~16 units.)
                tol = np.maximum(tol, np.ldexp(1.0, np.frexp(w)[1] - 8))
            with np.errstate(invalid="ignore"):
                bad = ~((np.abs(g - w) <= tol) | (np.isnan(g) & np.isnan(w)) | (g == w))
            if bad.any():
                i = np.unravel_index(np.argmax(bad), bad.shape)
                return "wrong", (f"output {name}: {int(bad.sum())} of {bad.size} cells differ, "
                                 f"first at {i}: {g[i]!r} vs {w[i]!r}")
        return "pass", ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tapestry", required=True)
    ap.add_argument("--data", default="/usr/share/libonnx-testdata/data")
    ap.add_argument("--only", default="")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--list", default="")
    ap.add_argument("--json", default="")
    ap.add_argument("--int-inputs-at-import", action="store_true",
                    help="make each case's integer and boolean inputs initializers holding its data")
    ap.add_argument("--supported", action="store_true",
                    help="list the node tests of supported operators that do not pass, by reason")
    ap.add_argument("--require-pass", action="store_true",
                    help="exit 1 unless every case passes (and at least one ran)")
    a = ap.parse_args()
    if not os.path.isdir(a.data):
        sys.exit(f"{a.data}: not found (apt-get install libonnx-testdata)")
    cases = []
    for suite in SUITES:
        root = os.path.join(a.data, suite)
        if not os.path.isdir(root):
            continue
        for name in sorted(os.listdir(root)):
            d = os.path.join(root, name)
            if os.path.isfile(os.path.join(d, "model.onnx")) and a.only in name:
                cases.append((suite, name, d))
    tapestry = os.path.abspath(a.tapestry)
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        results = list(pool.map(lambda c: run_case(tapestry, c[2], a.int_inputs_at_import), cases))
    outcomes = ("pass", "wrong", "crash", "unsupported", "refused", "run-error")
    counts = {s: collections.Counter() for s in SUITES}
    reasons = collections.Counter()
    for (suite, _, _), (outcome, message) in zip(cases, results):
        counts[suite][outcome] += 1
        if outcome in ("unsupported", "refused", "run-error"):
            reasons[(outcome, reason_of(message))] += 1
    print(f"{'suite':<18}" + "".join(f"{o:>12}" for o in outcomes) + f"{'total':>8}")
    total = collections.Counter()
    for suite in SUITES:
        if sum(counts[suite].values()):
            print(f"{suite:<18}" + "".join(f"{counts[suite][o]:>12}" for o in outcomes)
                  + f"{sum(counts[suite].values()):>8}")
            total.update(counts[suite])
    print(f"{'all':<18}" + "".join(f"{total[o]:>12}" for o in outcomes) + f"{sum(total.values()):>8}")
    print("\nmost frequent refusals:")
    for (outcome, reason), n in reasons.most_common(25):
        print(f"  {n:4}  {outcome:<11}  {reason}")
    if a.supported:
        listing = subprocess.run([tapestry, "import", "--list-ops"], capture_output=True, text=True)
        ops = {line.split()[0] for line in listing.stdout.splitlines()[1:] if line.strip()}
        groups = collections.defaultdict(list)
        covered = passed = 0
        for (suite, name, d), (outcome, message) in zip(cases, results):
            if suite != "node":
                continue
            types = {n.op_type for n in onnx.load(os.path.join(d, "model.onnx")).graph.node}
            if not types or not types <= ops:
                continue
            covered += 1
            if outcome == "pass":
                passed += 1
            else:
                groups[(outcome, reason_of(message))].append(name)
        print(f"\nnode tests whose operators are all supported: {passed} of {covered} pass; the others:")
        for (outcome, reason), names in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            print(f"  {len(names):4}  {outcome:<11}  {reason}")
            print(f"        {', '.join(sorted(names))}")
    if a.list:
        print(f"\ncases with outcome {a.list}:")
        for (suite, name, _), (outcome, message) in zip(cases, results):
            if outcome == a.list:
                print(f"  {suite}/{name}: {message.strip().splitlines()[-1] if message.strip() else ''}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump([{"suite": s, "case": n, "outcome": o, "message": m}
                       for (s, n, _), (o, m) in zip(cases, results)], f, indent=1)
    if a.require_pass:
        failed = [(s, n, o, m) for (s, n, _), (o, m) in zip(cases, results) if o != "pass"]
        for s, n, o, m in failed:
            print(f"NOT PASSED  {s}/{n}: {o}: {m.strip().splitlines()[-1] if m.strip() else ''}")
        if failed or not cases:
            return 1
    return 1 if total["wrong"] or total["crash"] else 0


if __name__ == "__main__":
    sys.exit(main())
