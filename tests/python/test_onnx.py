"""tapestry.import_onnx and tapestry.load_weights (docs/onnx.md "From Python"): a PyTorch model
exported to ONNX, imported as a Graph plus weights and run from Python, against PyTorch's own
output; the weights folder `tapestry import` writes, read back by graph input names."""

from __future__ import annotations

import numpy as np
import pytest

import tapestry

from conftest import run_cli

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")


class Net(torch.nn.Module):
    """Layer names with dots and nesting, so weight names need renaming ('/' and '.')."""

    def __init__(self):
        super().__init__()
        self.block = torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.LeakyReLU(0.2))
        self.head = torch.nn.Linear(16, 5)

    def forward(self, x):
        return torch.nn.functional.hardtanh(self.head(self.block(x)), -0.5, 0.5)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    torch.manual_seed(3)
    net = Net().eval()
    x = torch.randn(6, 12)
    folder = tmp_path_factory.mktemp("onnx")
    torch.onnx.export(net, (x,), folder / "net.onnx", opset_version=14, input_names=["x"],
                      output_names=["y"])
    torch.onnx.export(net, (x,), folder / "net9.onnx", opset_version=9, input_names=["x"],
                      output_names=["y"])
    with torch.no_grad():
        y = net(x).numpy()
    return folder, x.numpy(), y


def test_import_run_matches_pytorch(exported):
    folder, x, y = exported
    graph, weights = tapestry.import_onnx(folder / "net.onnx")
    assert isinstance(graph, tapestry.Graph)
    assert set(weights) | {"x"} == {t.name for t in graph.inputs}
    out = graph.run({**weights, "x": x}, verify=True)
    np.testing.assert_allclose(out["y"], y, rtol=1e-5, atol=1e-6)
    # The verifier judges PyTorch's output against the graph too.
    assert graph.verify({**weights, "x": x}, {"y": y})["verdict"] == "pass"
    wrong = y.copy()
    wrong[2, 3] += 1e-3
    with pytest.raises(tapestry.VerificationError, match="1 of 30 cells outside their bar"):
        graph.verify({**weights, "x": x}, {"y": wrong})


def test_info_says_what_the_import_did(exported):
    folder, x, y = exported
    graph, weights, info = tapestry.import_onnx(folder / "net9.onnx", with_info=True)
    assert info["opset"] == 13 and info["converted_from"] == 9
    assert info["inputs"] == ["x"] and info["outputs"] == ["y"]
    out = graph.run({**weights, "x": x})
    np.testing.assert_allclose(out["y"], y, rtol=1e-5, atol=1e-6)
    _, _, info14 = tapestry.import_onnx(folder / "net.onnx", with_info=True)
    assert info14["opset"] == 14 and info14["converted_from"] == 0


def test_load_weights_reads_what_the_cli_wrote(exported, tmp_path):
    folder, x, _ = exported
    run_cli("import", folder / "net.onnx", "-o", tmp_path / "g.tap", "--weights", tmp_path / "w")
    graph = tapestry.load(tmp_path / "g.tap")
    _, weights = tapestry.import_onnx(folder / "net.onnx")
    loaded = tapestry.load_weights(tmp_path / "w", graph)
    assert set(loaded) == set(weights)
    assert any("/" in name for name in loaded), "the test needs a name with '/' in it"
    for name, value in weights.items():
        np.testing.assert_array_equal(loaded[name], value)
    # Without a graph: the file names.
    plain = tapestry.load_weights(tmp_path / "w")
    assert set(plain) == {n.replace("/", "_") for n in weights}


def test_bad_model_and_folder(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a protobuf\xff\xff")
    with pytest.raises(tapestry.GraphError, match="bad.onnx: not a readable ONNX model"):
        tapestry.import_onnx(bad)
    with pytest.raises(tapestry.InputError, match="is not a directory"):
        tapestry.load_weights(tmp_path / "missing")
