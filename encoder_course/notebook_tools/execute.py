"""``encoder-course execute``: re-execute the solution notebooks, in course order, so their stored outputs are true.

The notebooks run one after the other (:mod:`.executor`, which also stores each widget's state, so the
website edition can show the widget's first picture), sharing one fresh learner workspace, exactly as a
learner who solves every exercise in order: each notebook uses the parts the earlier ones saved. Asked for
some notebooks only, it still runs every earlier one first, to fill the workspace, and stores only those asked
for: a notebook run in an empty workspace would store "not saved yet" where a learner sees their own parts.
Tracebacks are plain (no colour codes), and a cell that does not answer within ``--timeout`` seconds is
an error, never a silent wait; a notebook with an error or a timeout is left as it was, and the run stops.
Each notebook is written in the course's stable form (:func:`.notebook_tools.write_notebook`), so a
re-run changes only the outputs that really changed. Afterwards the learner versions are regenerated and
README's course map is written from the course manifest.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

PLAIN_TRACEBACKS = 'c.InteractiveShell.colors = "nocolor"\n'


class ExecutionFailed(RuntimeError):
    """A notebook did not run to its end: a cell raised, timed out, or the kernel died."""


STARTUP_S = 120.0


def execute(paths: list[Path], timeout: float = 300.0, out=sys.stdout, store=None) -> None:
    """Execute each notebook in place, in the given order, with one shared fresh workspace.

    Args:
        paths: the notebooks, in the order to run them.
        timeout: seconds one cell may run.
        out: where the progress lines go.
        store: the notebooks to write (None: all); the others only run, for the parts they save.

    Raises:
        ExecutionFailed: at the first notebook that does not run to its end (that notebook is not written).
    """
    from .executor import run_notebook
    from .files import read_notebook, write_notebook

    with tempfile.TemporaryDirectory(prefix="encoder-course-execute-") as scratch:
        profile = Path(scratch) / "ipython" / "profile_default"
        profile.mkdir(parents=True)
        (profile / "ipython_config.py").write_text(PLAIN_TRACEBACKS)
        saved = {k: os.environ.get(k) for k in ("IPYTHONDIR", "ENCODER_COURSE_WORKSPACE", "ENCODER_COURSE_SELF_CHECK")}
        os.environ["IPYTHONDIR"] = str(profile.parent)
        os.environ["ENCODER_COURSE_WORKSPACE"] = str(Path(scratch) / "my_encoder")
        os.environ.pop("ENCODER_COURSE_SELF_CHECK", None)
        try:
            for path in paths:
                out.write(f"executing {path.name} ...")
                out.flush()
                nb = read_notebook(path)
                code_cells = sum(cell.get("cell_type") == "code" for cell in nb.cells)
                run = run_notebook(nb, timeout=STARTUP_S + timeout * max(code_cells, 1), cwd=path.parent,
                                   stop_on_error=True, cell_timeout=timeout, startup_timeout=STARTUP_S)
                if run.stop_reason is not None:
                    out.write(" failed\n")
                    raise ExecutionFailed(_failure(path, nb, run, timeout))
                if store is not None and path not in store:
                    out.write(" ran (for the parts it saves; not stored)\n")
                    continue
                changed = write_notebook(nb, path)
                out.write(" done\n" if changed else " done (unchanged)\n")
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def _failure(path: Path, nb, run, timeout: float) -> str:
    """What stopped a notebook's run, with the cell's source and its traceback."""
    where = f"{path.name}, cell {run.stopped_at}"
    if run.stop_reason == "timed out":
        what = f"{where} did not finish within {timeout:g} s (--timeout)"
    elif run.stop_reason == "kernel died":
        what = f"{where}: the kernel died"
    else:
        what = f"{where} raised an error"
    cell = nb.cells[run.stopped_at] if run.stopped_at is not None and run.stopped_at < len(nb.cells) else {}
    errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    traceback = "\n".join(errors[-1].get("traceback", [])) if errors else ""
    return f"{what}; {path.name} was left as it was.\n{cell.get('source', '')[:1000]}\n{traceback}".rstrip()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="encoder-course execute", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="store only notebooks whose name contains one of these (default: "
                        "all); the earlier ones still run first, for the parts they save")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds allowed per cell (default 300)")
    args = parser.parse_args(argv)
    from . import manifest
    from .learner_versions import find_root, regenerate

    root = find_root(None)
    course = [nb.solution(root) for nb in manifest.select([]) if nb.solution(root).exists()]
    chosen = [nb.solution(root) for nb in manifest.select(args.names) if nb.solution(root).exists()]
    paths = course[:max((course.index(p) + 1 for p in chosen), default=0)]  # the chosen and every one before
    try:
        execute(paths, timeout=args.timeout, store=set(chosen))
    except ExecutionFailed as failure:
        sys.stderr.write(f"{failure}\n")
        return 1
    changed, _ = regenerate(root)
    sys.stdout.write(f"regenerated {len(changed)} learner notebooks\n")
    if (root / "README.md").exists() and manifest.rewrite_readme(root):
        sys.stdout.write("rewrote README's course map from the manifest\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
