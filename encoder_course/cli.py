"""The ``encoder-course`` command: ``learner`` regenerates the learner notebooks, ``grade`` checks a class."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="encoder-course", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="print the versions and hardware the course sees")

    learner = sub.add_parser(
        "learner",
        help="regenerate the learner notebooks in notebooks/ from notebooks/solutions/, and README's course map",
        description="Write every notebooks/NN_*.ipynb from notebooks/solutions/NN_*.ipynb, replacing "
        "each ### BEGIN SOLUTION ... ### END SOLUTION region with a NotImplementedError stub, and README's "
        "course map from the course manifest (encoder_course/notebook_tools/manifest.py) and the exercise registry.",
    )
    learner.add_argument("--check", action="store_true",
                         help="write nothing; exit 1 and list what is out of date")
    learner.add_argument("--root", default=None,
                         help="repository root (default: the nearest folder with notebooks/solutions)")

    grade = sub.add_parser(
        "grade",
        help="grade a class's notebooks: each exercise judged by its checker in an isolated process",
        description="Every file under PATH gets a row. Each submission is matched to its solution "
        "notebook, which alone decides the exercises and points; each exercise is run in a fresh isolated "
        "process (the solution's setup, the learner's exercise cells, the checker) and earns its points only "
        "from the checker's own verdict. Rows are saved as they finish.",
    )
    grade.add_argument("paths", nargs="+", metavar="PATH", help="submitted notebooks, or folders of them")
    grade.add_argument("--csv", default="grades.csv", metavar="FILE",
                       help="the gradebook CSV, rewritten after each submission (default grades.csv)")
    grade.add_argument("--details", default=None, metavar="FILE",
                       help="where to write every status, checker message and mistake id as JSON (default: "
                       "beside the CSV, grades.csv -> grades.details.json; `encoder-course report` reads it)")
    grade.add_argument("--timeout", type=float, default=60.0,
                       help="seconds allowed for each exercise of each submission (default 60)")
    grade.add_argument("--memory", type=int, default=4096, metavar="MB",
                       help="address-space limit of each verdict process (default 4096)")
    grade.add_argument("--solutions", "--master", dest="solutions", default=None, metavar="DIR",
                       help="the solution notebooks (default: the repository's notebooks/solutions)")
    grade.add_argument("--resume", action="store_true",
                       help="keep the rows already in --csv and grade only the other files")
    grade.add_argument("--trust-submissions", action="store_true",
                       help="grade as an ordinary user without a container: the submissions' code runs as you "
                       "(refused without this flag)")
    grade.add_argument("--jobs", type=int, default=0, metavar="N",
                       help="submissions graded at once, each in its own verdict processes (default: the cores)")
    grade.add_argument("--isolate", choices=("process", "container"), default="process",
                       help="process (default): a sandboxed process per exercise; container: a Docker or "
                       "Podman container per exercise (see --build-image)")
    grade.add_argument("--image", default="encoder-course-grader", help="the container image (--isolate container)")
    grade.add_argument("--build-image", action="store_true",
                       help="build the container image from this repository first (with --isolate container)")

    report = sub.add_parser(
        "report", help="a graded class as one offline HTML page, and its marks for Canvas or Moodle",
        description="Read the gradebook GRADES written by `encoder-course grade` (and the details file beside "
        "it) and write one HTML page: the pass rate per exercise, the commonest mistakes with the message "
        "learners saw, a learner x exercise grid, run times and the files the grader could not read.")
    report.add_argument("grades", metavar="GRADES", help="the gradebook CSV (grades.csv)")
    report.add_argument("--details", default=None, metavar="FILE",
                        help="the details JSON (default: beside GRADES, grades.details.json)")
    report.add_argument("--out", default="report.html", metavar="FILE", help="the page (default report.html)")
    report.add_argument("--canvas", default=None, metavar="FILE", help="also write the marks for Canvas's import")
    report.add_argument("--moodle", default=None, metavar="FILE", help="also write the marks for Moodle's import")

    release = sub.add_parser(
        "release", help="write an nbgrader-ready source version of the notebooks",
        description="Write DIR/source/<notebook>/<notebook>.ipynb for every solution notebook, with nbgrader's "
        "cell metadata (solution cells, autograded check cells with their points, locked cells), ready for "
        "`nbgrader generate_assignment`.")
    release.add_argument("--out", required=True, metavar="DIR", help="the nbgrader course folder to write into")
    release.add_argument("--root", default=None,
                         help="repository root (default: the nearest folder with notebooks/solutions)")

    site = sub.add_parser(
        "site",
        help="build the course's website from the solution notebooks' stored outputs (runs no notebook)",
        description="Write a static website of the course (a landing page, one page per notebook, a page "
        "for teachers) into DIR, from notebooks/solutions/ as stored. Needs `pip install -r "
        "requirements-site.txt`; nothing is executed and nothing is downloaded.",
    )
    site.add_argument("--out", required=True, metavar="DIR",
                      help="the folder to write: new, empty, or an earlier site build (replaced)")
    site.add_argument("--root", default=None,
                      help="repository root (default: the nearest folder with notebooks/solutions)")
    site.add_argument("--hub", default="", metavar="URL",
                      help="your JupyterHub's address: each notebook page also links to the notebook there")

    link = sub.add_parser(
        "link", help="nbgitpuller links that open each notebook on your JupyterHub",
        description="Print, for each notebook, a link that clones the course into the learner's home on the "
        "JupyterHub at URL (nbgitpuller; later clicks pull and keep the learner's changes) and opens the notebook.")
    link.add_argument("names", nargs="*", metavar="NOTEBOOK", help="notebooks (default: all)")
    link.add_argument("--hub", required=True, metavar="URL", help="the hub's address, https://hub.example.org")
    link.add_argument("--repo", default=None, metavar="URL",
                      help="the course's git repository (default: the public one)")
    link.add_argument("--branch", default="main", help="the branch to pull (default main)")

    progress = sub.add_parser(
        "progress", help="which parts of your own encoder are saved and pass their checks",
        description="One row per exercise that becomes part of your encoder: its notebook, whether your "
        "answer is saved in your workspace, and whether it passes its check now.")
    progress.add_argument("--workspace", default=None, metavar="DIR",
                          help="your workspace (default: $ENCODER_COURSE_WORKSPACE, else ./my_encoder, else "
                          "./notebooks/my_encoder)")

    check = sub.add_parser(
        "check", help="run a learner notebook top to bottom and say whether each exercise is right",
        description="The self-check, without pytest: runs notebooks/NN_*.ipynb in a fresh kernel and fails "
        "while any of its exercises is unattempted or wrong, whatever the notebook has stored.")
    check.add_argument("notebook", help="a notebook number (02) or path")
    check.add_argument("--timeout", type=float, default=600.0, help="seconds allowed (default 600)")

    budgets = sub.add_parser(
        "budgets", help="measure every notebook's time and memory (the benchmark behind README's table)")
    budgets.add_argument("names", nargs="*", help="only notebooks whose name contains one of these")
    budgets.add_argument("--readme", action="store_true", help="also rewrite README's table")

    execute = sub.add_parser(
        "execute", help="re-execute the solution notebooks in course order (one shared workspace), then "
        "regenerate the learner versions")
    execute.add_argument("names", nargs="*", help="store only notebooks whose name contains one of these (the "
                         "earlier ones still run first, for the parts they save)")
    execute.add_argument("--timeout", type=float, default=300.0, help="seconds allowed per cell")

    args = parser.parse_args(argv)
    if args.command == "execute":
        from .notebook_tools.execute import main as execute_main

        return execute_main(args.names + ["--timeout", str(args.timeout)])
    if args.command == "progress":
        from . import yours

        folder = yours.workspace_dir(args.workspace)
        sys.stdout.write(yours.format_progress(yours.progress(folder), folder) + "\n")
        return 0
    if args.command == "check":
        from .notebook_tools.self_check import check_notebook

        return check_notebook(args.notebook, timeout=args.timeout)
    if args.command == "budgets":
        from .notebook_tools.budgets import main as budgets_main

        return budgets_main(args.names + (["--readme"] if args.readme else []))
    if args.command == "info":
        from .tools import environment

        for key, value in environment().items():
            sys.stdout.write(f"{key:12s} {value}\n")
        return 0
    if args.command == "learner":
        return _learner(args)
    if args.command == "grade":
        return _grade(args)
    if args.command == "link":
        from .notebook_tools import manifest

        for nb in manifest.select(args.names):
            sys.stdout.write(f"{nb.stem}  {manifest.hub_url(nb.stem, args.hub, repo=args.repo, branch=args.branch)}\n")
        return 0
    if args.command == "report":
        return _report(args)
    if args.command == "release":
        return _release(args)
    if args.command == "site":
        return _site(args)
    return 2


def _learner(args) -> int:
    from .notebook_tools import manifest
    from .notebook_tools.learner_versions import MarkerError, find_root, regenerate, solution_notebooks

    try:
        root = find_root(args.root)
        changed, orphans = regenerate(root, check=args.check)
        readme = root / "README.md"
        if readme.exists():
            if args.check:
                if manifest.readme_map() not in readme.read_text(encoding="utf-8"):
                    changed.append("README.md (its course map)")
            elif manifest.rewrite_readme(root):
                sys.stdout.write("Rewrote README's course map from the manifest.\n")
    except (FileNotFoundError, MarkerError, ValueError) as exc:
        sys.stderr.write(f"encoder-course learner: {exc}\n")
        return 2
    total = len(solution_notebooks(root))
    if args.check:
        if changed:
            sys.stdout.write("These files differ from what `encoder-course learner` makes:\n")
            for name in changed:
                sys.stdout.write(f"  {name}\n")
            sys.stdout.write("Run `encoder-course learner` and commit the result.\n")
        else:
            sys.stdout.write(f"All {total} learner notebooks are up to date.\n")
    else:
        sys.stdout.write(f"Wrote {len(changed)} of {total} learner notebooks"
                         + (": " + ", ".join(changed) if changed else " (all were up to date)") + "\n")
    for name in orphans:
        sys.stdout.write(f"  note: {name} has no solution notebook in notebooks/solutions/\n")
    return 1 if (args.check and changed) else 0


def _site(args) -> int:
    from .site.build import SiteError, build_site

    try:
        report = build_site(args.out, args.root, hub=args.hub)
    except (FileNotFoundError, SiteError) as exc:
        sys.stderr.write(f"encoder-course site: {exc}\n")
        return 2
    sys.stdout.write(f"Built {len(report.pages)} pages in {report.seconds:.1f} s: {report.out}/index.html\n")
    for where in report.widgets_without_picture:
        sys.stdout.write(f"  note: no stored picture of the widget in {where}; its page says so\n")
    if report.warnings:
        sys.stdout.write(f"  {len(report.warnings)} Sphinx warnings, the first: {report.warnings[0]}\n")
    return 0



def _grade(args) -> int:
    import subprocess

    from .grading.grade import grade as run_grade

    if args.isolate == "container" and args.build_image:
        from .grading import sandbox

        engine, why = sandbox.container_engine()
        if engine is None:
            sys.stderr.write(f"encoder-course grade: --build-image needs Docker or Podman ({why})\n")
            return 2
        command = sandbox.build_image_command(engine, args.image)
        sys.stdout.write("$ " + " ".join(command) + "\n")
        if subprocess.run(command).returncode != 0:
            sys.stderr.write("encoder-course grade: building the image failed\n")
            return 2
    from .grading.report import details_path_for

    details = args.details if args.details is not None else details_path_for(args.csv) if args.csv else None
    _, code = run_grade(args.paths, csv_path=args.csv or None, details_path=details, timeout=args.timeout,
                        solutions_dir=args.solutions, resume=args.resume, isolate=args.isolate, memory_mb=args.memory,
                        image=args.image, jobs=args.jobs, trust=args.trust_submissions)
    return code


def _report(args) -> int:
    from .grading.report import report

    try:
        written = report(args.grades, details_path=args.details, out=args.out, canvas=args.canvas,
                         moodle=args.moodle)
    except (OSError, ValueError, KeyError) as exc:
        sys.stderr.write(f"encoder-course report: {exc}\n")
        return 2
    sys.stdout.write("wrote " + ", ".join(written) + "\n")
    return 0


def _release(args) -> int:
    from .notebook_tools.learner_versions import MarkerError, find_root
    from .notebook_tools.release import release

    try:
        written = release(find_root(args.root), args.out)
    except (FileNotFoundError, MarkerError, ValueError) as exc:
        sys.stderr.write(f"encoder-course release: {exc}\n")
        return 2
    sys.stdout.write(f"Wrote {len(written)} nbgrader source notebooks under {args.out}/source/; next, in {args.out}:\n"
                     "  nbgrader generate_assignment <notebook> (for example 03_masks)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
