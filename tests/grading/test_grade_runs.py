"""`encoder-course grade` runs that a submission (or the teacher's Ctrl-C) tries to stop or spy on.

The grader runs as its own process here (``python -m encoder_course.cli grade ...``), as a
teacher would start it, so it can be interrupted, killed, watched for memory, and given secrets.
"""

from __future__ import annotations

import csv
import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import psutil
import pytest
from grading_helpers import RIGHT, SOLUTIONS, WRONG, load, solved, write

from encoder_course.grading import sandbox

pytestmark = pytest.mark.notebooks
SECRET = "s3cr3t-teacher-7c1e"


def _command(folder, csv_path, *extra):
    return [sys.executable, "-m", "encoder_course.cli", "grade", str(folder), "--csv", str(csv_path),
            "--solutions", str(SOLUTIONS), *extra]


def _rows(csv_path):
    try:
        with open(csv_path, encoding="utf-8", newline="") as handle:
            return list(csv.DictReader(handle))
    except FileNotFoundError:
        return []


def _wait_for_rows(csv_path, n, proc, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if len(_rows(csv_path)) >= n:
            return True
        time.sleep(0.05)
    return False


def test_interrupted_and_killed_runs_keep_their_rows_and_resume(tmp_path):
    folder = tmp_path / "class"
    slow = "import time\ntime.sleep(0.4)\n"
    for name in ("a", "b", "c", "d", "e"):
        write(folder, f"{name}.ipynb", solved(padding_mask=slow + RIGHT["padding_mask"],
                                               causal_mask=slow + RIGHT["causal_mask"]))
    csv_path = tmp_path / "grades.csv"
    # Ctrl-C: the run stops, says so, and keeps what it graded
    proc = subprocess.Popen(_command(folder, csv_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert _wait_for_rows(csv_path, 1, proc)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGINT, out
    assert "interrupted" in out and "--resume" in out
    first = _rows(csv_path)
    assert 1 <= len(first) < 5 and all(r["total"] == "2" for r in first)
    # SIGKILL in the middle of a resumed run: the rows written so far stay, no process is left behind,
    # and the resumed run graded only files that were not in the CSV yet
    proc = subprocess.Popen(_command(folder, csv_path, "--resume"), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    assert _wait_for_rows(csv_path, len(first) + 1, proc)
    below = psutil.Process(proc.pid).children(recursive=True)
    proc.kill()
    out, _ = proc.communicate(timeout=30)
    assert f"{5 - len(first)} file(s) to grade, {len(first)} already in the CSV" in out
    second = _rows(csv_path)
    assert len(second) > len(first) and [r["file"] for r in second[:len(first)]] == [r["file"] for r in first]
    assert len({r["file"] for r in second}) == len(second) and all(r["total"] == "2" for r in second)
    _, alive = psutil.wait_procs(below, timeout=10)
    left = [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not left, [(p.pid, p.cmdline(), p.ppid()) for p in left]
    # A grader killed outright leaves its folders in /tmp (the teachers' guide says so): this test removes its own.
    for leftover in glob.glob(f"{tempfile.gettempdir()}/{sandbox.RUN_PREFIX}{proc.pid}-*"):
        shutil.rmtree(leftover, ignore_errors=True)
    # SIGTERM (a scheduler's stop) is a Ctrl-C too: the rows stay, the exit code names the signal
    other = tmp_path / "other.csv"
    proc = subprocess.Popen(_command(folder, other), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert _wait_for_rows(other, 1, proc)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM and "interrupted (SIGTERM)" in out, out
    assert 1 <= len(_rows(other)) < 5


def test_stoppers_and_spies_cost_only_their_own_exercise(tmp_path):
    folder = tmp_path / "class"
    write(folder, "a_good.ipynb", load(SOLUTIONS / "03_masks.ipynb"))
    write(folder, "b_loops_in_first_exercise.ipynb", solved(
        padding_mask="while True:\n    pass\n", causal_mask=RIGHT["causal_mask"]))
    write(folder, "c_stops_itself.ipynb", solved(
        padding_mask="import signal\nsignal.raise_signal(signal.SIGSTOP)\n" + RIGHT["padding_mask"],
        causal_mask=RIGHT["causal_mask"]))
    write(folder, "d_prints_1mb_every_10ms.ipynb", solved(padding_mask=(
        "import sys, time\nchunk = 'x' * 2**20\nwhile True:\n    sys.stdout.write(chunk)\n"
        "    sys.stdout.flush()\n    time.sleep(0.01)\n"), causal_mask=RIGHT["causal_mask"]))
    spy = (
        "import os\nseen = ' '.join(f'{k}={v}' for k, v in os.environ.items())\n"
        "for pid in os.listdir('/proc') if os.path.isdir('/proc') else []:\n"
        "    for what in ('cmdline', 'environ'):\n"
        "        try:\n            seen += open(f'/proc/{pid}/{what}', 'rb').read().decode('utf-8', 'replace')\n"
        "        except Exception:\n            pass\n"
        f"raise ValueError('SAW-SECRET' if {SECRET!r} in seen else 'LOOKED-AND-FOUND-NOTHING')\n")
    write(folder, "e_spies_on_the_teacher.ipynb", solved(padding_mask=spy, causal_mask=RIGHT["causal_mask"]))
    write(folder, "f_kills_everything.ipynb", solved(padding_mask=(
        "import os, signal\n"
        "for target in (os.getppid(), 1, -1):\n    try:\n        os.kill(target, signal.SIGKILL)\n"
        "    except Exception:\n        pass\n"
        "import _posixsubprocess\nr, w = os.pipe()\n"
        "_posixsubprocess.fork_exec([b'/bin/sh', b'-c', b'kill -9 -1'], [b'/bin/sh'], True, (), None, None,"
        " -1, -1, -1, -1, -1, -1, r, w, True, False, -1, None, None, None, -1, None, False)\n"
        "import time\ntime.sleep(0.5)\n" + WRONG["padding_mask"]), causal_mask=RIGHT["causal_mask"]))
    write(folder, "g_good_after_all_that.ipynb", load(SOLUTIONS / "03_masks.ipynb"))
    csv_path, details = tmp_path / "grades.csv", tmp_path / f"{SECRET}.json"
    env = dict(os.environ, TEACHER_TOKEN=SECRET)
    proc = subprocess.Popen(_command(folder, csv_path, "--timeout", "3", "--details", str(details)), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    samples, printer_started = [], []

    def watch():
        grader = psutil.Process(proc.pid)
        while proc.poll() is None:
            try:
                samples.append((time.monotonic(), grader.memory_info().rss))
            except psutil.Error:
                break
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if "d_prints_1mb_every_10ms" in line and not printer_started:
            printer_started.append(time.monotonic())
    proc.wait(timeout=120)
    watcher.join()
    out = "".join(lines)
    assert proc.returncode == 0, out
    rows = {r["file"]: r for r in _rows(csv_path)}
    assert sorted(rows) == sorted(p.name for p in folder.iterdir())
    assert rows["a_good.ipynb"]["total"] == rows["g_good_after_all_that.ipynb"]["total"] == "2"
    for name in ("b_loops_in_first_exercise.ipynb", "d_prints_1mb_every_10ms.ipynb"):
        assert (rows[name]["padding_mask"], rows[name]["causal_mask"]) == ("0", "1"), name
        assert "padding_mask: timed out" in rows[name]["notes"], name
    # PID 1 of its own PID namespace ignores its own SIGSTOP; elsewhere it stops and times out
    assert rows["c_stops_itself.ipynb"]["causal_mask"] == "1"
    assert rows["c_stops_itself.ipynb"]["padding_mask"] == "1" or "timed out" in rows["c_stops_itself.ipynb"]["notes"]
    assert "printed" in rows["d_prints_1mb_every_10ms.ipynb"]["notes"]
    # the grader's memory does not follow what the printer prints (about 300 MB)
    before = max(rss for t, rss in samples if t < printer_started[0])
    during = max(rss for t, rss in samples)
    assert during - before < 100 * 2**20, (before, during)
    assert rows["f_kills_everything.ipynb"]["padding_mask"] == "0"
    # the spy ran, and saw neither the teacher's variables nor the grader's command line
    spy_row = rows["e_spies_on_the_teacher.ipynb"]
    assert spy_row["causal_mask"] == "1"
    text = csv_path.read_text() + details.read_text()
    if "as uid 65534, own mount/PID/network namespaces" not in out:
        pytest.skip("verdict processes run as the teacher's user here: they can read its processes (docs/teachers.md)")
    assert "LOOKED-AND-FOUND-NOTHING" in text and "SAW-SECRET" not in text
