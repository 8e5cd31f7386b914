"""`encoder-course release`: an nbgrader source tree whose autograded cells judge by the checker."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest
from grading_helpers import RIGHT, ROOT

from encoder_course.cli import main
from encoder_course.notebook_tools.release import release

NBGRADER = shutil.which("nbgrader") or (importlib.util.find_spec("nbgrader") and "module")


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    out = tmp_path_factory.mktemp("nbgrader")
    written = release(ROOT, out)
    return out, written


def _cells(out, stem):
    nb = json.loads((out / "source" / stem / f"{stem}.ipynb").read_text(encoding="utf-8"))
    return nb["cells"]


def test_one_assignment_per_notebook_in_nbgraders_layout(released):
    out, written = released
    stems = sorted(p.stem for p in (ROOT / "notebooks" / "solutions").glob("[0-9][0-9]_*.ipynb"))
    assert sorted(p.parent.name for p in written) == stems
    assert all(p.parent.parent == out / "source" and p.stem == p.parent.name for p in written)
    assert "course_id" in (out / "nbgrader_config.py").read_text()


def test_cells_carry_nbgraders_metadata(released):
    out, _ = released
    cells = _cells(out, "03_masks")
    graded = {c["metadata"]["nbgrader"]["grade_id"]: c for c in cells if "nbgrader" in c["metadata"]}
    solution = graded["padding_mask"]["metadata"]["nbgrader"]
    assert solution == {"grade": False, "grade_id": "padding_mask", "locked": False, "schema_version": 3,
                        "solution": True, "task": False}
    assert "### BEGIN SOLUTION" in "".join(graded["padding_mask"]["source"])
    test = graded["check_padding_mask"]["metadata"]["nbgrader"]
    assert test == {"grade": True, "grade_id": "check_padding_mask", "locked": True, "points": 1,
                    "schema_version": 3, "solution": False, "task": False}
    source = graded["check_padding_mask"]["source"]
    assert "NBVAL" not in source and "### BEGIN HIDDEN TESTS" in source
    markdown = [c for c in cells if c["cell_type"] == "markdown"]
    assert markdown and all(c["metadata"]["nbgrader"]["locked"] for c in markdown)
    assert all(not c.get("outputs") for c in cells if c["cell_type"] == "code")
    ids = [c["metadata"]["nbgrader"]["grade_id"] for c in cells if "nbgrader" in c["metadata"]]
    assert len(ids) == len(set(ids))


def test_the_autograded_check_raises_for_a_stub_and_a_wrong_answer(released):
    out, _ = released
    cells = _cells(out, "03_masks")
    check = next(c["source"] for c in cells
                 if c["metadata"].get("nbgrader", {}).get("grade_id") == "check_padding_mask")
    setup = "import torch\nimport encoder_course as ec\nfrom encoder_course import checks\n"
    for answer, ok in ((RIGHT["padding_mask"], True),
                       ("def padding_mask(token_ids, pad_id):\n    raise NotImplementedError\n", False),
                       ("def padding_mask(token_ids, pad_id):\n    return (token_ids == pad_id)[:, None, None, :]\n",
                        False)):
        ns = {}
        exec(setup + answer, ns)
        try:
            exec(check, ns)
            passed = True
        except AssertionError:
            passed = False
        assert passed is ok, answer


def test_cli_release(tmp_path, capsys):
    assert main(["release", "--out", str(tmp_path)]) == 0
    assert "nbgrader generate_assignment" in capsys.readouterr().out
    assert (tmp_path / "source" / "03_masks" / "03_masks.ipynb").is_file()


@pytest.mark.skipif(not NBGRADER, reason="nbgrader is not installed (pip install nbgrader==0.9.6 to run this)")
def test_nbgrader_generate_assignment_accepts_the_release(released, tmp_path):
    out, _ = released
    course = tmp_path / "course"
    shutil.copytree(out, course)
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    for stem in ("03_masks", "04_multi_head"):
        done = subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", stem], cwd=course,
                              capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        student = json.loads((course / "release" / stem / f"{stem}.ipynb").read_text())
        text = "".join("".join(c["source"]) for c in student["cells"])
        assert "### BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text
        assert "raise NotImplementedError" in text
