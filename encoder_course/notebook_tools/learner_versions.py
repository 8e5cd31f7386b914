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
whether it raises, never by what a saved notebook happens to hold.

No stored output shows the course's answer to an exercise either. A code cell that shows an answer
(``tools.show_source`` on an exercise's reference, on a method of it, or on a function the registry locks
with it, or any stored output that holds such source) loses its outputs, and a markdown cell above it
labels it as a spoiler, to run after the exercise's check passes (:func:`spoiled_exercises`).

Everything else (other cells, metadata, cell ids, stored outputs) is kept as it is. The output is
written in the course's stable form (:func:`.notebook_tools.notebook_text`) and is the same byte for
byte on every run, so a test can compare the committed learner versions with what :func:`learner_text`
produces.
"""

from __future__ import annotations

import functools
import importlib
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


_SHOW_SOURCE_RE = re.compile(r"show_source\(\s*([A-Za-z_][\w.]*)\s*\)")
#: A stored output shows an answer when it holds at least this share of the answer's source lines.
ANSWER_LINE_SHARE = 0.8


def _resolve(dotted: str):
    """The package object a notebook names as ``ec.X.y`` or ``module.X`` (None if there is none)."""
    head, *rest = dotted.split(".")
    try:
        obj = importlib.import_module("encoder_course" if head == "ec" else f"encoder_course.{head}")
        for part in rest:
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    return obj


@functools.lru_cache(maxsize=None)
def answer_objects() -> dict:
    """Exercise key -> the package objects whose source is its answer.

    The reference itself and every function the registry locks with it (a function whose result is
    the answer, such as the formulas behind ``parameter_count``); not the classes locked with it (the
    whole ``Encoder``, which ``parameter_count`` only counts).
    """
    import inspect

    from ..checks.registry import EXERCISES

    answers = {}
    for key, ex in EXERCISES.items():
        locked = ex.load_locked()
        reference = ex.load_reference()
        answers[key] = (reference, *(obj for obj in locked.values()
                                     if obj is not reference and not inspect.isclass(obj)))
    return answers


def _code_lines(text: str) -> set[str]:
    return {line.strip() for line in text.splitlines() if line.strip()}


@functools.lru_cache(maxsize=None)
def answer_sources() -> dict[str, tuple[frozenset, ...]]:
    """Exercise key -> the answer's source texts, each as its set of stripped non-blank lines.

    A class reference gives its whole source and that of each method it defines (a notebook may show
    ``ec.LayerNorm.forward`` alone).
    """
    import inspect

    sources = {}
    for key, objects in answer_objects().items():
        texts = []
        for obj in objects:
            texts.append(inspect.getsource(obj))
            if inspect.isclass(obj):
                texts += [inspect.getsource(member) for member in vars(obj).values() if inspect.isfunction(member)]
        sources[key] = tuple(frozenset(_code_lines(t)) for t in texts if len(_code_lines(t)) >= 3)
    return sources


def output_text(output) -> str:
    """The text a stored output holds: a stream's text, or the plain-text form of a result or display."""
    if output.get("output_type") == "stream":
        text = output.get("text", "")
    else:
        text = (output.get("data") or {}).get("text/plain", "")
    return "".join(text) if isinstance(text, list) else str(text)


def shows_answer(text: str) -> list[str]:
    """Keys of the exercises whose answer ``text`` shows (most of the lines of one of its sources)."""
    lines = _code_lines(text)
    return [key for key, sources in answer_sources().items()
            if any(len(source & lines) >= ANSWER_LINE_SHARE * len(source) for source in sources)]


def spoiled_exercises(cell) -> list[str]:
    """Keys of the exercises whose answer this code cell shows, by what it calls or what it has stored."""
    keys = []
    for dotted in _SHOW_SOURCE_RE.findall(cell.get("source", "")):
        obj = _resolve(dotted)
        if obj is None:
            continue
        for key, objects in answer_objects().items():
            for answer in objects:
                method_of = (isinstance(answer, type) and getattr(obj, "__module__", None) == answer.__module__
                             and getattr(obj, "__qualname__", "").startswith(answer.__qualname__ + "."))
                if obj is answer or method_of:
                    keys.append(key)
    for output in cell.get("outputs", []):
        keys += shows_answer(output_text(output))
    return list(dict.fromkeys(keys))


def spoiler_note(keys: list[str], notebook: str) -> str:
    """The markdown line above a cell that shows the answer to the exercises ``keys``."""
    from ..checks.registry import EXERCISES

    named = []
    for key in keys:
        ex = EXERCISES[key]
        where = "this notebook" if ex.notebook == notebook else f"notebook {ex.notebook[:2]}"
        named.append(f"`{ex.name}` ({where})")
    what = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
    checks = "its check passes" if len(named) == 1 else "their checks pass"
    return (f"**Spoiler:** the next cell shows the course's answer to the exercise {what}. "
            f"Run it after {checks}.")


def learner_notebook(nb: nbformat.NotebookNode, where: str = "notebook") -> nbformat.NotebookNode:
    """Return a copy of ``nb`` with every solution region stubbed and no stored result of an exercise."""
    nb = nbformat.from_dict(nb)  # a deep copy
    notebook = Path(where).stem
    cells = []
    for index, cell in enumerate(nb.cells):
        cells.append(cell)
        if cell.get("cell_type") != "code":
            continue
        spoiled = spoiled_exercises(cell)
        if spoiled:
            cell["outputs"], cell["execution_count"] = [], None
            note = nbformat.v4.new_markdown_cell(spoiler_note(spoiled, notebook))
            note["id"] = f"{cell.get('id') or index}-spoiler"[:64]
            cells.insert(len(cells) - 1, note)
        if BEGIN in cell.get("source", ""):
            cell["source"] = stub_source(cell["source"], f"{where}, cell {index}")
        # No stored result of an exercise, and nothing that depends on the workspace of whoever ran the
        # solutions (which parts are "yours"): a learner sees these outputs only when they run the cell.
        source = cell.get("source", "")
        if cell_role(cell) in ("exercise", "check") or "yours." in source or "checks.check_" in source:
            cell["outputs"], cell["execution_count"] = [], None
        if cell_role(cell) == "check":
            lines = cell["source"].split("\n")
            cell["source"] = "\n".join(line for line in lines if line.strip() != CHECK_OUTPUT_MARKER)
    nb.cells = cells
    return nb


def learner_text(solution_path: str | Path) -> str:
    """The exact text of the learner version of the solution notebook at ``solution_path``."""
    from .files import notebook_text, read_notebook

    path = Path(solution_path)
    return notebook_text(learner_notebook(read_notebook(path), path.name))


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
