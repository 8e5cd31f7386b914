"""The solution notebooks decide: their exercises, points and setup cells, and how a submission maps to them.

A solution notebook marks its cells with ``metadata["encoder_course"]``: ``{"role": "setup"}``,
``{"role": "exercise", "exercise": key}`` and ``{"role": "check", "exercise": key, "points": n}``. A
submission is matched to the solution whose metadata and cell ids it carries, then by its file name
(``NN_*.ipynb``) and the names it defines; its code for an exercise is the last cell marked as that
exercise's, else the cell with the solution's cell id, else the last that defines the exercise's name.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

# One line at a time ([^=\n], never across lines): the time is linear in the cell, whatever it holds.
DEFINES = re.compile(r"^(?:def|class)[ \t]+([A-Za-z_]\w*)|^([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)", re.M)
MAX_PARSED = 200_000  # characters: a longer cell is not given to ast.parse (its tree would take GBs)
NUMBER = re.compile(r"^(\d\d)[_\-\s]")


@dataclass
class GradedExercise:
    """An exercise as a solution notebook grades it (the registry's ``Exercise`` says what it is)."""

    key: str
    name: str  # what the learner defines (function or class name)
    points: float
    exercise_id: str | None  # the solution's exercise cell id
    check_id: str | None


@dataclass
class Solution:
    name: str  # "03_masks"
    setup: list[str]
    exercises: list[GradedExercise]

    @property
    def max_points(self) -> float:
        return sum(e.points for e in self.exercises)


@dataclass
class Cell:
    index: int
    id: str | None
    meta: dict
    source: str
    defines: set = field(default_factory=set)


def top_level_names(source: str) -> set[str]:
    """Names a cell defines at top level (functions, classes, assignments); read line by line when it does not
    parse, is nested too deeply for the parser, or is too long to parse (the grader's own process reads every
    submission: nothing here may take time or memory out of proportion to the cell)."""
    tree = None
    if len(source) <= MAX_PARSED:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None
    if tree is None:
        return {m.group(1) or m.group(2) for m in DEFINES.finditer(source)}
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def code_cells(nb: dict) -> list[Cell]:
    """The notebook's code cells, each with its id, course metadata, source and the names it defines."""
    cells = []
    for index, cell in enumerate(nb.get("cells", [])):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(s for s in source if isinstance(s, str)) if isinstance(source, list) else source
        source = source if isinstance(source, str) else ""
        meta = cell.get("metadata")
        meta = meta.get("encoder_course") if isinstance(meta, dict) else None
        cells.append(Cell(index, cell.get("id") if isinstance(cell.get("id"), str) else None,
                          meta if isinstance(meta, dict) else {}, source, top_level_names(source)))
    return cells


def load_solution(path: Path) -> Solution:
    from ..checks.registry import exercise

    cells = code_cells(json.loads(Path(path).read_text(encoding="utf-8")))
    exercises = []
    for c in cells:
        if c.meta.get("role") != "check":
            continue
        key = str(c.meta.get("exercise", ""))
        ex_cell = next((x for x in cells if x.meta.get("role") == "exercise" and x.meta.get("exercise") == key), None)
        points = c.meta.get("points", 1)
        points = float(points) if isinstance(points, (int, float)) and points >= 0 else 1.0
        exercises.append(GradedExercise(key, exercise(key).name, points, ex_cell.id if ex_cell else None, c.id))
    setup = [c.source for c in cells if c.meta.get("role") == "setup"]
    return Solution(Path(path).stem, setup, exercises)


def default_solutions_dir() -> Path | None:
    """``notebooks/solutions`` of the repository the package sits in (a checkout or an editable install)."""
    here = Path(__file__).resolve().parent.parent.parent / "notebooks" / "solutions"
    return here if here.is_dir() else None


def load_solutions(folder) -> list[Solution]:
    folder = Path(folder)
    solutions = [load_solution(p) for p in sorted(folder.glob("[0-9][0-9]_*.ipynb"))]
    if not any(m.exercises for m in solutions):
        raise FileNotFoundError(f"no solution notebook with exercises in {folder}")
    return solutions


def match(solutions: list[Solution], cells: list[Cell], filename: str) -> tuple[Solution | None, str]:
    """The solution this submission answers, and how it was recognised (for the notes)."""
    ids = {c.id for c in cells if c.id}
    keys = {str(c.meta.get("exercise")) for c in cells if c.meta.get("role") in ("exercise", "check")}
    defined = set().union(*(c.defines for c in cells)) if cells else set()
    stem = Path(filename).stem
    number = NUMBER.match(stem + "_")
    best, best_score, how = None, 0, ""
    for m in solutions:
        if not m.exercises:
            continue
        score, reasons = 0, []
        meta_hits = sum(e.key in keys for e in m.exercises)
        id_hits = sum(e.exercise_id in ids for e in m.exercises) + sum(e.check_id in ids for e in m.exercises)
        if meta_hits or id_hits:
            score += 100 * (meta_hits + id_hits)
            reasons.append("cell metadata and ids")
        if number and m.name.startswith(number.group(1) + "_"):
            score += 20 + (10 if stem.lower() == m.name.lower() else 0)
            reasons.append("file name")
        name_hits = sum(e.name in defined for e in m.exercises)
        if name_hits:
            score += 5 * name_hits
            reasons.append("the names it defines")
        if score > best_score:
            best, best_score, how = m, score, ", ".join(reasons)
    return best, how


def exercise_cell(solution: Solution, ex: GradedExercise, cells: list[Cell]) -> Cell | None:
    """The submission's cell for ``ex``: by metadata, then by cell id, then by what it defines."""
    marked = [c for c in cells if c.meta.get("role") == "exercise" and c.meta.get("exercise") == ex.key]
    if marked:
        return marked[-1]
    by_id = [c for c in cells if ex.exercise_id and c.id == ex.exercise_id and c.meta.get("role") != "check"]
    if by_id:
        return by_id[-1]
    defining = [c for c in cells if ex.name in c.defines and c.meta.get("role") not in ("check", "setup")]
    return defining[-1] if defining else None
