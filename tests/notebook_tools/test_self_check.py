"""The learner's self-check, `pytest --nbval-lax notebooks/NN_name.ipynb`, on a real course notebook.

It must fail while the exercise is a stub (also after Run All and a save, when the notebook stores
its own "not attempted" output), fail (with the checker's hint) on a wrong answer, and pass on a
correct one. The notebook is copied with `notebooks/conftest.py`, as it sits in a learner's checkout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from unittest import mock

import nbformat
import pytest

from encoder_course.notebook_tools.executor import run_notebook

ROOT = Path(__file__).resolve().parents[2]
NAME = "01_tokens_and_positions.ipynb"
LEARNER = ROOT / "notebooks" / NAME
SOLUTION = ROOT / "notebooks" / "solutions" / NAME

WRONG_BODY = """    position = torch.arange(seq_len, dtype=torch.float32)[:, None]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)
    angles = position / 10000 ** (two_i / d_model)
    table = torch.zeros(seq_len, d_model)
    table[:, 0::2] = torch.cos(angles)
    table[:, 1::2] = torch.sin(angles)
    return table
"""

pytestmark = pytest.mark.notebooks


def solution_body() -> str:
    for cell in nbformat.read(SOLUTION, as_version=4).cells:
        if "### BEGIN SOLUTION" in cell.source:
            inner = cell.source.split("### BEGIN SOLUTION\n", 1)[1].split("### END SOLUTION", 1)[0]
            return inner.rstrip(" ")
    raise AssertionError("no exercise found in the solution notebook")


def with_body(body: str | None, folder: Path, run_and_save: bool = False) -> Path:
    nb = nbformat.read(LEARNER, as_version=4)
    if body is not None:
        for cell in nb.cells:
            if cell.cell_type == "code" and "raise NotImplementedError" in cell.source:
                lines = cell.source.splitlines(keepends=True)
                cell.source = "".join(body if "raise NotImplementedError" in line else line for line in lines)
    shutil.copy(ROOT / "notebooks" / "conftest.py", folder / "conftest.py")
    if run_and_save:  # Run All in JupyterLab, then the autosave: every cell stores its own output
        with mock.patch.dict(os.environ, {"ENCODER_COURSE_WORKSPACE": str(folder / "my_encoder")}):
            run_notebook(nb, timeout=300, cwd=folder)
    path = folder / NAME
    nbformat.write(nb, path)
    return path


# What jupyter_client says when nbval's kernel dies before it answers. With two test workers starting
# kernels at once this happens now and then: a port picked for the kernel is taken before the kernel
# binds it ("Address already in use"). That is a failed start, not a result, so the check runs again.
KERNEL_DID_NOT_START = "Kernel died before replying to kernel_info"


def self_check(path: Path, attempts: int = 3) -> subprocess.CompletedProcess:
    env = dict(os.environ, ENCODER_COURSE_WORKSPACE=str(path.parent / "my_encoder"))
    env.pop("IPYTHONDIR", None)  # the notebook's conftest.py gives the kernel its plain-traceback profile
    for _ in range(attempts):
        result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                                 "--nbval-lax", "--nbval-cell-timeout=120", str(path)],
                                cwd=path.parent, env=env, capture_output=True, text=True, timeout=600)
        if KERNEL_DID_NOT_START not in result.stdout + result.stderr:
            break
    return result


@pytest.mark.skipif(not LEARNER.exists(), reason="learner notebooks not generated yet")
@pytest.mark.parametrize("case", ["stub", "stub, after Run All and a save", "wrong", "correct",
                                  "correct, after Run All and a save", "correct, with a debugging print"])
def test_nbval_self_check(case, tmp_path):
    debug = '    print("debug:", seq_len, d_model)\n'
    body = {"stub": None, "wrong": WRONG_BODY, "correct": solution_body(),
            "correct, with a debugging print": debug + solution_body()}[case.split(",")[0]
                                                                         if "Run All" in case else case]
    result = self_check(with_body(body, tmp_path, run_and_save="Run All" in case))
    out = result.stdout + result.stderr
    if case.startswith("correct"):
        assert result.returncode == 0, out[-3000:]
    else:
        assert result.returncode != 0, out[-3000:]
        expected = "not attempted yet" if case.startswith("stub") else "sin and cos"
        assert expected in out, out[-3000:]


def _tiny_notebook(cells) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = cells
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i}"
    return nb


def test_encoder_course_check_on_a_notebook_without_exercises(tmp_path):
    """`encoder-course check 00` says there is nothing to check, whether every cell ran (a cell tagged
    raises-exception may end in an error: notebook 00's demonstration of the self-check) and where the
    exercises start."""
    import io

    from encoder_course.notebook_tools.self_check import check_notebook

    demo = nbformat.v4.new_code_cell("raise AssertionError('expected here')")
    demo.metadata["tags"] = ["raises-exception"]
    nbformat.write(_tiny_notebook([nbformat.v4.new_code_cell("print(1 + 1)"), demo]), tmp_path / "00_intro.ipynb")
    check = nbformat.v4.new_code_cell("print('✓ x')")
    check.metadata["encoder_course"] = {"role": "check", "exercise": "x", "points": 1}
    nbformat.write(_tiny_notebook([check]), tmp_path / "01_first.ipynb")

    out = io.StringIO()
    assert check_notebook(str(tmp_path / "00_intro.ipynb"), timeout=300, out=out) == 0
    text = out.getvalue()
    assert "00_intro.ipynb has no exercises to check" in text
    assert "Every one of its 2 code cells ran without an error" in text
    assert "encoder-course check 01" in text

    nbformat.write(_tiny_notebook([nbformat.v4.new_code_cell("undefined_name")]), tmp_path / "00_intro.ipynb")
    out = io.StringIO()
    assert check_notebook(str(tmp_path / "00_intro.ipynb"), timeout=300, out=out) == 1
    assert "✗ cell 0 raised NameError" in out.getvalue()
