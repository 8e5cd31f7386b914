"""How long each exercise check takes: every catalogue answer, right and wrong, checked in turn.

Run ``python tests/checks/times.py`` from the repository root on a quiet machine. It prints the
slowest checks (wall and processor seconds) and whether every check met the budget
(``budgets.CHECK_BUDGET_S``, 2 s on a 2-core machine). The tests bound each check's processor time
only loosely (``catalogue.CHECK_CEILING_S``), to catch a gross regression, not a slow machine.

``--docs`` also rewrites the maintainers' guide's figure for the catalogues (between its ``catalogue`` markers): how
many wrong answers they hold, how many of them a probe names, how many right ones, and the slowest
check. With ``--no-timing`` it only counts (a second) and keeps the guide's slowest time as it was.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import pathlib
import re
import sys
import textwrap
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from checks.catalogue import catalogues, counts  # noqa: E402
from encoder_course.checks import ExerciseError  # noqa: E402
from encoder_course.notebook_tools import budgets  # noqa: E402

BEGIN, END = "<!-- catalogue:begin -->", "<!-- catalogue:end -->"
_SLOWEST = re.compile(r"the slowest of the \d+ took ([\d.]+) s")


def time_checks() -> list[tuple[float, float, str, str]]:
    """``(wall s, processor s, case id, catalogue)`` for every catalogue answer, slowest first."""
    timed = []
    for module, catalogue in catalogues().items():
        entries = [(cid, checker, candidate) for cid, checker, candidate, *_ in catalogue.wrong + catalogue.right]
        for cid, checker, candidate in entries:
            wall, cpu = time.perf_counter(), time.process_time()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(ExerciseError):
                checker(candidate)
            timed.append((time.perf_counter() - wall, time.process_time() - cpu, cid, module))
    return sorted(timed, reverse=True)


def figure(slowest_s: float) -> str:
    """The maintainers' guide's sentence about the catalogues, from what they hold now."""
    wrong, probed, right = counts()
    text = (f"{wrong} wrong answers, each to be named: {wrong - probed} by a listed slip or a direct check, "
            f"{probed}, written unlike any listed slip, by a probe that varies one thing at a time; and "
            f"{right} right ones, each to pass; every check, right or wrong, takes under "
            f"{budgets.CHECK_BUDGET_S:g} s on a 2-core machine: the slowest of the {wrong + right} took "
            f"{slowest_s:.2f} s here),")
    return textwrap.fill(text, width=104, initial_indent="  ", subsequent_indent="  ")


def rewrite_guide(slowest_s: float | None, readme: pathlib.Path = ROOT / "docs" / "maintainers.md") -> None:
    """Replace the maintainers' guide's catalogue figure (``slowest_s`` None: keep the slowest time it states)."""
    text = readme.read_text()
    pattern = re.compile(re.escape(BEGIN) + r"\n(.*?)\n\s*" + re.escape(END), re.S)
    found = pattern.search(text)
    if found is None:
        raise SystemExit(f"{readme} has no {BEGIN} ... {END} markers")
    if slowest_s is None:
        kept = _SLOWEST.search(" ".join(found.group(1).split()))
        slowest_s = float(kept.group(1)) if kept else float("nan")
    readme.write_text(text[:found.start()] + f"{BEGIN}\n{figure(slowest_s)}\n  {END}" + text[found.end():])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", "--readme", dest="docs", action="store_true",
                        help="rewrite the maintainers' guide's figure for the catalogues (docs/maintainers.md)")
    parser.add_argument("--no-timing", action="store_true", help="count only (with --docs: keep the slowest time)")
    args = parser.parse_args(argv)
    slowest, over = None, []
    if not args.no_timing:
        timed = time_checks()
        print(f"{len(timed)} checks; the slowest (wall s, processor s):")
        for wall, cpu, cid, module in timed[:8]:
            print(f"  {wall:6.2f} {cpu:6.2f}  {cid} ({module})")
        over = [t for t in timed if t[0] >= budgets.CHECK_BUDGET_S]
        print(f"{len(over)} over the budget of {budgets.CHECK_BUDGET_S:g} s")
        slowest = timed[0][0]
    if args.docs:
        rewrite_guide(slowest)
        print("The maintainers' guide's figure for the catalogues rewritten")
        from checks.catalogue import write_new_mistake_ids

        for mid in write_new_mistake_ids():
            print(f"  new mistake id: {mid}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
