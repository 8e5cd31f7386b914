"""Grade a class's notebooks: run each submission in its own kernel and read its check cells.

``encoder-course grade PATH... [--timeout S] [--csv FILE]``

* Every submission runs in a fresh Jupyter kernel (a separate process, driven by ``encoder_course.kernel_run``),
  in an empty temporary folder, with a time limit for the whole notebook. The grader never imports
  or executes a submission itself; it only reads the notebook's JSON and the outputs the kernel
  sends back. Stored outputs in the submission are cleared first and never trusted.
* All cells run even after an error (``allow_errors``), so one wrong exercise does not hide the
  others.
* A check cell is a code cell that calls ``checks.check_<name>(``. Its result is

  - ``passed``: it printed the checker's own line ``✓ <name>: all checks passed`` and raised nothing,
  - ``failed``: it raised the checker's ``ExerciseError`` (an ``AssertionError``),
  - ``not attempted``: the checker said "not attempted yet" (the exercise is still a stub),
  - ``error``: any other exception (details in the notes column),
  - ``timed out``: the notebook ran out of time before or while running this cell,
  - ``missing``: the submission has no check cell for this exercise.

* A file that is empty, not JSON, not a notebook, a notebook with no check cells left, one that
  loops forever or one whose kernel dies each gets a row that says so; the grader goes on.
"""

from __future__ import annotations

import csv
import json
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

CHECK_CALL = re.compile(r"\bchecks\.check_([A-Za-z_]\w*)\s*\(")
STATUSES = ("passed", "failed", "not attempted", "error", "timed out", "missing")


@dataclass
class Result:
    """One submission's row."""

    submission: str
    notebook: str = "ok"  # ok / empty file / broken JSON / not a notebook / no check cells / timed out / ...
    checks: dict[str, str] = field(default_factory=dict)  # exercise -> status
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0


def find_submissions(paths) -> list[Path]:
    """The .ipynb files named in ``paths`` (files, or folders searched recursively), sorted."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found += sorted(p for p in path.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
        else:
            found.append(path)
    seen, unique = set(), []
    for p in found:
        key = str(p.resolve())
        if key not in seen:
            seen.add(key)
            unique.append(p)
    return unique


def check_cells(nb) -> list[tuple[int, str]]:
    """``(cell index, exercise name)`` of every check cell, first call of each exercise only."""
    cells, seen = [], set()
    for index, cell in enumerate(nb.cells):
        if cell.get("cell_type") != "code":
            continue
        for name in CHECK_CALL.findall(cell.get("source", "")):
            if name not in seen:
                seen.add(name)
                cells.append((index, name))
    return cells


def _classify(cell, name: str) -> tuple[str, str]:
    """Status of one executed check cell, and a note."""
    outputs = cell.get("outputs", [])
    errors = [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    if errors:
        ename, evalue = errors[0].get("ename", "?"), errors[0].get("evalue", "")
        if ename in ("ExerciseError", "AssertionError"):
            return "failed", evalue.splitlines()[0][:200] if evalue else ""
        if ename == "NotImplementedError":
            return "not attempted", ""
        return "error", f"{ename}: {evalue.splitlines()[0][:200] if evalue else ''}"
    lines = [line.strip() for line in text.splitlines()]
    if f"✓ {name}: all checks passed" in lines:
        return "passed", ""
    if any(line.startswith("…") and "not attempted yet" in line for line in lines):
        return "not attempted", ""
    return "error", "the check cell printed no result"


def grade_notebook(path: str | Path, timeout: float = 300.0, label: str | None = None,
                   kernel_name: str = "python3") -> Result:
    """Run one submission in a fresh kernel and classify its check cells. Never raises."""
    path = Path(path)
    result = Result(submission=label or path.name)
    start = time.monotonic()
    try:
        _grade_into(result, path, timeout, kernel_name)
    except Exception as exc:  # the grader goes on, whatever one submission does
        result.notebook = "could not run"
        result.notes.append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}")
    result.seconds = time.monotonic() - start
    return result


def _grade_into(result: Result, path: Path, timeout: float, kernel_name: str) -> None:
    import nbformat

    if not path.exists():
        result.notebook = "not found"
        return
    try:
        raw = path.read_bytes()
    except OSError as exc:
        result.notebook = "unreadable"
        result.notes.append(str(exc))
        return
    if not raw.strip():
        result.notebook = "empty file"
        return
    try:
        data = json.loads(raw.decode("utf-8", errors="replace"))
    except json.JSONDecodeError as exc:
        result.notebook = "broken JSON"
        result.notes.append(f"line {exc.lineno}: {exc.msg}")
        return
    try:
        nb = nbformat.reads(json.dumps(data), as_version=4)
        if not isinstance(nb.get("cells"), list):
            raise ValueError("it has no list of cells")
    except Exception as exc:
        result.notebook = "not a notebook"
        result.notes.append(str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__)
        return
    wanted = check_cells(nb)
    if not nb.cells:
        result.notebook = "no cells (deleted?)"
        return
    if not wanted:
        result.notebook = "no check cells (deleted?)"
        return
    _execute(result, nb, wanted, timeout, kernel_name)


def _execute(result: Result, nb, wanted, timeout: float, kernel_name: str) -> None:
    from .kernel_run import run_notebook

    for cell in nb.cells:  # never trust stored outputs
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
    with tempfile.TemporaryDirectory(prefix="encoder-course-grade-") as workdir:
        run = run_notebook(nb, timeout=timeout, cwd=workdir, kernel_name=kernel_name, stop_on_error=False)
    executed, stopped_at, stop_reason = set(run.executed), run.stopped_at, run.stop_reason
    if stop_reason == "timed out":
        result.notebook = "timed out"
        result.notes.append(f"stopped after {timeout:g} s in cell {stopped_at}")
    elif stop_reason == "kernel died":
        result.notebook = "kernel died"
        result.notes.append(f"the kernel stopped in cell {stopped_at}")
    for index, name in wanted:
        if index in executed:
            status, note = _classify(nb.cells[index], name)
        elif stop_reason == "timed out":
            status, note = "timed out", ""
        else:
            status, note = "error", "not run (the kernel died before this cell)"
        result.checks[name] = status
        if note:
            result.notes.append(f"{name}: {note}")


def columns_of(results) -> list[str]:
    """Exercise columns: every exercise any submission checks, in order of first appearance."""
    names: list[str] = []
    for r in results:
        for name in r.checks:
            if name not in names:
                names.append(name)
    return names


def rows_of(results, exercises) -> list[list[str]]:
    rows = []
    for r in results:
        cells = [r.checks.get(name, "missing") for name in exercises]
        passed = sum(c == "passed" for c in cells)
        rows.append([r.submission, r.notebook, *cells, f"{passed}/{len(exercises)}", "; ".join(r.notes)])
    return rows


def format_table(results, exercises=None) -> str:
    exercises = exercises if exercises is not None else columns_of(results)
    header = ["submission", "notebook", *exercises, "score"]
    rows = [row[:-1] for row in rows_of(results, exercises)]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(header, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip())
    return "\n".join(lines)


def write_csv(results, path: str | Path, exercises=None) -> None:
    exercises = exercises if exercises is not None else columns_of(results)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["submission", "notebook", *exercises, "score", "notes"])
        writer.writerows(rows_of(results, exercises))


def grade(paths, timeout: float = 300.0, csv_path: str | Path | None = "grades.csv", out=None,
          kernel_name: str = "python3") -> list[Result]:
    """Grade every submission under ``paths``; print the table to ``out`` and write the CSV."""
    out = out or sys.stdout
    submissions = find_submissions(paths)
    if not submissions:
        out.write("no .ipynb submissions found\n")
        return []
    base = _common_base(submissions)
    results = []
    for number, path in enumerate(submissions, 1):
        label = _label(path, base)
        out.write(f"[{number}/{len(submissions)}] {label} ...")
        out.flush()
        res = grade_notebook(path, timeout=timeout, label=label, kernel_name=kernel_name)
        out.write(f" {res.notebook} ({res.seconds:.0f} s)\n")
        results.append(res)
    out.write("\n" + format_table(results) + "\n")
    if csv_path:
        write_csv(results, csv_path)
        out.write(f"\nwrote {csv_path}\n")
    return results


def _common_base(paths: list[Path]) -> Path | None:
    parents = [p.resolve().parent for p in paths]
    try:
        import os

        return Path(os.path.commonpath([str(p) for p in parents]))
    except ValueError:
        return None


def _label(path: Path, base: Path | None) -> str:
    if base is not None:
        try:
            return str(path.resolve().relative_to(base))
        except ValueError:
            pass
    return path.name
