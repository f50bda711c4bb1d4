#!/usr/bin/env python3
"""Tapestry's price of the standard distributed plans against a closed-form NCCL/roofline price.

For each case below (a bf16 graph, a plan, a GPU target) this prints Tapestry's makespan
(`tapestry cost GRAPH --plan PLAN --target T --json`), a price written out by hand the way a
performance engineer prices the same plan — a roofline for every kernel on the critical GPU plus
NCCL's closed forms for its collectives — and their ratio. Usage (from the repository root,
after `make build`):

    bench/cost_vs_closed_form.py [--tapestry build/ci/src/cli/tapestry] [--markdown]
                                 [--cases mlp-tp8-ar,gpt3-tp64] [--keep DIR]

The closed form reads the target's constants (`tapestry targets T --json`) and nothing else of
Tapestry's; every case prints the terms it adds. Its rules:

* a kernel takes `launch + max(FLOPs / (peak · efficiency), bytes / (HBM bandwidth · bandwidth
  efficiency))`, bytes = what it reads and writes once, a GEMM's efficiency read from the device
  type's `gemm_efficiency` table by FLOPs per call (interpolated in log FLOPs, as docs/cost.md
  states) where it has one; a batched matmul is one kernel; an
  elementwise op fused into a GEMM's epilogue adds nothing; a reshape is a view and costs nothing;
* NCCL's ring (n participants, N bytes, α the link class's collective step latency, B its
  collective bandwidth): reduce-scatter and all-gather (n − 1)(α + N/n/B), all-reduce twice that;
  across nodes the hierarchical form (g GPUs per node, m nodes): reduce-scatter
  (g − 1)(α_i + N/(g B_i)) + (m − 1)(α_e + N/(g m B_e)), all-gather the same, all-reduce the sum;
* every GPU runs the same shards, so the critical path is one GPU's kernels and the collectives,
  one after another (nothing here can overlap: each collective waits for the GEMM before it).

Needs only the Python standard library. Output: a table (--markdown: the one docs/cost.md quotes).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

BF16 = 2  # bytes per element
F32 = 4  # a bf16 graph's partial sums are float32 (rewrite/mixed_precision.h)


# ---------------------------------------------------------------------------------------------
# Graphs (bf16). T tokens, model width D, MLP width F.

def mlp_graph(t, d, f, about):
    return (f"# {about}\n"
            f"X:  bf16[{t}, {d}]\nW1: bf16[{f}, {d}]\nb1: bf16[{f}]\n"
            f"W2: bf16[{d}, {f}]\nb2: bf16[{d}]\n"
            "H = gelu(linear(X, W1, b1))\nY = linear(H, W2, b2)\noutput Y\n")


def layer_graph(batch, seq, d, heads, f):
    dh = d // heads
    t = batch * seq
    return f"""# One transformer layer (attention + MLP, no layer norm): {batch} x {seq} tokens, width {d} =
# {heads} heads of {dh}, MLP {f}, bf16. Heads split out with reshape/permute.
X:   bf16[{t}, {d}]
Wq:  bf16[{d}, {d}]
bq:  bf16[{d}]
Wk:  bf16[{d}, {d}]
bk:  bf16[{d}]
Wv:  bf16[{d}, {d}]
bv:  bf16[{d}]
Wo:  bf16[{d}, {d}]
bo:  bf16[{d}]
W1:  bf16[{f}, {d}]
b1:  bf16[{f}]
W2:  bf16[{d}, {f}]
b2:  bf16[{d}]
Scale: bf16[1]
Q = permute(reshape(linear(X, Wq, bq), shape=[{batch}, {seq}, {heads}, {dh}]), perm=[0, 2, 1, 3])
K = permute(reshape(linear(X, Wk, bk), shape=[{batch}, {seq}, {heads}, {dh}]), perm=[0, 2, 1, 3])
V = permute(reshape(linear(X, Wv, bv), shape=[{batch}, {seq}, {heads}, {dh}]), perm=[0, 2, 1, 3])
Scores = mul(matmul(Q, transpose(K)), Scale)
P = softmax(Scores)
Ctx = matmul(P, V)
Attn = linear(reshape(permute(Ctx, perm=[0, 2, 1, 3]), shape=[{t}, {d}]), Wo, bo)
R1 = add(X, Attn)
M = linear(gelu(linear(R1, W1, b1)), W2, b2)
Y = add(R1, M)
output Y
"""


# ---------------------------------------------------------------------------------------------
# The closed form: a roofline per kernel and NCCL's ring / hierarchical collectives.

class ClosedForm:
    """Adds up one GPU's critical path from the target's constants, keeping every term."""

    def __init__(self, target):
        (dtype,) = target["device_types"].values()
        self.peak_flops = dtype["peak_flops"]["bfloat16"]
        self.efficiency = dtype["efficiency"]
        self.table = dtype.get("gemm_efficiency", [])  # [[FLOPs per call, efficiency], …]
        self.hbm = dtype["memory_bandwidth_Bps"] * dtype["bandwidth_efficiency"]
        self.launch = dtype["launch_s"]
        self.per_node = sum(target["nodes"]["devices"].values())
        links = target["links"]
        self.intra = links["intra_node"]["collective"]
        self.inter = links.get("inter_node", {}).get("collective")
        self.terms = []

    def _add(self, what, seconds):
        self.terms.append((what, seconds))

    def gemm_efficiency(self, flops):
        """The device type's efficiency for a GEMM call of `flops`: its table, interpolated in
        log FLOPs and clamped at the ends, or the flat efficiency without one."""
        t = self.table
        if not t:
            return self.efficiency
        if flops <= t[0][0]:
            return t[0][1]
        if flops >= t[-1][0]:
            return t[-1][1]
        for (f0, e0), (f1, e1) in zip(t, t[1:]):
            if flops <= f1:
                return e0 + math.log(flops / f0) / math.log(f1 / f0) * (e1 - e0)

    def gemm(self, what, m, n, k, count=1, launches=1):
        """count GEMMs [m, k] x [k, n] -> [m, n] in `launches` kernels (a batched matmul is one)."""
        flops = 2 * m * n * k * count
        moved = (m * k + k * n + m * n) * BF16 * count
        per_call = flops / launches
        rate = self.peak_flops * self.gemm_efficiency(per_call)
        self._add(f"{what}: {count}x GEMM {m}x{n}x{k}" + (f" in {launches} kernels" if launches > 1
                                                          else ""),
                  launches * self.launch + max(flops / rate, moved / self.hbm))

    def stream(self, what, elements, reads, writes=1):
        """An elementwise or reduction kernel over `elements` outputs reading `reads` inputs."""
        self._add(f"{what}: {elements} elements, {reads} in 1 out",
                  self.launch + elements * (reads + writes) * BF16 / self.hbm)

    def _ring(self, n, nbytes, link):
        return (n - 1) * (link["step_latency_s"] + nbytes / n / link["bandwidth_Bps"])

    def _hierarchical(self, g, m, nbytes):
        return ((g - 1) * (self.intra["step_latency_s"] + nbytes / g / self.intra["bandwidth_Bps"])
                + (m - 1) * (self.inter["step_latency_s"]
                             + nbytes / (g * m) / self.inter["bandwidth_Bps"]))

    def collective(self, kind, nbytes, n):
        """kind: reduce-scatter, all-gather or all-reduce of nbytes over n GPUs (n GPUs of one
        node, or whole nodes: hierarchical)."""
        if n <= self.per_node:
            one = self._ring(n, nbytes, self.intra)
            algo = "ring"
        else:
            one = self._hierarchical(self.per_node, n // self.per_node, nbytes)
            algo = "hierarchical"
        rounds = 2 if kind == "all-reduce" else 1
        self._add(f"{kind} ({algo}) of {nbytes / 2**20:.1f} MiB over {n}", rounds * one)

    def total(self):
        return sum(s for _, s in self.terms)


# Closed forms per case: (cf, shape) -> None, adding the terms of one GPU.

def mlp_terms(cf, t, d, f, data, tensor, combine):
    """An MLP cut data x tensor (Megatron: the first linear by columns with gelu in its
    epilogue, the second by rows; its partial sums reduce-scattered over the tensor group, the
    bias added to the rows each GPU then holds, and for `all-reduce` all-gathered after it — the
    two halves of NCCL's ring all-reduce with the bias between them)."""
    rows = t // data
    cf.gemm("linear 1 + gelu", rows, f // tensor, d)
    if tensor == 1:
        cf.gemm("linear 2 + bias", rows, d, f)
        return
    cf.gemm("linear 2 (partial sums)", rows, d, f // tensor)
    cf.collective("reduce-scatter", rows * d * F32, tensor)  # float32 partials
    cf.stream("bias", rows // tensor * d, 2)
    if combine == "all-reduce":
        cf.collective("all-gather", rows * d * BF16, tensor)


def layer_terms(cf, batch, seq, d, heads, f, tensor):
    """Megatron-LM's layer with sequence parallelism: Q, K and V by heads (columns), attention by
    heads, the output projection by rows, its partial sums reduce-scattered by rows, bias and
    residual on each GPU's rows, an all-gather of R1 for the MLP, then the MLP as above with its
    output left reduce-scattered, bias and residual on each GPU's rows."""
    t = batch * seq
    dh = d // heads
    hh = heads // tensor
    cf.gemm("Q, K, V projections", t, d // tensor, d, count=3, launches=3)
    cf.stream("permute Q, K, V", 3 * t * d // tensor, 1)
    cf.stream("transpose K", t * d // tensor, 1)
    cf.gemm("scores", seq, seq, dh, count=batch * hh)
    cf.stream("scale", batch * hh * seq * seq, 1)
    cf.stream("softmax", batch * hh * seq * seq, 1)
    cf.gemm("context", seq, dh, seq, count=batch * hh)
    cf.stream("permute context", t * d // tensor, 1)
    cf.gemm("output projection (partial sums)", t, d, d // tensor)
    cf.collective("reduce-scatter", t * d * F32, tensor)  # float32 partials
    cf.stream("bias", t // tensor * d, 2)
    cf.stream("residual", t // tensor * d, 2)
    cf.collective("all-gather", t * d * BF16, tensor)
    mlp_terms(cf, t, d, f, 1, tensor, "reduce-scatter")
    cf.stream("residual", t // tensor * d, 2)


MLP8 = dict(t=8192, d=4096, f=16384)
GPT3 = dict(t=16384, d=12288, f=49152)
LAYER = dict(batch=8, seq=1024, d=4096, heads=32, f=16384)


def tp_mlp_plan(tensor, combine, data=1):
    """Megatron's MLP: the first linear by columns, the second by rows (split-reduction); its
    combine follows its consumers by default — nothing reads Y, so it is cut by rows where the
    partials are: a reduce-scatter; replicating Y adds the all-gather (NCCL's all-reduce). With
    data > 1, batch on the mesh's dp axis, the tensor cuts on tp."""
    if data == 1:
        ops = {"H/linear": {"split": {"out": tensor}}, "H": {"split": {"d1": tensor}},
               "Y": {"split": {"in": tensor}}}
    else:
        ops = {"H/linear": {"split": {"batch": data, "out": tensor},
                            "mesh": {"batch": "dp", "out": "tp"}},
               "H": {"split": {"d0": data, "d1": tensor}, "mesh": {"d0": "dp", "d1": "tp"}},
               "Y": {"split": {"batch": data, "in": tensor}, "mesh": {"batch": "dp", "in": "tp"}}}
    plan = {"ops": ops, "fuse": "auto"}
    if combine == "all-reduce":
        plan["outputs"] = {"Y": {"replicate": "all" if data == 1 else "tp"}}
    return plan


def dp_mlp_plan(data):
    return {"ops": {"H/linear": {"split": {"batch": data}}, "H": {"split": {"d0": data}},
                    "Y": {"split": {"batch": data}}}, "fuse": "auto"}


MLP = lambda: mlp_graph(**MLP8, about="MLP: 8192 tokens, 4096 -> 16384 -> 4096, bf16")
GPT = lambda: mlp_graph(**GPT3, about="GPT-3 175B's MLP: 16384 tokens, d 12288, ffn 49152, bf16")
LAYER_G = lambda: layer_graph(**LAYER)

# name, what, target (a preset, or (preset, mesh)), graph, plan (a dict, or "standard:NAME": the
# plan `tapestry plan --standard NAME` writes), the closed form's terms
CASES = [
    ("mlp-dp8", "MLP, data parallel ×8", "h100x8", MLP, dp_mlp_plan(8),
     lambda cf: mlp_terms(cf, **MLP8, data=8, tensor=1, combine=None)),
    ("mlp-tp8-ar", "MLP, Megatron TP8, all-reduce (Y replicated)", "h100x8", MLP,
     tp_mlp_plan(8, "all-reduce"),
     lambda cf: mlp_terms(cf, **MLP8, data=1, tensor=8, combine="all-reduce")),
    ("mlp-tp8-rs", "MLP, Megatron TP8, reduce-scatter", "h100x8", MLP,
     tp_mlp_plan(8, "reduce-scatter"),
     lambda cf: mlp_terms(cf, **MLP8, data=1, tensor=8, combine="reduce-scatter")),
    ("mlp-dp2tp4-ar", "MLP, data 2 × tensor 4, all-reduce", ("h100x8", {"dp": 2, "tp": 4}), MLP,
     tp_mlp_plan(4, "all-reduce", data=2),
     lambda cf: mlp_terms(cf, **MLP8, data=2, tensor=4, combine="all-reduce")),
    ("mlp-dp2tp4-rs", "MLP, data 2 × tensor 4, reduce-scatter", ("h100x8", {"dp": 2, "tp": 4}),
     MLP, tp_mlp_plan(4, "reduce-scatter", data=2),
     lambda cf: mlp_terms(cf, **MLP8, data=2, tensor=4, combine="reduce-scatter")),
    ("layer-tp8", "attention + MLP layer, 8 × 1024 tokens, Megatron TP8 (sequence parallel)",
     "h100x8", LAYER_G, "standard:megatron-rs",
     lambda cf: layer_terms(cf, **LAYER, tensor=8)),
    ("gpt3-dp64", "GPT-3 MLP, data parallel ×64", "h100x64", GPT, dp_mlp_plan(64),
     lambda cf: mlp_terms(cf, **GPT3, data=64, tensor=1, combine=None)),
    ("gpt3-dp8tp8", "GPT-3 MLP, data 8 × tensor 8, all-reduce", "h100x64", GPT,
     tp_mlp_plan(8, "all-reduce", data=8),
     lambda cf: mlp_terms(cf, **GPT3, data=8, tensor=8, combine="all-reduce")),
    ("gpt3-tp64", "GPT-3 MLP, TP64, all-reduce (hierarchical)", "h100x64", GPT,
     tp_mlp_plan(64, "all-reduce"),
     lambda cf: mlp_terms(cf, **GPT3, data=1, tensor=64, combine="all-reduce")),
]


def run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {proc.returncode}\n{proc.stderr}")
    return proc.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tapestry", default="build/ci/src/cli/tapestry")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--cases", help="comma-separated case names (default: all)")
    parser.add_argument("--keep", help="write the graphs and plans into this directory")
    args = parser.parse_args()
    chosen = set(args.cases.split(",")) if args.cases else None
    work = args.keep or tempfile.mkdtemp(prefix="tapestry-closed-form-")
    os.makedirs(work, exist_ok=True)
    targets = {}
    rows = []
    for name, about, target, graph, plan, terms in CASES:
        if chosen and name not in chosen:
            continue
        preset, mesh = target if isinstance(target, tuple) else (target, None)
        target_arg = preset
        if preset not in targets:
            targets[preset] = json.loads(run([args.tapestry, "targets", preset, "--json"]))
        if mesh:
            spec = dict(targets[preset], mesh=mesh)
            target_arg = os.path.join(work, f"{name}-target.json")
            with open(target_arg, "w") as out:
                json.dump(spec, out, indent=1)
            target = f"{preset} ({' × '.join(f'{k}={v}' for k, v in mesh.items())})"
        graph_path = os.path.join(work, f"{name}.tap")
        plan_path = os.path.join(work, f"{name}.json")
        with open(graph_path, "w") as out:
            out.write(graph())
        if isinstance(plan, str):
            plan = json.loads(run([args.tapestry, "plan", graph_path, "--standard",
                                   plan.split(":", 1)[1], "--target", target_arg]))
        with open(plan_path, "w") as out:
            json.dump(plan, out, indent=1)
        cost = json.loads(run([args.tapestry, "cost", graph_path, "--plan", plan_path,
                               "--target", target_arg, "--json"]))
        cf = ClosedForm(targets[preset])
        terms(cf)
        rows.append((name, about, target, cost["makespan_s"], cf))
    for name, about, target, tapestry_s, cf in rows:
        ratio = tapestry_s / cf.total()
        if args.markdown:
            continue
        print(f"== {name} on {target}: {about}")
        for what, seconds in cf.terms:
            print(f"     {seconds * 1e6:9.1f} us  {what}")
        print(f"  closed form {cf.total() * 1e6:.1f} us, Tapestry {tapestry_s * 1e6:.1f} us, "
              f"ratio {ratio:.2f}")
    if args.markdown:
        print("| plan | target | Tapestry | closed form | ratio |")
        print("|---|---|---|---|---|")
        for name, about, target, tapestry_s, cf in rows:
            print(f"| {about} | {target} | {tapestry_s * 1e6:.1f} µs | {cf.total() * 1e6:.1f} µs"
                  f" | {tapestry_s / cf.total():.2f} |")
    bad = [name for name, _, _, t, cf in rows if not 0.85 <= t / cf.total() <= 1.15]
    if bad:
        print(f"outside 0.85-1.15: {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
