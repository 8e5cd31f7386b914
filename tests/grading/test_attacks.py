"""A hostile class, graded: every attack in ``tests/grading/attacks/`` earns 0 and changes nothing outside its row.

The class folder holds one notebook-03 submission per attack cell (each answers with the inverted
mask, so it deserves 0 whatever it does), honest submissions before and after them, and files that
once stopped the run (a name that is not UTF-8, JSON nested past the parser's limit). It is graded
twice: as root (each exercise as ``nobody`` in its own namespaces) and as an ordinary user, in
bubblewrap, without ``--trust-submissions``.
"""

from __future__ import annotations

import csv
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from grading_helpers import RIGHT, ROOT, SOLUTIONS, WRONG, solved, write

from encoder_course.grading import sandbox

pytestmark = pytest.mark.notebooks
ATTACKS = sorted((ROOT / "tests" / "grading" / "attacks").glob("*.py"))
HONEST = ("aa_honest_0.ipynb", "mm_honest_1.ipynb", "zz_honest_2.ipynb")


def _class(folder: Path, solutions: Path) -> None:
    header = (f"CLASS_DIR = {str(folder)!r}\nSOLUTIONS_DIR = {str(solutions)!r}\nCOURSE_DIR = {str(ROOT)!r}\n"
              f"WRONG = {WRONG['padding_mask']!r}\n")
    for path in ATTACKS:
        write(folder, f"attack_{path.stem}.ipynb", solved(padding_mask=header + path.read_text(encoding="utf-8"),
                                                           causal_mask=WRONG["causal_mask"]))
    for name in HONEST:
        write(folder, name, solved(padding_mask=RIGHT["padding_mask"], causal_mask=RIGHT["causal_mask"]))
    raw = json.dumps(solved(padding_mask=WRONG["padding_mask"])).encode()
    (folder / os.fsdecode(b"Jos\xe9_latin1_name.ipynb")).write_bytes(raw)
    (folder / "deeply_nested.ipynb").write_bytes(b'{"cells": ' + b"[" * 50_000 + b"]" * 50_000 + b"}")


def _digest(paths) -> dict:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths if p.is_file()}


def _grade_and_check(tmp_path: Path, command_prefix: list[str], owner: int | None) -> str:
    folder, solutions, out = tmp_path / "class", tmp_path / "solutions", tmp_path / "out"
    shutil.copytree(SOLUTIONS, solutions)
    out.mkdir()
    _class(folder, solutions)
    if owner is not None:
        for p in [tmp_path, folder, out, *folder.iterdir()]:
            os.chown(p, owner, owner)
    watched = _digest(sorted(folder.iterdir())) | _digest(sorted(solutions.iterdir())) \
        | _digest(sorted((ROOT / "encoder_course" / "checks").glob("*.py")))
    csv_path = out / "grades.csv"
    start, started = time.monotonic(), time.time()
    done = subprocess.run(command_prefix + ["-m", "encoder_course.cli", "grade", str(folder), "--csv",
                                            str(csv_path), "--solutions", str(solutions), "--timeout", "20"],
                          capture_output=True, text=True, timeout=900, cwd=tmp_path)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-3000:]
    rows = {r["file"]: r for r in csv.DictReader(csv_path.open(encoding="utf-8", newline=""))}
    # every file has a row, and the run did not stop on any of them
    assert len(rows) == len(list(folder.iterdir())), (sorted(rows), log[-2000:])
    for path in ATTACKS:
        row = rows[f"attack_{path.stem}.ipynb"]
        assert row["padding_mask"] == "0" and row["causal_mask"] == "0", (path.stem, row)
    for name in HONEST:
        assert rows[name]["total"] == "2", (name, rows[name], log[-2000:])
    latin = next(r for f, r in rows.items() if f.startswith("Jos"))
    assert latin["file"] == "Jos\\xe9_latin1_name.ipynb" and latin["padding_mask"] == "0"
    assert rows["deeply_nested.ipynb"]["status"] != "graded"
    # nothing outside the rows changed: submissions, solutions, the course's checkers
    assert _digest(Path(p) for p in watched) == watched
    # Only where the attacks write, never a walk of the host's /tmp (someone else's deep folder there would end it).
    planted = [p for p in (Path("/tmp/.ipython/profile_default/startup/00-evil.py"),
                           Path.home() / ".ipython/profile_default/startup/00-evil.py",
                           ROOT / "tests/ipython_profile/profile_default/startup/00-evil.py")
               if p.exists() and p.stat().st_mtime >= started]
    assert not planted, planted
    # nothing left running, no large file left behind in the host's /tmp
    left = subprocess.run(["pgrep", "-f", "attack_fork_bomb|time.sleep\\(120\\)"], capture_output=True, text=True)
    assert not left.stdout.strip(), left.stdout
    places = [Path("/tmp/fill.bin"), Path("/dev/shm/fill.bin"), tmp_path / "fill.bin",
              *(Path(d) / "fill.bin" for d in glob.glob(f"/tmp/{sandbox.RUN_PREFIX}*/job-*"))]
    assert not [p for p in places if p.exists() and p.stat().st_mtime >= started]
    return log + f"\n({time.monotonic() - start:.0f} s)"


@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="the root run needs root")
def test_a_hostile_class_graded_as_root(tmp_path):
    log = _grade_and_check(tmp_path, [sys.executable], None)
    assert "as uid 65534" in log


def _as_ordinary_user() -> list[str] | None:
    """The command prefix that runs this interpreter as an ordinary user, or None where none can be made."""
    if os.geteuid() != 0:
        return [sys.executable]
    if not (shutil.which("unshare") and shutil.which("setpriv")):
        return None
    # The interpreter may live in a folder others cannot enter (pyenv under /root): in a mount namespace of
    # its own, that folder is covered by an empty one and the interpreter's tree bound back into it.
    tree = Path(sys.base_prefix).parent.parent
    blocked = [str(p) for p in [*reversed(tree.parents), tree] if p != Path("/") and not os.stat(p).st_mode & 0o001]
    script = "set -e\nmount -t tmpfs none /mnt\nmkdir /mnt/keep\n"
    if blocked:
        script += (f"mount --bind {tree} /mnt/keep\nmount -t tmpfs -o mode=755 none {blocked[0]}\n"
                   f"mkdir -p {tree}\nmount --bind /mnt/keep {tree}\n")
    script += ('exec setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/tmp '
               f'PYTHONPATH={ROOT} "$@"\n')
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", sys.executable]


def test_a_hostile_class_graded_as_an_ordinary_user_in_bubblewrap(tmp_path):
    prefix = _as_ordinary_user()
    if prefix is None:
        pytest.skip("no way to run as an ordinary user here (unshare and setpriv are missing)")
    probe = subprocess.run(prefix + ["-c", "from encoder_course.grading import sandbox; print(sandbox.find_bwrap())"],
                           capture_output=True, text=True, timeout=120)
    if "bwrap" not in probe.stdout:
        why = (probe.stderr or probe.stdout)[-300:]
        pytest.skip("bubblewrap is not installed, or cannot make namespaces here: " + why)
    base = Path(tempfile.mkdtemp(prefix="encoder-course-attacks-"))  # a folder the ordinary user can reach
    try:
        os.chmod(base, 0o755)
        log = _grade_and_check(base, prefix, 65534 if os.geteuid() == 0 else None)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert "in bubblewrap" in log and "not run" not in log
