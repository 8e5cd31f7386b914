"""Every notebook, both versions, runs to the end; check cells give their stored output.

Each notebook is executed once in its own kernel (``encoder_course.course.kernel_run``), with a fresh
learner workspace. Time and memory are recorded in ``test-artifacts/notebook_budgets.json``; the
budgets themselves are measured by ``encoder-course budgets`` (README's table), not asserted here:
a test only fails past a generous ceiling on the kernel's processor time (10x the recorded time, at
least 120 s), which catches a gross regression and not a slow or busy machine, and a wall-time limit
three times that catches a hang. Kernel memory must stay under 2 GB.
Solution notebooks: cells marked ``# NBVAL_CHECK_OUTPUT`` must print what is stored, as
``pytest --nbval-lax`` demands. Learner notebooks: every exercise check says "not attempted yet"
and the run still reaches the last cell.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from unittest import mock

import nbformat
import pytest

from encoder_course.course import budgets
from encoder_course.course.kernel_run import run_notebook

ROOT = Path(__file__).resolve().parent.parent
RECORDED = budgets.load(ROOT)["notebooks"]
SOLUTIONS = sorted((ROOT / "notebooks" / "solutions").glob("[0-9][0-9]_*.ipynb"))
LEARNER = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
RESULTS = ROOT / "test-artifacts" / "notebook_budgets.json"
MEMORY_LIMIT = budgets.MEMORY_LIMIT
CHECK_CALL = re.compile(r"checks\.check_\w+\((\w+)\)")
DEFINITION = re.compile(r"^(?:def|class)\s+(\w+)", re.M)

pytestmark = pytest.mark.notebooks


def ceiling_seconds(path: Path) -> float:
    version = "solutions" if path.parent.name == "solutions" else "learner"
    return budgets.ceiling_seconds(path.name, RECORDED.get(f"{version}/{path.stem}"))


def comparable(outputs) -> list[str]:
    """The parts of a cell's outputs that nbval-lax compares: text streams and text/plain.

    Consecutive chunks of one stream are joined: how a print is split into messages varies.
    """
    parts: list[str] = []
    last_stream = None
    for out in outputs:
        kind = out.get("output_type")
        if kind == "stream":
            name = out.get("name", "")
            if last_stream == name:
                parts[-1] += out.get("text", "")
            else:
                parts.append(f"{name}: " + out.get("text", ""))
            last_stream = name
            continue
        last_stream = None
        if kind in ("execute_result", "display_data"):
            text = out.get("data", {}).get("text/plain")
            if text is not None and not str(text).startswith("<Figure"):
                parts.append("".join(text))
        elif kind == "error":
            parts.append("error: " + out.get("ename", ""))
    return parts


def record(key: str, entry: dict) -> None:
    RESULTS.parent.mkdir(exist_ok=True)
    lock = RESULTS.with_suffix(".lock")
    # xdist workers write to the same file: a crude lock file keeps entries from being lost.
    for _ in range(200):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL)
            break
        except FileExistsError:
            time.sleep(0.05)
    else:
        fd = None
    try:
        data = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
        data[key] = entry
        RESULTS.write_text(json.dumps(data, indent=1, sort_keys=True))
    finally:
        if fd is not None:
            os.close(fd)
            os.unlink(lock)


def execute(path: Path, workspace: Path):
    """Run a copy of the notebook in a fresh kernel; return it with its stored outputs, time and memory."""
    nb = nbformat.read(path, as_version=4)
    stored_outputs = [comparable(c.get("outputs", [])) for c in nb.cells if c.cell_type == "code"]
    version = "solutions" if path.parent.name == "solutions" else "learner"
    hang = budgets.hang_seconds(path.name, RECORDED.get(f"{version}/{path.stem}"))
    # The kernel inherits the workspace; the test worker's environment is left as it was.
    with mock.patch.dict(os.environ, {"ENCODER_COURSE_WORKSPACE": str(workspace / "my_encoder")}):
        run = run_notebook(nb, timeout=hang, cwd=path.parent, stop_on_error=True)
    assert run.stop_reason is None, f"{path.name}: {run.stop_reason} in cell {run.stopped_at}:\n" + (
        nb.cells[run.stopped_at].source[:500] + "\n" + json.dumps(nb.cells[run.stopped_at].outputs)[-2000:])
    return nb, stored_outputs, run.seconds, run.cpu_seconds, run.peak_rss


def exercise_checks(solution: Path, cells) -> list:
    """The check cells of the exercises: ``checks.check_x(name)`` where ``name`` is written in an exercise."""
    exercises = set()
    for cell in nbformat.read(solution, as_version=4).cells:
        if cell.cell_type == "code" and "### BEGIN SOLUTION" in cell.source:
            exercises.update(DEFINITION.findall(cell.source))
    return [c for c in cells if (m := CHECK_CALL.search(c.source)) and m.group(1) in exercises]


def stream_text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")


def params(paths, version):
    return [pytest.param(p, id=f"{version}/{p.stem}") for p in paths]


@pytest.mark.parametrize("path", params(SOLUTIONS, "solutions"))
def test_solution_notebook(path, tmp_path):
    nb, stored_outputs, seconds, cpu, peak = execute(path, tmp_path)
    record(f"solutions/{path.stem}",
           {"seconds": round(seconds, 1), "cpu_seconds": round(cpu, 1), "peak_mib": round(peak / 2**20)})
    code = [c for c in nb.cells if c.cell_type == "code"]
    for cell, expected in zip(code, stored_outputs):
        if cell.source.lstrip().startswith("# NBVAL_CHECK_OUTPUT"):
            assert comparable(cell.outputs) == expected, f"output changed in cell:\n{cell.source[:300]}"
    for cell in exercise_checks(path, code):
        text = stream_text(cell)
        assert text.startswith("✓"), f"a solution's check did not pass:\n{cell.source}\n{text}"
    assert cpu <= ceiling_seconds(path), (
        f"{path.name} used {cpu:.1f} s of processor time (ceiling {ceiling_seconds(path):.0f} s)")
    assert peak < MEMORY_LIMIT, f"{path.name} kernel peaked at {peak / 2**20:.0f} MiB"
