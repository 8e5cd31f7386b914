"""``encoder-course execute``: re-execute the solution notebooks, in course order, so their stored outputs are true.

The notebooks run one after the other (nbclient, which also stores each widget's state, so the
website edition can show the widget's first picture), sharing one fresh learner workspace, exactly as a
learner who solves every exercise in order: each notebook uses the parts the earlier ones saved.
Tracebacks are plain (no colour codes), and a cell that does not answer within ``--timeout`` seconds is
an error, never a silent wait. Afterwards the learner versions are regenerated from the solutions.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

PLAIN_TRACEBACKS = 'c.InteractiveShell.colors = "nocolor"\n'


def execute(paths: list[Path], timeout: float = 300.0, out=sys.stdout) -> None:
    """Execute each notebook in place, in the given order, with one shared fresh workspace."""
    import nbformat
    from nbclient import NotebookClient

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
                nb = nbformat.read(path, as_version=4)
                client = NotebookClient(nb, timeout=timeout, kernel_name="python3", store_widget_state=True,
                                        resources={"metadata": {"path": str(path.parent)}})
                client.execute()
                nbformat.write(nb, path)
                out.write(" done\n")
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="encoder-course execute", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="only notebooks whose name contains one of these (default: all)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds allowed per cell (default 300)")
    args = parser.parse_args(argv)
    from .learner_versions import find_root, regenerate, solution_notebooks

    root = find_root(None)
    paths = [p for p in solution_notebooks(root) if not args.names or any(n in p.stem for n in args.names)]
    execute(paths, timeout=args.timeout)
    changed, _ = regenerate(root)
    sys.stdout.write(f"regenerated {len(changed)} learner notebooks\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
