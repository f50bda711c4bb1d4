#!/usr/bin/env python3
"""Regenerates the seed corpora of tests/fuzz/corpus/<harness>/ from the repository's examples,
kernel files and test data, plus a few hand-written seeds per format (docs/reliability.md).

    python3 tests/fuzz/make_corpus.py      # from the repository root; rewrites corpus/

Seeds are named after their origin; the corpus stays small (libFuzzer grows its own in a
scratch folder, see scripts/fuzz.sh). Regressions (tests/fuzz/regressions/) are never touched.
"""
import glob
import os
import re
import shutil
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")


def put(harness, name, data):
    folder = os.path.join(CORPUS, harness)
    os.makedirs(folder, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(folder, name), "wb") as out:
        out.write(data)


def copy_files(harness, pattern, prefix=""):
    for path in sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True)):
        with open(path, "rb") as f:
            put(harness, prefix + os.path.basename(path), f.read())


def split_yaml_documents(path):
    with open(path) as f:
        return [d.strip() + "\n" for d in re.split(r"^---\s*$", f.read(), flags=re.M) if d.strip()]


def code_blocks(path):
    with open(path) as f:
        return re.findall(r"```[a-z]*\n(.*?)```", f.read(), flags=re.S)


def tap():
    copy_files("tap", "examples/*.tap")
    copy_files("tap", "tests/data/cli/*.tap", "cli_")
    blocks = [b for b in code_blocks(os.path.join(ROOT, "docs", "language.md"))
              if not b.lstrip().startswith("$") and "Graph g" not in b and ":=" not in b
              and "g." not in b]
    for i, block in enumerate(blocks):
        put("tap", f"language_md_{i}.tap", block)
    put("tap", "errors.tap", "X: f32[4, 8]\nY = rleu(X)\nZ = linear(X, X, X)\nQ = X\n"
        "W: f33[2]\nV: f32[4:2]\noutput Nope\n")
    put("tap", "params.tap", 'A: i64[2, 3]; B: f64[]\nS = sum(A, dim=-1)\n'
        'R = reshape(A, shape=[3, 2])\nP = reduce(S, op=max)\nT = max(A, A)\noutput S, R\n')


def kernel_yaml():
    for path in sorted(glob.glob(os.path.join(ROOT, "kernels", "*.yaml"))):
        base = os.path.splitext(os.path.basename(path))[0]
        for i, doc in enumerate(split_yaml_documents(path)):
            put("kernel_yaml", f"{base}_{i}.yaml", doc)
    copy_files("kernel_yaml", "tests/data/metakernel/user_kernels/*.yaml", "user_")


def loom_json():
    copy_files("loom_json", "tests/data/ir/*.json")
    copy_files("loom_json", "tests/data/ir/golden/*.json", "golden_")
    copy_files("loom_json", "tests/data/compat/*.json", "compat_")


def plan():
    copy_files("plan", "examples/plans/*.json")
    for i, block in enumerate(code_blocks(os.path.join(ROOT, "docs", "rewrites.md"))):
        if block.lstrip().startswith("{"):
            put("plan", f"rewrites_md_{i}.json", block)
    put("plan", "all_fields.json", '{"ops": {"Y/linear": {"split": {"batch": 2, "in": 3},'
        ' "substitute": ["decompose-linear"], "place": ["cpu:0", "cpu:1"]}},'
        ' "fuse": [["Y/linear", "Y"]]}')
    put("plan", "fuse_auto.json", '{"ops": {"Y": {"split": {"out": 4}}}, "fuse": "auto"}')


def target():
    copy_files("target", "targets/*.json")
    for i, block in enumerate(code_blocks(os.path.join(ROOT, "docs", "cost.md"))):
        if block.lstrip().startswith("{"):
            put("target", f"cost_md_{i}.json", block)
    put("target", "two_kinds_pairs_mesh.json",
        '{"name": "t", "device_types": {"c": {"kind": "cpu", "peak_flops": {"float64": 1e9},'
        ' "memory_bandwidth_Bps": 1e10, "memory_bytes": 1e9},'
        ' "g": {"kind": "gpu", "peak_flops": {"float32": 1e12, "int8": 2e12},'
        ' "memory_bandwidth_Bps": 1e12, "memory_bytes": 8000000000, "idle_w": 0, "busy_w": 1}},'
        ' "nodes": {"count": 2, "devices": {"c": 1, "g": 2}},'
        ' "links": {"intra_node": {"bandwidth_Bps": 1e11, "shared_memory": false},'
        ' "inter_node": {"bandwidth_Bps": 1e10, "latency_s": 1e-6}, "host": {"bandwidth_Bps": 1e9}},'
        ' "mesh": [["b", 3], ["a", 2]], "inputs": "host", "outputs": "host", "calibration": {}}')


def npy_file(descr, shape, data=b"", version=1, fortran=False):
    inner = ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "")
    shape_text = f"({inner})"
    header = (f"{{'descr': '{descr}', 'fortran_order': {fortran}, "
              f"'shape': {shape_text}, }}")
    prefix = 10 if version == 1 else 12
    total = (prefix + len(header) + 1 + 63) // 64 * 64
    header = header + " " * (total - prefix - len(header) - 1) + "\n"
    length = struct.pack("<H" if version == 1 else "<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + length + header.encode("latin1") + data


def npy():
    put("npy", "f4_2x3.npy", npy_file("<f4", (2, 3), struct.pack("<6f", 1, 2, 3, 4, 5, 6)))
    put("npy", "f8_3.npy", npy_file("<f8", (3,), struct.pack("<3d", -1.5, 0, 1e300)))
    put("npy", "i4_2x2x1.npy", npy_file("<i4", (2, 2, 1), struct.pack("<4i", 1, -2, 3, -4)))
    put("npy", "i8_scalar.npy", npy_file("<i8", (), struct.pack("<q", 42)))
    put("npy", "f4_empty.npy", npy_file("<f4", (0, 5)))
    put("npy", "native_f4.npy", npy_file("=f4", (1,), struct.pack("<f", 7)))
    put("npy", "v2_f4.npy", npy_file("<f4", (2,), struct.pack("<2f", 1, 2), version=2))
    put("npy", "v3_i8.npy", npy_file("<i8", (1,), struct.pack("<q", 1), version=3))
    put("npy", "fortran.npy", npy_file("<f4", (1, 1), struct.pack("<f", 1), fortran=True))
    put("npy", "big_endian.npy", npy_file(">f4", (1,), struct.pack(">f", 1)))
    put("npy", "f2.npy", npy_file("<f2", (1,), b"\0\0"))
    put("npy", "truncated.npy", npy_file("<f8", (4,), struct.pack("<d", 1)))


def index_text():
    seeds = ["zr[0:3, 0:3]", "zr[-40:60, 20:32]", "zr[]", "zr[5:5]", "zr[0:3, 0]", "(1, -2)",
             "[1, -2]", "()", "(5, 6)", " ( 7 ,\t-8 ) ", "zr[-9223372036854775808:9223372036854775807]",
             "(9223372036854775807, -9223372036854775808)", "zr[1:0]", "(1,)", "zr[0:1,]"]
    for i, seed in enumerate(seeds):
        put("index_text", f"seed_{i}.txt", seed)


def ipf_json():
    with open(os.path.join(ROOT, "examples", "zspace", "linear_shards.txt")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, ipf = line.split(None, 1)
            put("ipf_json", f"linear_{name}.json", ipf.strip())
    seeds = {
        "readme_diag.json": '{"affineMap":{"projection":[[1,-1]],"offset":[0]},"shape":[1]}',
        "readme_stride.json": '{"affineMap":{"projection":[[2]],"offset":[0]},"shape":[3]}',
        "readme_3x2.json": '{"affineMap":{"projection":[[1,0],[0,1],[1,1]],'
                           '"offset":[10,20,30]},"shape":[4,4,1]}',
        "scalar.json": '{"affineMap":{"projection":[],"offset":[]},"shape":[]}',
        "range.json": '{"start": [2, 3], "end": [4, 5]}',
        "point.json": "[2, -3]",
        "affine_map.json": '{"projection": [[1, 0], [0, 2]], "offset": [4, 5]}',
        "big.json": '{"affineMap":{"projection":[[4611686018427387904]],'
                    '"offset":[-9223372036854775808]},"shape":[9223372036854775807]}',
    }
    for name, text in seeds.items():
        put("ipf_json", name, text)


def main():
    for harness in ["tap", "kernel_yaml", "loom_json", "plan", "target", "npy", "index_text",
                    "ipf_json"]:
        shutil.rmtree(os.path.join(CORPUS, harness), ignore_errors=True)
    tap()
    kernel_yaml()
    loom_json()
    plan()
    target()
    npy()
    index_text()
    ipf_json()


if __name__ == "__main__":
    main()
