"""`encoder-course grade` in this process: weaker isolation, every solution, matching by file name."""

from __future__ import annotations

import io
import os
import sys
import tempfile
import time
from pathlib import Path

import pytest
from grading_helpers import RIGHT, SOLUTION, SOLUTIONS, learner, load, solved, write

from encoder_course.grading.grade import grade

pytestmark = pytest.mark.notebooks


def test_weak_isolation_still_keeps_the_saboteurs_out_of_other_rows(tmp_path):
    """Without namespaces and without a user to drop to, the grader's own defences still hold."""
    folder, out = tmp_path / "class", tmp_path / "out"
    out.mkdir()
    victim = folder / "z_victim.ipynb"
    cmd = f"sleep 1; echo daemon-was-here > {out / 'grades.csv'}".encode()
    write(folder, "a_overwrites_and_leaves_a_daemon.ipynb", solved(padding_mask=(
        f"open({str(victim)!r}, 'w').write('broken')\n"
        "import _posixsubprocess, os\nr, w = os.pipe()\n"
        f"_posixsubprocess.fork_exec([b'/bin/sh', b'-c', {cmd!r}], [b'/bin/sh'], True, (), None, None,"
        " -1, -1, -1, -1, -1, -1, r, w, True, True, -1, None, None, None, -1, None, False)\n"
        + RIGHT["padding_mask"])))
    write(folder, "b_stops_itself.ipynb", solved(
        padding_mask="import signal\nsignal.raise_signal(signal.SIGSTOP)\n" + RIGHT["padding_mask"],
        causal_mask=RIGHT["causal_mask"]))
    write(folder, "z_victim.ipynb", solved(padding_mask=RIGHT["padding_mask"], causal_mask=RIGHT["causal_mask"]))
    log = io.StringIO()
    start = time.monotonic()
    results, code = grade([folder], csv_path=out / "grades.csv", timeout=3, solutions_dir=SOLUTIONS, out=log,
                          isolate="none")
    assert code == 0, log.getvalue()
    by_file = {r.file: r for r in results}
    assert victim.read_text() == "broken"  # it could write the file ...
    assert by_file["z_victim.ipynb"].total == 2  # ... but the grader had read it before
    assert any("changed after the grader read it" in n for n in by_file["z_victim.ipynb"].notes)
    # a stopped verdict process holds the run up for its time limit only: it timed out (a stopped process
    # would otherwise wait forever), and the run ended; the bound on the clock only catches a hang (the run
    # took 37 s on this 2-core machine with four other jobs running)
    assert by_file["b_stops_itself.ipynb"].checks == {"padding_mask": "timed out", "causal_mask": "passed"}
    assert time.monotonic() - start < 300
    time.sleep(1.5)
    assert "daemon-was-here" not in (out / "grades.csv").read_text()  # killed after its verdict


def test_every_solution_solution_passes_and_every_learner_stub_is_not_attempted(tmp_path):
    """No false alarm: the solutions' own answers pass every check under the tamper detection."""
    folder = tmp_path / "class"
    for path in sorted(SOLUTIONS.glob("0[1-7]_*.ipynb")):
        write(folder, "solution_" + path.name, load(path))
        write(folder, "learner_" + path.name, load(path.parent.parent / path.name))
    log = io.StringIO()
    results, code = grade([folder], csv_path=tmp_path / "g.csv", timeout=60, solutions_dir=SOLUTIONS, out=log)
    assert code == 0
    for r in results:
        expected = "passed" if r.file.startswith("solution_") else "not attempted"
        assert r.checks and set(r.checks.values()) == {expected}, (r.file, r.checks, r.messages)


def test_an_untouched_learner_notebook_is_found_by_its_file_name_alone(tmp_path):
    folder = tmp_path / "class"
    nb = learner()
    for c in nb["cells"]:
        c["metadata"], c["id"] = {}, os.urandom(4).hex()
    write(folder, "03_masks.ipynb", nb)
    results, _ = grade([folder], csv_path=None, timeout=30, solutions_dir=SOLUTIONS, out=io.StringIO())
    assert results[0].notebook == "03_masks"
    assert results[0].checks == {"padding_mask": "not attempted", "causal_mask": "not attempted"}


FAKE_ENGINE = """#!{python}
# A stand-in for `docker`: `info` answers, `run ... IMAGE CMD...` runs CMD here, `kill` does nothing.
import os, sys, tempfile
args = sys.argv[1:]
if args[:1] != ["run"]:
    sys.exit(0)
env, i = {{"PATH": os.environ["PATH"]}}, 1
while args[i] != "{image}":
    if args[i] == "-e":
        key, _, value = args[i + 1].partition("=")
        env[key] = value
    i += 2 if args[i] not in ("--rm", "-i", "--read-only") else 1
env["PYTHONPATH"] = {root!r}
os.chdir(tempfile.mkdtemp())
os.execve({python!r}, [{python!r}] + args[i + 2:], env)
"""


def test_the_container_protocol_with_a_stand_in_engine(tmp_path, monkeypatch):
    """`--isolate container` end to end, with a fake engine that runs the verdict process here."""
    from encoder_course.grading import sandbox

    engine = tmp_path / "docker"
    engine.write_text(FAKE_ENGINE.format(python=sys.executable, image="img", root=str(sandbox.course_root())))
    engine.chmod(0o755)
    monkeypatch.setattr(sandbox, "container_engine", lambda: (str(engine), ""))
    folder = tmp_path / "class"
    write(folder, "right.ipynb", load(SOLUTIONS / "01_tokens_and_positions.ipynb"))
    write(folder, "stub.ipynb", load(SOLUTIONS.parent / "01_tokens_and_positions.ipynb"))
    results, code = grade([folder], csv_path=None, timeout=60, solutions_dir=SOLUTIONS, out=io.StringIO(),
                          isolate="container", image="img")
    assert code == 0
    assert {r.file: r.checks["sinusoidal_positions"] for r in results} == {"right.ipynb": "passed",
                                                                            "stub.ipynb": "not attempted"}


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="the protected mode needs root")
def test_files_named_one_by_one_cannot_read_each_other(tmp_path):
    """`grade class/a.ipynb class/b.ipynb` (a shell glob): the folder of the files is hidden as a graded
    folder would be, so one submission cannot read a classmate's answer; both are graded, in parallel."""
    folder = tmp_path / "class"
    write(folder, "b_classmate.ipynb", solved(padding_mask=RIGHT["padding_mask"] + "# CLASSMATE-ANSWER-b\n",
                                              causal_mask=RIGHT["causal_mask"]))
    spy = (f"try:\n    seen = open({str(folder / 'b_classmate.ipynb')!r}).read()\n"
           "except Exception as exc:\n    seen = type(exc).__name__\n"
           "raise ValueError('SAW-CLASSMATE' if 'CLASSMATE-ANSWER-b' in seen else 'SAW-NOTHING')\n")
    write(folder, "a_copies.ipynb", solved(padding_mask=spy, causal_mask=RIGHT["causal_mask"]))
    log = io.StringIO()
    results, code = grade([folder / "a_copies.ipynb", folder / "b_classmate.ipynb"], csv_path=tmp_path / "g.csv",
                          timeout=30, solutions_dir=SOLUTIONS, out=log, jobs=2)
    assert code == 0, log.getvalue()
    by_file = {r.file: r for r in results}
    assert "SAW-NOTHING" in by_file["a_copies.ipynb"].messages["padding_mask"], by_file["a_copies.ipynb"].messages
    assert by_file["b_classmate.ipynb"].total == 2


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="the protected mode needs root")
def test_an_environment_under_tmp_stays_importable_in_the_private_tmp(tmp_path):
    """CI runners and scratch machines keep the Python environment under /tmp, and each verdict process
    gets an empty /tmp of its own: the needed folders are bound back, so a module first imported while
    the answer is checked still loads (it used to fail, and the message blamed the student)."""
    import subprocess
    import sysconfig

    from grading_helpers import ROOT

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = subprocess.run([str(venv / "bin" / "python"), "-c", where], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert site.startswith("/tmp/") and sysconfig.get_paths()["purelib"] != site, site
    # The new environment sees this one's packages, whether this one is the system's Python or a virtual
    # environment (whose packages --system-site-packages would not reach): its .pth files are read too.
    outer = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    (Path(site) / "outer.pth").write_text("".join(f"import site; site.addsitedir({d!r})\n" for d in outer))
    (Path(site) / "late_module.py").write_text("LATE = True\n")  # imported by nothing before the check
    answer = ("def padding_mask(token_ids, pad_id):\n    import late_module  # first imported here\n"
              "    return (token_ids != pad_id)[:, None, None, :]\n")
    write(tmp_path / "class", "a.ipynb", solved(padding_mask=answer, causal_mask=RIGHT["causal_mask"]))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run([str(venv / "bin" / "python"), "-m", "encoder_course.cli", "grade",
                             str(tmp_path / "class"), "--csv", str(tmp_path / "g.csv"), "--solutions", str(SOLUTIONS)],
                            cwd="/usr", env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "as uid 65534, own mount/PID/network namespaces" in result.stdout, result.stdout
    assert "a.ipynb ... graded 2/2" in result.stdout, result.stdout
    assert "lies under a temporary folder" in result.stdout  # the teacher is told


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="the protected mode needs root")
def test_the_job_folder_is_a_small_tmpfs_not_the_hosts_disk(tmp_path):
    """A submission that fills its working folder stops at the job tmpfs's size, in memory, never on disk."""
    answer = ("def padding_mask(token_ids, pad_id):\n    import os\n    n = 0\n    try:\n"
              "        for i in range(200):\n            with open(f'big{i}', 'wb') as f:\n"
              "                f.write(b'x' * 2**20)\n            n += 1\n    except OSError:\n        pass\n"
              "    raise ValueError(f'WROTE {n} MB IN ' + os.getcwd())\n")
    write(tmp_path / "class", "a.ipynb", solved(padding_mask=answer, causal_mask=RIGHT["causal_mask"]))
    log = io.StringIO()
    results, code = grade([tmp_path / "class"], csv_path=tmp_path / "g.csv", timeout=60, solutions_dir=SOLUTIONS,
                          out=log)
    assert code == 0, log.getvalue()
    message = results[0].messages["padding_mask"]
    written = int(message.split("WROTE ")[1].split(" MB")[0])
    assert written <= 64 and "IN /tmp/job" in message, message  # the private /tmp holds 64 MB
    assert results[0].checks["causal_mask"] == "passed"


def test_a_gradebook_written_in_tmp_itself_hides_nothing_the_grader_needs(tmp_path):
    """The CSV's folder is hidden from the learner's process; when it is /tmp, which also holds the
    grader's job folders (and maybe the Python environment), grading still works."""
    folder = tmp_path / "class"
    write(folder, "good.ipynb", load(SOLUTION))
    csv_path = Path(tempfile.gettempdir()) / f"encoder-course-test-{os.getpid()}.csv"
    try:
        results, code = grade([folder], csv_path=csv_path, timeout=60, solutions_dir=SOLUTIONS, out=io.StringIO())
    finally:
        csv_path.unlink(missing_ok=True)
    assert code == 0 and results[0].checks == {"padding_mask": "passed", "causal_mask": "passed"}, results[0].messages


def test_the_memory_limit_holds_for_a_jobs_processes_together(tmp_path):
    """Three children of 1.5 GB each, every one under the 4,096 MB limit of a process, 4.5 GB together: the
    right answer they wait beside earns nothing."""
    hog = ("import os, time\nready = []\nfor _ in range(3):\n    r, w = os.pipe()\n    if os.fork() == 0:\n"
           "        block = bytearray(1536 << 20)\n        block[::4096] = b'x' * len(block[::4096])\n"
           "        os.write(w, b'.')\n        time.sleep(600)\n        os._exit(0)\n    ready.append(r)\n"
           "for r in ready:\n    os.read(r, 1)\n")
    write(tmp_path / "class", "hog.ipynb", solved(padding_mask=hog + RIGHT["padding_mask"],
                                                  causal_mask=RIGHT["causal_mask"]))
    log = io.StringIO()
    results, code = grade([tmp_path / "class"], csv_path=tmp_path / "g.csv", timeout=60, solutions_dir=SOLUTIONS,
                          out=log, isolate="none", memory_mb=4096)
    assert code == 0, log.getvalue()
    (result,) = results
    # (the cell runs again before the later exercise's check, as every earlier exercise cell does)
    assert result.checks == {"padding_mask": "failed", "causal_mask": "failed"}, (result.checks, result.messages)
    assert all("more than 4096 MB of memory together" in m for m in result.messages.values()), result.messages


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="the protected mode needs root")
def test_a_job_sees_nothing_of_the_machine_but_python_and_the_course_package(tmp_path):
    """Round 6: a submission read the checkout's history, the folders beside it and the gradebook kept in the
    checkout (README's layout) into its feedback, and left 5 MB in a world-writable host folder that a later
    job read. Now the job's view of the host is the system, Python and the course package only."""
    from grading_helpers import ROOT

    secret = "TEACHERS-EYES-ONLY"
    beside = Path(tempfile.mkdtemp(prefix=".grade-beside-", dir=ROOT.parent))
    gradebook = ROOT / f".grades-{beside.name}.csv"
    try:
        (beside / "notes.txt").write_text(secret)
        gradebook.write_text(f"student,notebook\nclassmate,{secret}\n")
        targets = [str(ROOT / ".git" / "HEAD"), str(ROOT / "README.md"), str(beside / "notes.txt"), str(gradebook)]
        spy = ("import os\nseen = []\n"
               f"for path in {targets!r}:\n"
               "    try:\n        seen.append(open(path).read()[:200])\n    except OSError as exc:\n"
               "        seen.append(type(exc).__name__)\n"
               "for folder in ('/run/lock', '/var/tmp', '/dev/shm', '/var/lock', '/run'):\n"
               "    try:\n        open(os.path.join(folder, 'left-behind'), 'wb').write(b'x' * (1 << 20))\n"
               "        seen.append('wrote ' + folder)\n    except OSError:\n        pass\n"
               "raise ValueError('SEEN ' + repr(seen))\n")
        write(tmp_path / "class", "spy.ipynb", solved(padding_mask=spy, causal_mask=RIGHT["causal_mask"]))
        log = io.StringIO()
        results, code = grade([tmp_path / "class"], csv_path=tmp_path / "g.csv", timeout=60, solutions_dir=SOLUTIONS,
                              out=log)
        assert code == 0 and "as uid 65534" in log.getvalue(), log.getvalue()
        message = results[0].messages["padding_mask"]
        assert "SEEN" in message, message
        assert secret not in message and "ref:" not in message and "Build the Transformer" not in message, message
        for folder in ("/run/lock", "/var/tmp", "/dev/shm", "/run"):
            assert not os.path.exists(os.path.join(folder, "left-behind")), folder
    finally:
        import shutil

        shutil.rmtree(beside, ignore_errors=True)
        gradebook.unlink(missing_ok=True)
