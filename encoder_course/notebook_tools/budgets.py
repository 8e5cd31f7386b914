"""The notebooks' time and memory budgets, measured by a benchmark rather than asserted by the tests.

``encoder-course budgets`` runs every notebook (solution and learner versions) top to bottom, one at a
time, each in a fresh kernel, and records its wall time and the kernel's peak memory with the
machine's description (CPU, cores, load) in ``budgets.json`` at the repository root; ``--readme``
also rewrites README's table from that file. The budgets themselves: each notebook's ``budget_s`` in the
course manifest, 60 s (10: 120 s; 12 and 13: 180 s) on a 2-core machine, and kernel memory under 2 GB (Binder's limit).

The default test run does not assert these budgets, which depend on the machine and on its load: it
bounds the kernel's *processor* time by :data:`CEILING_FACTOR` times the recorded wall time (at least
:data:`CEILING_MIN_S`), which a busy machine barely changes, so it catches a 10x regression and not a
slow or busy machine; a hang is caught by :func:`hang_seconds`, a wall-time limit that leaves room
for a machine 30 times slower than a quiet one; and it keeps the memory limit.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

MEMORY_LIMIT = 2 * 1024**3  # Binder's limit
CEILING_FACTOR = 10.0
CEILING_MIN_S = 120.0
HANG_FACTOR = 3.0  # wall time: the processor-time ceiling times this, for a busy machine
CHECK_BUDGET_S = 2.0  # one exercise check, right or wrong answer, on a 2-core machine (tests/checks/times.py)
FILE_NAME = "budgets.json"
README_BEGIN = "<!-- budgets:begin -->"
README_END = "<!-- budgets:end -->"


def budget_seconds(name: str) -> float:
    """The time budget of a notebook (its manifest entry's ``budget_s``), by its number, name or file name."""
    from .manifest import notebook

    return notebook(name).budget_s


def ceiling_seconds(name: str, recorded: dict | None) -> float:
    """The generous limit the default tests use: 10x the recorded time (or the budget), at least 120 s."""
    base = (recorded or {}).get("seconds") or budget_seconds(name)
    return max(CEILING_FACTOR * base, CEILING_MIN_S)


def hang_seconds(name: str, recorded: dict | None) -> float:
    """The wall-time limit of one test run of a notebook: only a hang (or a machine 30x slower) reaches it."""
    return HANG_FACTOR * ceiling_seconds(name, recorded)


def load(root: Path) -> dict:
    """The recorded budgets (``{"machine": ..., "notebooks": {"solutions/NN_x": {...}}}``), or empty."""
    path = root / FILE_NAME
    return json.loads(path.read_text()) if path.exists() else {"machine": {}, "notebooks": {}}


def measure(root: Path, names=None, versions=("solutions", "learner"), out=sys.stdout) -> dict:
    """Run the notebooks one at a time and return the record (see the module docstring)."""
    import tempfile

    import nbformat

    from ..measure.timing import machine  # imports torch: only when measuring
    from .executor import run_notebook
    from .manifest import select

    record = {"machine": machine(), "notebooks": {}}
    for version in versions:
        for listed in select(names):
            path = listed.solution(root) if version == "solutions" else listed.learner(root)
            nb = nbformat.read(path, as_version=4)
            with tempfile.TemporaryDirectory() as workspace:
                os.environ["ENCODER_COURSE_WORKSPACE"] = str(Path(workspace) / "my_encoder")
                run = run_notebook(nb, timeout=10 * budget_seconds(path.name), cwd=path.parent, stop_on_error=True)
            entry = {"seconds": round(run.seconds, 1), "peak_mib": round(run.peak_rss / 2**20),
                     "first_output_s": None if run.first_output_s is None else round(run.first_output_s, 1),
                     "within_budget": run.stop_reason is None and run.seconds <= budget_seconds(path.name)
                     and run.peak_rss < MEMORY_LIMIT}
            if run.stop_reason:
                entry["stopped"] = f"{run.stop_reason} in cell {run.stopped_at}"
            record["notebooks"][f"{version}/{path.stem}"] = entry
            out.write(f"{version:9} {path.stem:28} {entry['seconds']:6.1f} s {entry['peak_mib']:5d} MiB"
                      f"{'' if entry['within_budget'] else '  OVER BUDGET'}\n")
            out.flush()
    return record


def readme_table(record: dict) -> str:
    """README's budget table, made from a record."""
    m = record["machine"]
    rows = {}
    for key, entry in record["notebooks"].items():
        version, name = key.split("/", 1)
        rows.setdefault(name, {})[version] = entry
    lines = [
        f"Measured by `encoder-course budgets` on {m.get('date', '?')}: {m.get('cpu', '?')}, {m.get('cores', '?')} "
        f"cores, {m.get('memory_gib', '?')} GiB, Python {m.get('python', '?')}, torch {m.get('torch', '?')}; "
        "each notebook alone, top to bottom, in a fresh kernel. First output: seconds from the kernel's start to "
        "the end of the first cell that shows something (learner version), what a learner waits for after Run All.",
        "",
        "| notebook | solution (s) | learner (s) | first output (s) | kernel peak (MiB) |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in sorted(rows):
        sol, learner = rows[name].get("solutions", {}), rows[name].get("learner", {})
        peak = max(sol.get("peak_mib", 0), learner.get("peak_mib", 0))
        first = learner.get("first_output_s", sol.get("first_output_s"))
        lines.append(f"| {name} | {sol.get('seconds', '-')} | {learner.get('seconds', '-')} | "
                     f"{'-' if first is None else first} | {peak} |")
    return "\n".join(lines)


def write_readme(root: Path, record: dict) -> None:
    """Replace README's table between the budget markers."""
    readme = root / "README.md"
    text = readme.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(README_BEGIN) + ".*?" + re.escape(README_END), re.S)
    if not pattern.search(text):
        raise ValueError(f"README.md has no {README_BEGIN} ... {README_END} markers")
    readme.write_text(pattern.sub(README_BEGIN + "\n" + readme_table(record) + "\n" + README_END, text),
                      encoding="utf-8")


def main(argv=None, root: Path | None = None) -> int:
    parser = argparse.ArgumentParser(prog="encoder-course budgets", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="only notebooks whose name contains one of these")
    parser.add_argument("--readme", action="store_true", help="also rewrite README's table")
    args = parser.parse_args(argv)
    from .learner_versions import find_root

    root = root or find_root(None)
    record = measure(root, args.names)
    if args.names:  # a partial run updates only the notebooks it measured
        merged = load(root)
        merged["notebooks"].update(record["notebooks"])
        merged["machine"] = record["machine"]
        record = merged
    (root / FILE_NAME).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    if args.readme:
        write_readme(root, record)
    over = [k for k, e in record["notebooks"].items() if not e.get("within_budget")]
    verdict = f"over budget: {', '.join(over)}" if over else "all within budget"
    sys.stdout.write(f"wrote {FILE_NAME}; {verdict}\n")
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
