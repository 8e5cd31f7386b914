"""``encoder-course release --out DIR``: the notebooks as an nbgrader course, ready for ``generate_assignment``.

For every solution notebook ``notebooks/solutions/NN_name.ipynb`` this writes
``DIR/source/NN_name/NN_name.ipynb`` (nbgrader's course layout: one assignment per notebook) with
nbgrader's cell metadata (``schema_version`` 3):

* exercise cells (``role: exercise``) are *solution* cells: ``solution: true, grade: false, locked:
  false``; their ``### BEGIN SOLUTION`` / ``### END SOLUTION`` markers (nbgrader's own) are kept, so
  ``nbgrader generate_assignment`` replaces the solution with a stub;
* check cells (``role: check``) are *autograded tests*: ``grade: true, locked: true`` and the solution's
  ``points``; they call the course's checker, and a hidden test (``### BEGIN HIDDEN TESTS``, removed
  from the learners' copy, restored by the autograder) asserts the checker's verdict, so an exercise
  left as a stub or answered wrongly raises under ``nbgrader autograde``;
* the setup cell and every markdown cell are locked (read-only); other cells are left as they are.

Stored outputs are cleared. ``DIR/nbgrader_config.py`` is written when it does not exist yet.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

from .files import CHECK_CALL
from .learner_versions import BEGIN, END, solution_notebooks

SCHEMA = 3
_GRADE_ID = re.compile(r"[^A-Za-z0-9_-]")
CONFIG = '''# nbgrader configuration written by `encoder-course release` (edit freely; it is not overwritten).
# The learners' and the autograder's Python needs the course package: pip install encoder-course
c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "encoder-course"
c.ClearSolutions.code_stub = {
    "python": 'raise NotImplementedError("Exercise: replace this line with your code")',
}
'''


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _meta(grade_id: str, *, solution=False, grade=False, locked=False, points=None) -> dict:
    meta = {"grade": grade, "grade_id": _GRADE_ID.sub("_", grade_id), "locked": locked,
            "schema_version": SCHEMA, "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return meta


def check_source(source: str, key: str, name: str) -> str:
    """The autograded check cell: the learner's check, then a hidden assertion on the checker's verdict."""
    lines = [line for line in source.splitlines() if line.strip() != "# NBVAL_CHECK_OUTPUT"]
    hidden = [
        "### BEGIN HIDDEN TESTS",
        f"_verdict = checks.verdict({key!r}, {name})",
        "assert _verdict.status == \"passed\", _verdict.message",
        "### END HIDDEN TESTS",
    ]
    return "\n".join(lines + hidden)


def release_notebook(nb: dict, stem: str) -> dict:
    """The nbgrader source version of one solution notebook (a new dict; ``nb`` is not changed)."""

    out = copy.deepcopy(nb)
    seen: set[str] = set()

    def unique(grade_id: str) -> str:
        grade_id = _GRADE_ID.sub("_", grade_id)
        base, n = grade_id, 2
        while grade_id in seen:
            grade_id, n = f"{base}_{n}", n + 1
        seen.add(grade_id)
        return grade_id

    for index, cell in enumerate(out["cells"]):
        role = cell.get("metadata", {}).get("encoder_course", {}) or {}
        cell_id = cell.get("id") or f"cell{index}"
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
        kind = role.get("role")
        if kind == "exercise":
            source = _source(cell)
            if BEGIN not in source or END not in source:
                raise ValueError(f"{stem}: the exercise cell of {role.get('exercise')} has no {BEGIN} ... {END}")
            cell["metadata"]["nbgrader"] = _meta(unique(str(role.get("exercise"))), solution=True)
        elif kind == "check":
            key = str(role.get("exercise"))
            match = CHECK_CALL.search(_source(cell))
            if not match:
                raise ValueError(f"{stem}: the check cell of {key} does not call checks.check_{key}(...)")
            points = role.get("points", 1)
            cell["source"] = check_source(_source(cell), key, match.group(2))
            cell["metadata"]["nbgrader"] = _meta(unique(f"check_{key}"), grade=True, locked=True, points=points)
        elif kind == "setup":
            cell["metadata"]["nbgrader"] = _meta(unique(f"setup_{cell_id}"), locked=True)
        elif cell.get("cell_type") == "markdown":
            cell["metadata"]["nbgrader"] = _meta(unique(f"md_{cell_id}"), locked=True)
    return out


def release(root, out_dir) -> list[Path]:
    """Write the nbgrader source tree under ``out_dir``; returns the notebooks written."""
    root, out_dir = Path(root), Path(out_dir)
    notebooks = solution_notebooks(root)
    if not notebooks:
        raise FileNotFoundError(f"no solution notebooks in {root / 'notebooks' / 'solutions'}")
    written = []
    for path in notebooks:
        nb = json.loads(path.read_text(encoding="utf-8"))
        target = out_dir / "source" / path.stem / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(release_notebook(nb, path.stem), indent=1, ensure_ascii=False) + "\n",
                          encoding="utf-8")
        written.append(target)
    config = out_dir / "nbgrader_config.py"
    if not config.exists():
        config.write_text(CONFIG, encoding="utf-8")
    return written
