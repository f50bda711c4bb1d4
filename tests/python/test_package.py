"""The package itself: what it exports, its type stubs matching the compiled module, its
docstrings, errors as exception classes, and `cmake --install` putting it where Debian's python3
finds it."""

from __future__ import annotations

import ast
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tapestry
from conftest import EXAMPLES, ROOT


def stub_names() -> dict[str, set[str]]:
    """{top-level name: its member names} from _core.pyi."""
    stub = Path(tapestry.__file__).with_name("_core.pyi")
    names: dict[str, set[str]] = {}
    for node in ast.parse(stub.read_text()).body:
        if isinstance(node, ast.ClassDef):
            names[node.name] = {
                n.name if isinstance(n, ast.FunctionDef) else n.target.id
                for n in node.body
                if isinstance(n, ast.FunctionDef) or (isinstance(n, ast.AnnAssign)
                                                      and isinstance(n.target, ast.Name))
            }
        elif isinstance(node, ast.FunctionDef):
            names[node.name] = set()
    return names


def test_the_stubs_and_the_module_agree():
    from tapestry import _core

    stubs = stub_names()
    public = {n for n in dir(_core) if not n.startswith("_")}
    assert set(stubs) == public
    for cls, members in stubs.items():
        obj = getattr(_core, cls)
        if not inspect.isclass(obj):
            continue
        actual = {n for n in dir(obj) if not n.startswith("__")}
        actual -= {n for n in dir(object)}
        members = {m for m in members if not m.startswith("__")}
        assert members == actual, cls


def test_exports_docstrings_and_marker():
    assert Path(tapestry.__file__).with_name("py.typed").exists()
    for name in tapestry.__all__:
        obj = getattr(tapestry, name)
        assert obj.__doc__, name
    for name in tapestry.ops.__all__:
        assert getattr(tapestry.ops, name).__doc__, name


def test_error_classes():
    assert issubclass(tapestry.GraphError, tapestry.Error)
    assert issubclass(tapestry.InputError, tapestry.Error)
    assert issubclass(tapestry.InputError, ValueError)
    assert issubclass(tapestry.VerificationError, tapestry.Error)


def test_located_errors_from_tap(tmp_path):
    bad = tmp_path / "bad.tap"
    bad.write_text("X: f32[8, 12]\nW: f32[16, 10]\nb: f32[16]\nY = relu(linear(X, W, b))\n")
    with pytest.raises(tapestry.GraphError) as raised:
        tapestry.load(bad)
    message = str(raised.value)
    assert f"{bad}:4:10: error: linear: X has 12 columns but W has 10" in message
    assert "^" in message  # the caret under the column
    # The same diagnostic as data: its place typed, its text the message's.
    [diagnostic] = raised.value.diagnostics
    assert (diagnostic["severity"], diagnostic["file"], diagnostic["line"],
            diagnostic["column"]) == ("error", str(bad), 4, 10)
    assert diagnostic["message"].startswith("linear: X has 12 columns but W has 10")
    assert diagnostic["text"] == message
    with pytest.raises(tapestry.GraphError, match=r"model:2:1: error"):
        tapestry.parse("X: f32[4]\n= relu(X)\n", name="model")
    with pytest.raises(tapestry.Error, match="no such file"):
        tapestry.load(tmp_path / "missing.tap")


def test_invalid_json_graph_names_the_node():
    path = ROOT / "tests" / "data" / "cli" / "linear_relu_bad_bias.json"
    expected = (ROOT / "tests" / "data" / "cli" / "linear_relu_bad_bias.issues.txt").read_text()
    with pytest.raises(tapestry.GraphError) as raised:
        tapestry.load(path)
    first_issue = expected.strip().splitlines()[0]
    assert first_issue in str(raised.value)
    # Each issue is also a diagnostic: its code is the issue's type, its place the node.
    diagnostic = raised.value.diagnostics[0]
    assert first_issue.startswith(f"{diagnostic['severity']}[{diagnostic['code']}]: ")
    assert diagnostic["code"] == "operation-kernel-agreement"
    assert diagnostic["node"]


def test_loads_tap_and_json_alike(tmp_path):
    g = tapestry.load(EXAMPLES / "mlp.tap")
    g.save(tmp_path / "mlp.json")
    again = tapestry.load(tmp_path / "mlp.json")
    assert again.to_json() == g.to_json()
    assert repr(again).startswith(f"Graph({tmp_path / 'mlp.json'}: 5 inputs, 3 operations")


def test_cmake_install_puts_it_where_python_finds_it(tmp_path):
    build = os.environ.get("TAPESTRY_BUILD")
    if not build:
        pytest.fail("TAPESTRY_BUILD is not set (run the tests through ctest)")
    subprocess.run(["cmake", "--install", build, "--prefix", tmp_path, "--component", "python"],
                   check=True, capture_output=True)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = tmp_path / "lib" / version / "dist-packages"
    assert (site / "tapestry" / "__init__.py").exists()
    assert (site / "tapestry" / "_core.pyi").exists()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    done = subprocess.run(
        [sys.executable, "-c", "import tapestry; print(tapestry.__file__, len(tapestry.kernels()))"],
        env=env, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(str(site / "tapestry"))


def test_the_python_example_runs():
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / "mlp.py")],
                          capture_output=True, text=True, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("PASS   Y:") == 2
    assert "numpy: True" in done.stdout and "Sharding on h100x8" in done.stdout
