"""The package's layout rules (issue 11): the model imports only the model; importing the package loads
no plotting or Jupyter module; no module grows past about 600 lines."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "encoder_course"
MODEL = ("positions", "attention", "masks", "multi_head", "layer_norm", "feed_forward", "block", "encoder",
         "pooling", "blockwise")
MAX_LINES = 650  # "about 600"


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found.update({base} if node.module else {f"{base}{alias.name}" for alias in node.names})
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


@pytest.mark.parametrize("name", MODEL)
def test_a_model_module_imports_only_torch_and_the_model(name):
    allowed = {f".{m}" for m in MODEL} | {"._validate", "__future__", "math", "dataclasses", "torch",
                                         "torch.nn", "torch.nn.functional"}
    extra = _imports(PACKAGE / f"{name}.py") - allowed
    assert not extra, f"{name}.py imports {sorted(extra)}"


def test_importing_the_package_loads_no_plotting_or_jupyter_module():
    code = ("import sys, encoder_course\n"
            "print([m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'ipywidgets', 'IPython', "
            "'jupyter_client', 'nbformat', 'nbclient', 'sphinx')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_is_over_about_600_lines(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.name} has {lines} lines"
