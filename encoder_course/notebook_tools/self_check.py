"""``encoder-course check NN``: the learner's self-check without pytest.

Runs the learner notebook top to bottom in a fresh kernel with ``ENCODER_COURSE_SELF_CHECK=1`` (so a
stub is a failure, not "not attempted yet") and reports each exercise's check cell. What the notebook
file has stored is never read: only what runs now counts.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def _find(notebook: str) -> Path:
    """The learner version of a notebook given by path, number (``02``), name (``attention``) or stem."""
    path = Path(notebook)
    if path.suffix == ".ipynb" and path.exists():
        return path
    from . import manifest
    from .learner_versions import find_root

    try:
        found = manifest.notebook(notebook).learner(find_root(None))
    except (KeyError, FileNotFoundError) as exc:
        raise FileNotFoundError(f"no learner notebook {notebook!r} (give a number such as 02, or a path)") from exc
    if not found.exists():
        raise FileNotFoundError(f"no learner notebook {found}")
    return found


def check_notebook(notebook: str, timeout: float = 600.0, out=None) -> int:
    """Run the notebook and print one line per exercise; 0 when every exercise passes, else 1."""
    import nbformat

    from .executor import run_notebook
    from .learner_versions import cell_role

    out = out or sys.stdout
    path = _find(notebook)
    nb = nbformat.read(path, as_version=4)
    checks = [(i, c) for i, c in enumerate(nb.cells) if cell_role(c) == "check"]
    previous = os.environ.get("ENCODER_COURSE_SELF_CHECK")
    os.environ["ENCODER_COURSE_SELF_CHECK"] = "1"
    try:
        run = run_notebook(nb, timeout=timeout, cwd=path.parent, stop_on_error=False)
    finally:
        if previous is None:
            os.environ.pop("ENCODER_COURSE_SELF_CHECK", None)
        else:
            os.environ["ENCODER_COURSE_SELF_CHECK"] = previous
    if not checks:
        return _report_without_exercises(path, nb, run, out)
    failures = 0
    for index, cell in checks:
        key = cell.metadata["encoder_course"]["exercise"]
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
        if index not in run.executed:
            line, failures = f"✗ {key}: not run ({run.stop_reason or 'stopped'} before this cell)", failures + 1
        elif errors:
            first = (errors[0].get("evalue") or errors[0].get("ename", "")).splitlines()
            line, failures = f"✗ {key}: {first[0] if first else 'error'}", failures + 1
        elif text.startswith("✓"):
            line = text.splitlines()[0]
        else:
            line, failures = f"✗ {key}: the check printed no result", failures + 1
        out.write(line + "\n")
    out.write(f"{len(checks) - failures} of {len(checks)} exercises right in {path.name}\n")
    return 0 if failures == 0 else 1


def _next_with_exercises(path: Path) -> Path | None:
    """The first notebook after ``path`` in its folder that has an exercise, or None."""
    import nbformat

    from .learner_versions import cell_role

    for other in sorted(path.parent.glob("[0-9][0-9]_*.ipynb")):
        if other.name <= path.name:
            continue
        if any(cell_role(c) == "check" for c in nbformat.read(other, as_version=4).cells):
            return other
    return None


def _report_without_exercises(path: Path, nb, run, out) -> int:
    """For a notebook with no exercise: say so, say whether every cell ran, and where the exercises start."""
    from .executor import may_raise

    code = [(i, c) for i, c in enumerate(nb.cells) if c.get("cell_type") == "code"]
    problems = []
    if run.stop_reason is not None:
        problems.append(f"✗ the run stopped ({run.stop_reason}) in cell {run.stopped_at}")
    for index, cell in code:
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if errors and not may_raise(cell):
            first = (errors[0].get("evalue") or "").splitlines()
            problems.append(f"✗ cell {index} raised {errors[0].get('ename', 'an error')}"
                            + (f": {first[0]}" if first else ""))
    out.write(f"{path.name} has no exercises to check.\n")
    for line in problems:
        out.write(line + "\n")
    if not problems:
        out.write(f"Every one of its {len(code)} code cells ran without an error.\n")
    following = _next_with_exercises(path)
    if following is not None:
        out.write(f"The next exercises are in {following.name}: encoder-course check {following.name[:2]}\n")
    return 1 if problems else 0
