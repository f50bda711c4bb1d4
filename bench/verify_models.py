"""ResNet-18 and ViT-B/16 for bench/verify_overhead.sh, exported to ONNX with torch.onnx.export.

  verify_models.py OUT [--resnet-px 224] [--vit-px 64]

writes OUT/resnet18.onnx (input x [1, 3, PX, PX]) and OUT/vit_b_16.onnx (x [1, 3, PX, PX]),
random weights (torch.manual_seed(0)), eval mode, opset 17. torchvision is not needed: both are
written here in plain torch with only the operators `tapestry import --list-ops` supports, with
torchvision's layer shapes, so the same parameter counts and the same FLOPs up to the
differences below.

ResNet-18 (torchvision.models.resnet18): identical layers (conv 7×7/2, BatchNorm, ReLU, max pool
3×3/2 pad 1, four stages of two BasicBlocks, 1×1/2 downsample convolutions with BatchNorm,
global average pool, fc 512→1000). Exported in eval mode, each BatchNorm folds into its
convolution (torch.onnx's Conv+BN fusion), as it would for torchvision's model. One difference:
the stem's max pool pads with an explicit zero Pad and pools without padding (the importer takes
no MaxPool pads); its input is a ReLU's output (≥ 0), so a zero pad gives the same values as
the −inf padding of MaxPool2d(padding=1).

ViT-B/16 (torchvision.models.vit_b_16(image_size=PX)): patch embedding as a 16×16/16
convolution, 12 encoder layers (pre-norm LayerNorm eps 1e-6, 12-head self-attention of width
768, MLP 768→3072→768 with exact GELU, residuals), final LayerNorm, head 768→1000 on the class
token. Differences: (1) the class token and the position embedding enter as
`tokens = S @ patches + C` — S a constant [1+P, P] 0/1 matrix that shifts the P patch rows down
one row, C = [class token; 0] + position embedding, one [1+P, 768] parameter — instead of
torch.cat and an add (Concat of tensors does not import); it adds 2·(1+P)·P·768 FLOPs (0.4 MFLOP
at 64 px, P = 16); (2) attention is written out (q, k, v as three 768→768 linears instead of
MultiheadAttention's one packed 768→2304 projection: the same weights' shapes and FLOPs;
scores = q·kᵀ·(1/8), softmax, ·v, heads merged, out projection); (3) the class token is sliced
with x[:, 0:1] (Slice) instead of x[:, 0] (Gather).
"""
import argparse
import os
import sys

try:
    import torch
    import torch.nn.functional as F
except Exception as e:  # noqa: BLE001 - any import failure means "skip"
    print(f"skip: python3 cannot import torch: {e}")
    sys.exit(77)


class BasicBlock(torch.nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(cout)
        self.conv2 = torch.nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            torch.nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(64)
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = torch.nn.Sequential(*layers)
        self.fc = torch.nn.Linear(512, 1000)
        for m in self.modules():  # non-trivial BatchNorm statistics, so the folding matters
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.data.uniform_(0.5, 1.5)
                m.bias.data.uniform_(-0.1, 0.1)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = F.max_pool2d(F.pad(x, (1, 1, 1, 1)), 3, 2)  # = MaxPool2d(3, 2, padding=1) on x ≥ 0
        x = self.layers(x)
        x = F.adaptive_avg_pool2d(x, 1)
        return self.fc(torch.flatten(x, 1))


class EncoderLayer(torch.nn.Module):
    def __init__(self, tokens, d=768, heads=12, mlp=3072):
        super().__init__()
        self.tokens, self.d, self.heads = tokens, d, heads
        self.scale = 1.0 / (d // heads) ** 0.5
        self.ln1 = torch.nn.LayerNorm(d, eps=1e-6)
        self.q = torch.nn.Linear(d, d)
        self.k = torch.nn.Linear(d, d)
        self.v = torch.nn.Linear(d, d)
        self.out = torch.nn.Linear(d, d)
        self.ln2 = torch.nn.LayerNorm(d, eps=1e-6)
        self.fc1 = torch.nn.Linear(d, mlp)
        self.fc2 = torch.nn.Linear(mlp, d)

    def split(self, t):  # [1, T, d] -> [1, heads, T, d / heads] (static shapes: no Shape ops)
        return t.reshape(1, self.tokens, self.heads, self.d // self.heads).transpose(1, 2)

    def forward(self, x):
        h = self.ln1(x)
        q, k, v = self.split(self.q(h)), self.split(self.k(h)), self.split(self.v(h))
        a = torch.softmax(q @ k.transpose(-2, -1) * self.scale, dim=-1)
        x = x + self.out((a @ v).transpose(1, 2).reshape(1, self.tokens, self.d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class VitB16(torch.nn.Module):
    def __init__(self, px, d=768, layers=12):
        super().__init__()
        patches = (px // 16) ** 2
        self.patch = torch.nn.Conv2d(3, d, 16, 16)
        shift = torch.zeros(patches + 1, patches)
        shift[1:] = torch.eye(patches)
        self.register_buffer("shift", shift)
        self.tokens = torch.nn.Parameter(torch.randn(1, patches + 1, d) * 0.02)  # cls + pos
        self.layers = torch.nn.Sequential(*[EncoderLayer(patches + 1, d) for _ in range(layers)])
        self.ln = torch.nn.LayerNorm(d, eps=1e-6)
        self.head = torch.nn.Linear(d, 1000)

    def forward(self, x):
        p = self.patch(x).flatten(2).transpose(1, 2)  # [B, P, d]
        x = self.layers(self.shift @ p + self.tokens)
        return self.head(self.ln(x)[:, 0:1]).flatten(1)


def export(model, px, path):
    model.eval()
    x = torch.randn(1, 3, px, px)
    with torch.no_grad():
        torch.onnx.export(model, (x,), path, opset_version=17, input_names=["x"],
                          output_names=["y"])
    constant_pads(path)


def constant_pads(path):
    """torch 1.13 exports F.pad's pads as a computation (ConstantOfShape, Concat, Reshape,
    Slice, Transpose …) that its constant folding leaves; the importer reads constant pads only.
    The model's one F.pad (ResNet's stem, (1, 1, 1, 1) on the last two dims of NCHW) has its
    pads replaced by the initializer they evaluate to, [0, 0, 1, 1, 0, 0, 1, 1], and the dead
    nodes are removed."""
    import numpy as np
    import onnx
    from onnx import numpy_helper
    m = onnx.load(path)
    g = m.graph
    known = {i.name for i in g.initializer}
    pads = [n for n in g.node if n.op_type == "Pad" and n.input[1] not in known]
    assert len(pads) <= 1, "only the stem's F.pad is known"
    for node in pads:
        name = node.input[1] + "_const"
        g.initializer.append(
            numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), name))
        node.input[1] = name
    live = {o.name for o in g.output}
    keep = []
    for node in reversed(list(g.node)):
        if any(o in live for o in node.output):
            keep.append(node)
            live.update(node.input)
    del g.node[:]
    g.node.extend(reversed(keep))
    onnx.save(m, path)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--resnet-px", type=int, default=224)
    p.add_argument("--vit-px", type=int, default=64)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(0)
    export(ResNet18(), a.resnet_px, os.path.join(a.out, "resnet18.onnx"))
    export(VitB16(a.vit_px), a.vit_px, os.path.join(a.out, "vit_b_16.onnx"))


if __name__ == "__main__":
    main()
