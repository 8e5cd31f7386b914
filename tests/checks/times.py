"""How long each exercise check takes: every catalogue answer, right and wrong, checked in turn.

Run ``python tests/checks/times.py`` from the repository root on a quiet machine. It prints the
slowest checks (wall and processor seconds) and whether every check met the budget
(``budgets.CHECK_BUDGET_S``, 2 s on a 2-core machine). The tests bound each check's processor time
only loosely (``catalogue.CHECK_CEILING_S``), to catch a gross regression, not a slow machine.
"""

from __future__ import annotations

import contextlib
import io
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from checks.catalogue import catalogues  # noqa: E402
from encoder_course.checks import ExerciseError  # noqa: E402
from encoder_course.course import budgets  # noqa: E402


def main() -> int:
    timed = []
    for module, catalogue in catalogues().items():
        entries = [(cid, checker, candidate) for cid, checker, candidate, *_ in catalogue.wrong + catalogue.right]
        for cid, checker, candidate in entries:
            wall, cpu = time.perf_counter(), time.process_time()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(ExerciseError):
                checker(candidate)
            timed.append((time.perf_counter() - wall, time.process_time() - cpu, cid, module))
    timed.sort(reverse=True)
    print(f"{len(timed)} checks; the slowest (wall s, processor s):")
    for wall, cpu, cid, module in timed[:8]:
        print(f"  {wall:6.2f} {cpu:6.2f}  {cid} ({module})")
    over = [t for t in timed if t[0] >= budgets.CHECK_BUDGET_S]
    print(f"{len(over)} over the budget of {budgets.CHECK_BUDGET_S:g} s")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
