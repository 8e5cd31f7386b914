"""Delivery files agree with each other: Binder's pins, the Colab cell, README's course map."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from encoder_course.notebook_tools import COLAB_CELL, REPO_SLUG

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = sorted((ROOT / "notebooks" / "solutions").glob("[0-9][0-9]_*.ipynb"))


def pins(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        name, _, version = line.partition("==")
        assert version, f"{path.name}: {line!r} is not pinned with =="
        out[name.strip().lower().replace("_", "-")] = version.strip()
    return out


def test_binder_pins_agree_with_requirements():
    main, binder = pins(ROOT / "requirements.txt"), pins(ROOT / "binder" / "requirements.txt")
    assert binder.pop("torch") == main.pop("torch") + "+cpu", "Binder must take the CPU build of the same torch"
    assert binder == main
    assert "download.pytorch.org/whl/cpu" in (ROOT / "binder" / "requirements.txt").read_text()
    post = (ROOT / "binder" / "postBuild").read_text()
    assert post.startswith("#!") and "pip install" in post and "-e ." in post
    assert re.fullmatch(r"python-3\.\d+\s*", (ROOT / "binder" / "runtime.txt").read_text())


def test_pyproject_parses_and_names_the_console_script():
    tomllib = pytest.importorskip("tomllib", reason="tomllib needs Python 3.11")
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert data["project"]["scripts"]["encoder-course"] == "encoder_course.cli:main"
    deps = " ".join(data["project"]["dependencies"])
    for name in ("torch", "einops", "matplotlib", "ipywidgets"):
        assert name in deps


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_notebook_starts_with_the_colab_cell(path):
    nb = nbformat.read(path, as_version=4)
    first = nb.cells[0]
    assert first.cell_type == "code" and first.source == COLAB_CELL


def test_readme_maps_every_notebook_with_badges():
    readme = (ROOT / "README.md").read_text()
    for path in SOLUTIONS:
        assert f"notebooks/{path.name}" in readme, f"README's course map misses {path.name}"
        assert f"colab.research.google.com/github/{REPO_SLUG}/blob/main/notebooks/{path.name}" in readme
    assert "mybinder.org/v2/gh/" + REPO_SLUG in readme


def test_readme_counts_the_checker_catalogues():
    """README's figures for the catalogues stay equal to what the catalogues hold."""
    import importlib

    modules = [importlib.import_module(name) for name in
               ("test_checks", "test_checks_catalogue2", "test_checks_catalogue3", "test_checks_catalogue4")]
    wrong, right = sum(len(m.WRONG) for m in modules), sum(len(m.RIGHT) for m in modules)
    readme = (ROOT / "README.md").read_text()
    assert f"{wrong} wrong answers, each to be named, and {right} right ones" in readme, (wrong, right)
