"""The ``encoder-course`` command: ``student`` regenerates learner notebooks, ``grade`` checks a class."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="encoder-course", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="print the versions and hardware the course sees")

    student = sub.add_parser(
        "student",
        help="regenerate the learner notebooks in notebooks/ from notebooks/solutions/",
        description="Write every notebooks/NN_*.ipynb from notebooks/solutions/NN_*.ipynb, replacing "
        "each ### BEGIN SOLUTION ... ### END SOLUTION region with a NotImplementedError stub.",
    )
    student.add_argument("--check", action="store_true",
                         help="write nothing; exit 1 and list the learner notebooks that are out of date")
    student.add_argument("--root", default=None,
                         help="repository root (default: the nearest folder with notebooks/solutions)")

    grade = sub.add_parser(
        "grade",
        help="run submitted notebooks, each in its own kernel, and tabulate their exercise checks",
    )
    grade.add_argument("paths", nargs="+", metavar="PATH", help="submitted .ipynb files or folders")
    grade.add_argument("--timeout", type=float, default=300.0,
                       help="seconds allowed for each whole notebook (default 300)")
    grade.add_argument("--csv", default="grades.csv", metavar="FILE",
                       help="where to write the table as CSV (default grades.csv)")

    args = parser.parse_args(argv)
    if args.command == "info":
        from .utils import environment

        for key, value in environment().items():
            sys.stdout.write(f"{key:12s} {value}\n")
        return 0
    if args.command == "student":
        return _student(args)
    if args.command == "grade":
        from .grade import grade as run_grade

        results = run_grade(args.paths, timeout=args.timeout, csv_path=args.csv)
        return 0 if results else 2
    return 2


def _student(args) -> int:
    from .student import MarkerError, find_root, regenerate, solution_notebooks

    try:
        root = find_root(args.root)
        changed, orphans = regenerate(root, check=args.check)
    except (FileNotFoundError, MarkerError) as exc:
        sys.stderr.write(f"encoder-course student: {exc}\n")
        return 2
    total = len(solution_notebooks(root))
    if args.check:
        if changed:
            sys.stdout.write("These learner notebooks differ from what `encoder-course student` makes:\n")
            for name in changed:
                sys.stdout.write(f"  {name}\n")
            sys.stdout.write("Run `encoder-course student` and commit the result.\n")
        else:
            sys.stdout.write(f"All {total} learner notebooks are up to date.\n")
    else:
        sys.stdout.write(f"Wrote {len(changed)} of {total} learner notebooks"
                         + (": " + ", ".join(changed) if changed else " (all were up to date)") + "\n")
    for name in orphans:
        sys.stdout.write(f"  note: {name} has no solution notebook in notebooks/solutions/\n")
    return 1 if (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
