"""Learner versions of the notebooks: the solutions with every exercise replaced by a stub.

The solution notebooks in ``notebooks/solutions/NN_name.ipynb`` are the source of truth. In each
code cell, the lines from ``### BEGIN SOLUTION`` to ``### END SOLUTION`` (markers included) become
one line, indented like the markers::

    raise NotImplementedError("Exercise: write scaled_dot_product_attention: replace this line with your code")

Exercise and check cells (``metadata["encoder_course"]["role"]``), any other cell that calls a checker
(notebook 00's demonstrations), and cells that use the learner's workspace (``yours.``) lose their
stored outputs, and the
check cells their ``# NBVAL_CHECK_OUTPUT`` marker: a learner opening a notebook sees no pass under an
exercise they have not written, and the self-check (``pytest --nbval-lax``) judges a check cell by
whether it raises, never by what a saved notebook happens to hold. Everything else (other cells,
metadata, cell ids, stored outputs) is kept as it is. The output is written with ``nbformat`` and
is the same byte for byte on every run, so a test can compare the committed learner versions with
what :func:`learner_text` produces.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
NOTEBOOK_GLOB = "[0-9][0-9]_*.ipynb"

_BEGIN_RE = re.compile(r"^([ \t]*)### BEGIN SOLUTION[ \t]*$")
_END_RE = re.compile(r"^[ \t]*### END SOLUTION[ \t]*$")
_DEF_RE = re.compile(r"^([ \t]*)(?:async[ \t]+)?def[ \t]+([A-Za-z_]\w*)")
_CLASS_RE = re.compile(r"^([ \t]*)class[ \t]+([A-Za-z_]\w*)")


class MarkerError(ValueError):
    """The solution markers in a cell do not pair up."""


def _width(indent: str) -> int:
    return len(indent.expandtabs(4))


def exercise_name(lines: list[str], begin: int) -> str:
    """Name of the function (``name``) or method (``Class.method``) that encloses line ``begin``."""
    marker_indent = _width(_BEGIN_RE.match(lines[begin]).group(1))
    func, func_indent = None, None
    for line in reversed(lines[:begin]):
        if not line.strip():
            continue
        if func is None:
            m = _DEF_RE.match(line)
            if m and _width(m.group(1)) < marker_indent:
                func, func_indent = m.group(2), _width(m.group(1))
                if func_indent == 0:
                    return func
                continue
            m = _CLASS_RE.match(line)
            if m and _width(m.group(1)) < marker_indent:
                return m.group(2)
        else:
            m = _CLASS_RE.match(line)
            if m and _width(m.group(1)) < func_indent:
                return f"{m.group(2)}.{func}"
            m = _DEF_RE.match(line)
            if m and _width(m.group(1)) < func_indent:  # a nested function: name the outer one
                func, func_indent = m.group(2), _width(m.group(1))
                if func_indent == 0:
                    return func
    return func or "this exercise"


def stub_line(indent: str, name: str) -> str:
    return f'{indent}raise NotImplementedError("Exercise: write {name}: replace this line with your code")'


def stub_source(source: str, where: str = "cell") -> str:
    """Replace every BEGIN/END SOLUTION region in ``source`` with a ``NotImplementedError`` stub."""
    lines = source.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        begin = _BEGIN_RE.match(lines[i])
        if begin is None:
            if _END_RE.match(lines[i]):
                raise MarkerError(f"{where}: line {i + 1} has {END!r} without a {BEGIN!r} before it")
            out.append(lines[i])
            i += 1
            continue
        end = i + 1
        while end < len(lines) and not _END_RE.match(lines[end]):
            if _BEGIN_RE.match(lines[end]):
                raise MarkerError(f"{where}: line {end + 1} opens a second {BEGIN!r} before {END!r}")
            end += 1
        if end == len(lines):
            raise MarkerError(f"{where}: line {i + 1} has {BEGIN!r} without a matching {END!r}")
        out.append(stub_line(begin.group(1), exercise_name(lines, i)))
        i = end + 1
    return "\n".join(out)


CHECK_OUTPUT_MARKER = "# NBVAL_CHECK_OUTPUT"


def cell_role(cell) -> str | None:
    """The cell's role in the course (``setup``, ``exercise``, ``check``, ``quiz``), from its metadata."""
    return (cell.get("metadata", {}).get("encoder_course") or {}).get("role")


def learner_notebook(nb: nbformat.NotebookNode, where: str = "notebook") -> nbformat.NotebookNode:
    """Return a copy of ``nb`` with every solution region stubbed and no stored result of an exercise."""
    nb = nbformat.from_dict(nb)  # a deep copy
    for index, cell in enumerate(nb.cells):
        if cell.get("cell_type") != "code":
            continue
        if BEGIN in cell.get("source", ""):
            cell["source"] = stub_source(cell["source"], f"{where}, cell {index}")
        # No stored result of an exercise, and nothing that depends on the workspace of whoever ran the
        # solutions (which parts are "yours"): a learner sees these outputs only when they run the cell.
        source = cell.get("source", "")
        if cell_role(cell) in ("exercise", "check") or "yours." in source or "checks.check_" in source:
            cell["outputs"], cell["execution_count"] = [], None
            cell.get("metadata", {}).pop("execution", None)
        if cell_role(cell) == "check":
            lines = cell["source"].split("\n")
            cell["source"] = "\n".join(line for line in lines if line.strip() != CHECK_OUTPUT_MARKER)
    return nb


def learner_text(solution_path: str | Path) -> str:
    """The exact text of the learner version of the solution notebook at ``solution_path``."""
    path = Path(solution_path)
    nb = nbformat.read(path, as_version=4)
    text = nbformat.writes(learner_notebook(nb, path.name))
    return text if text.endswith("\n") else text + "\n"  # as nbformat.write does


def find_root(start: str | Path | None = None) -> Path:
    """The repository root: the nearest folder (from ``start`` upwards) that has ``notebooks/solutions``."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "notebooks" / "solutions").is_dir():
            return folder
    package_root = Path(__file__).resolve().parents[2]
    if (package_root / "notebooks" / "solutions").is_dir():
        return package_root
    raise FileNotFoundError(f"no notebooks/solutions folder found in {here} or above it")


def solution_notebooks(root: str | Path) -> list[Path]:
    return sorted((Path(root) / "notebooks" / "solutions").glob(NOTEBOOK_GLOB))


def regenerate(root: str | Path, check: bool = False) -> tuple[list[str], list[str]]:
    """Write (or, with ``check``, only compare) every learner notebook.

    Returns ``(changed, orphans)``: learner notebooks that were (or would be) rewritten, and learner
    notebooks that have no solution notebook any more.
    """
    root = Path(root)
    changed: list[str] = []
    names = set()
    for solution in solution_notebooks(root):
        target = root / "notebooks" / solution.name
        names.add(solution.name)
        text = learner_text(solution)
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current != text:
            changed.append(f"notebooks/{solution.name}")
            if not check:
                target.write_text(text, encoding="utf-8")
    orphans = [f"notebooks/{p.name}" for p in sorted((root / "notebooks").glob(NOTEBOOK_GLOB))
               if p.name not in names]
    return changed, orphans
