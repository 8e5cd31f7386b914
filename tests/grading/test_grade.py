"""`encoder-course grade` on a folder of crafted notebook-03 submissions: cheats, saboteurs, odd files.

One grading run (in this process, with the default isolation) covers every case; each test below
reads its rows. The cheats are the ones issue 13 lists (and more); none may earn a point. The
saboteurs must change nothing outside their own row. Every file gets a row.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import time

import pytest
from grading_helpers import (
    PASS_LINE,
    PROFILE,
    RIGHT,
    SOLUTION,
    SOLUTIONS,
    WRONG,
    add_cell,
    learner,
    load,
    pass_output,
    set_check,
    solved,
    strip_course_metadata,
    write,
)

from encoder_course.grading.grade import grade

pytestmark = pytest.mark.notebooks
DAEMON_MARKER = "encoder-course-test-daemon-7f3a"

FORK_EXEC = (
    "import _posixsubprocess, os\n"
    "r, w = os.pipe()\n"
    "_posixsubprocess.fork_exec([b'/bin/sh', b'-c', {cmd!r}], [b'/bin/sh'], True, (), None, None,"
    " -1, -1, -1, -1, -1, -1, r, w, True, True, -1, None, None, None, -1, None, False)\n"
)


def _cheats(folder):
    """The issue's cheats, and more; each file's name says what it tries."""
    # 1. printing the pass line instead of calling the check
    write(folder, "cheat_prints_pass_line.ipynb", set_check(learner(), "padding_mask", f"print({PASS_LINE!r})"))
    # 2. leaving the stub and printing the line after the check
    write(folder, "cheat_stub_then_prints.ipynb", set_check(
        learner(), "padding_mask", f"checks.check_padding_mask(padding_mask)\nprint({PASS_LINE!r})"))
    # 3. try/except around a wrong answer's check
    write(folder, "cheat_try_except.ipynb", set_check(
        solved(padding_mask=WRONG["padding_mask"]), "padding_mask",
        f"try:\n    checks.check_padding_mask(padding_mask)\nexcept Exception:\n    print({PASS_LINE!r})"))
    # 4a. replacing the checker with a fake, in a cell of its own
    write(folder, "cheat_fake_checker_cell.ipynb", add_cell(
        solved(padding_mask=WRONG["padding_mask"]),
        f"checks.check_padding_mask = lambda f: print({PASS_LINE!r})\nchecks.check_padding_mask(padding_mask)"))
    # 4b. ... and inside the exercise cell, the structured verdict too
    write(folder, "cheat_fake_checker_in_exercise.ipynb", solved(padding_mask=(
        "import encoder_course.checks as c\nfrom encoder_course.checks import _run\n"
        f"c.check_padding_mask = lambda f: print({PASS_LINE!r})\n"
        "c.verdict = _run.verdict = lambda key, f: _run.Verdict(key, 'passed', 'ok')\n" + WRONG["padding_mask"])))
    # 4c. ... or a look-alike `checks` object
    write(folder, "cheat_fake_checks_object.ipynb", solved(padding_mask=(
        "class checks:\n    @staticmethod\n    def check_padding_mask(f):\n"
        f"        print({PASS_LINE!r})\n\n" + WRONG["padding_mask"])))
    # 5. editing the check cell to check the package's own function
    write(folder, "cheat_checks_package_function.ipynb",
          set_check(learner(), "padding_mask", "checks.check_padding_mask(ec.padding_mask)"))
    # 6. answering with the package's own function
    write(folder, "cheat_returns_ec_padding_mask.ipynb", solved(padding_mask=(
        "def padding_mask(token_ids, pad_id):\n    return ec.padding_mask(token_ids, pad_id)\n")))
    # stored "passed" outputs under a stub
    nb = learner()
    set_check(nb, "padding_mask", "checks.check_padding_mask(padding_mask)", pass_output("padding_mask"))
    set_check(nb, "causal_mask", "checks.check_causal_mask(causal_mask)", pass_output("causal_mask"))
    write(folder, "cheat_stored_outputs.ipynb", nb)
    # a comment naming another checker must not add a column to the class
    write(folder, "cheat_bonus_comment.ipynb", add_cell(
        solved(padding_mask=RIGHT["padding_mask"]), "# checks.check_bonus_one(x)\nchecks.check_bonus_one(x)"))
    # patching torch's comparison, the checker's Verdict, or the trace function
    write(folder, "cheat_patches_torch_equal.ipynb", solved(padding_mask=(
        "import torch\ntorch.equal = lambda a, b: True\ntorch.Tensor.__eq__ = lambda a, b: True\n"
        + WRONG["padding_mask"])))
    write(folder, "cheat_patches_verdict_class.ipynb", solved(padding_mask=(
        "from encoder_course.checks._run import Verdict\nVerdict.status = property(lambda self: 'passed')\n"
        + WRONG["padding_mask"])))
    write(folder, "cheat_settrace.ipynb", solved(padding_mask=(
        "import sys\ndef _t(frame, event, arg):\n    return _t\nsys.settrace(_t)\n" + WRONG["padding_mask"])))
    # forging the verdict channel: a line on every open fd, then exit before the real verdict
    write(folder, "cheat_forges_verdict_line.ipynb", solved(padding_mask=(
        "import os, json\nline = json.dumps({'token': 'x', 'status': 'passed', 'message': ''}).encode() + b'\\n'\n"
        "for fd in range(3, 64):\n    try:\n        os.write(fd, line)\n    except OSError:\n        pass\n"
        f"print({PASS_LINE!r})\nos._exit(0)\n")))
    # hunting the token in memory
    write(folder, "cheat_hunts_token.ipynb", solved(padding_mask=(
        "import gc\ntry:\n    gc.get_objects()\nexcept Exception:\n    pass\n"
        "try:\n    open('/proc/self/mem', 'rb')\nexcept Exception:\n    pass\n" + WRONG["padding_mask"])))
    # handing the runner a result of its own, writing junk on the channel, working in a thread (threads
    # are refused only where Python audits their start, 3.13+; a thread earns nothing either way)
    write(folder, "cheat_hands_over_a_result.ipynb", solved(padding_mask=(
        "import sys\nf = sys._getframe()\nwhile f is not None:\n    q = f.f_locals.get('handoff')\n"
        "    if q is not None:\n        q.put(('passed', 'forged', ''))\n    f = f.f_back\n" + WRONG["padding_mask"])))
    write(folder, "cheat_writes_on_the_channel.ipynb", solved(padding_mask=(
        "import os\nfor fd in range(3, 16):\n    try:\n        os.write(fd, b'{\"status\": \"passed\"}\\n')\n"
        "    except OSError:\n        pass\n" + RIGHT["padding_mask"])))
    write(folder, "cheat_starts_a_thread.ipynb", solved(padding_mask=(
        "import threading\ntry:\n    threading.Thread(target=print).start()\nexcept Exception:\n    pass\n"
        + WRONG["padding_mask"])))
    # a Tensor subclass that claims equality
    write(folder, "cheat_tensor_subclass.ipynb", solved(padding_mask=(
        "class Liar(torch.Tensor):\n    def __eq__(self, other):\n        return True\n"
        "    @classmethod\n    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
        "        if func in (torch.equal, torch.allclose):\n            return True\n"
        "        return super().__torch_function__(func, types, args, kwargs or {})\n"
        "def padding_mask(token_ids, pad_id):\n"
        "    return (token_ids == pad_id)[:, None, None, :].as_subclass(Liar)\n")))


def _saboteurs(folder, out_dir, profile):
    victim = folder / "zz_victim.ipynb"
    write(folder, "aa_overwrites_victim.ipynb", solved(padding_mask=(
        f"try:\n    open({str(victim)!r}, 'w').write('broken')\nexcept Exception:\n    pass\n"
        + RIGHT["padding_mask"])))
    startup = "import encoder_course.checks._run as r\nr.verdict = lambda key, f: r.Verdict(key, 'passed', 'ok')\n"
    write(folder, "ab_plants_startup_file.ipynb", solved(padding_mask=(
        "import os\n"
        f"for d in [os.environ.get('IPYTHONDIR', ''), os.path.expanduser('~/.ipython'), {str(profile)!r}]:\n"
        "    try:\n        os.makedirs(d + '/profile_default/startup', exist_ok=True)\n"
        f"        open(d + '/profile_default/startup/00-evil.py', 'w').write({startup!r})\n"
        "    except Exception:\n        pass\n" + RIGHT["padding_mask"])))
    cmd = (f"sleep 1; echo {DAEMON_MARKER} >/dev/null; "
           f"printf 'student,notebook\\nac_daemon,pwned\\n' > {out_dir / 'grades.csv'}").encode()
    write(folder, "ac_leaves_daemon.ipynb", solved(padding_mask=FORK_EXEC.format(cmd=cmd) + RIGHT["padding_mask"]))
    write(folder, "zy_wrong_after_startup_file.ipynb", solved(padding_mask=WRONG["padding_mask"]))
    write(folder, "zz_victim.ipynb", solved(padding_mask=RIGHT["padding_mask"], causal_mask=RIGHT["causal_mask"]))


def _honest(folder):
    write(folder, "good_solution.ipynb", load(SOLUTION))
    write(folder, "good_pasted_cells.ipynb", strip_course_metadata(
        solved(padding_mask=RIGHT["padding_mask"], causal_mask=RIGHT["causal_mask"])))
    write(folder, "partial.ipynb", solved(padding_mask=WRONG["padding_mask"], causal_mask=RIGHT["causal_mask"]))
    write(folder, "earlier_cell_broken.ipynb", solved(
        padding_mask="def padding_mask(token_ids, pad_id)\n    return 1\n", causal_mask=RIGHT["causal_mask"]))
    write(folder, "untouched.ipynb", learner())


def _files(folder, outside):
    write(folder, "UPPER_CASE.IPYNB", solved(causal_mask=RIGHT["causal_mask"]))
    write(folder, "backup.ipynb.bak", solved(causal_mask=RIGHT["causal_mask"]))
    write(folder, "notes.txt", "not a notebook")
    write(folder, "empty.ipynb", "")
    write(folder, "broken.ipynb", '{"cells": [')
    write(folder, "a_list.ipynb", "[1, 2, 3]")
    write(folder, "folder.ipynb/inner.ipynb", solved(causal_mask=RIGHT["causal_mask"]))
    write(folder, "a/03_masks.ipynb", solved(causal_mask=RIGHT["causal_mask"]))
    write(folder, "b/03_masks.ipynb", solved(padding_mask=RIGHT["padding_mask"]))
    write(folder, "no_exercises.ipynb", {"cells": [{"cell_type": "code", "source": "print(1)", "metadata": {},
                                                    "outputs": [], "execution_count": None}]})
    write(folder, "=HYPERLINK(1).ipynb", solved(causal_mask=RIGHT["causal_mask"]))
    write(folder, "new\nline.ipynb", solved(causal_mask=RIGHT["causal_mask"]))
    (folder / "link_to_good.ipynb").symlink_to(folder / "good_solution.ipynb")
    write(outside, "secret.ipynb", load(SOLUTION))
    (folder / "link_out.ipynb").symlink_to(outside / "secret.ipynb")
    (folder / "dangling.ipynb").symlink_to(folder / "gone.ipynb")
    os.mkfifo(folder / "fifo.ipynb")
    write(folder, ".ipynb_checkpoints/good_solution-checkpoint.ipynb", load(SOLUTION))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("grade")
    folder, out_dir, outside = base / "class", base / "out", base / "outside"
    for d in (folder, out_dir, outside):
        d.mkdir()
    profile = base / "teacher_profile"
    shutil.copytree(PROFILE, profile, ignore=shutil.ignore_patterns("*.sqlite*", "pid", "log", "db", "security"))
    _cheats(folder)
    _saboteurs(folder, out_dir, profile)
    _honest(folder)
    _files(folder, outside)
    victim_bytes = (folder / "zz_victim.ipynb").read_bytes()
    csv_path, details = out_dir / "grades.csv", out_dir / "details.json"
    log = io.StringIO()
    old = os.environ.get("IPYTHONDIR")
    os.environ["IPYTHONDIR"] = str(profile)
    start = time.monotonic()
    try:
        results, code = grade([folder], csv_path=csv_path, details_path=details, timeout=15, solutions_dir=SOLUTIONS,
                              out=log)
    finally:
        if old is None:
            os.environ.pop("IPYTHONDIR", None)
        else:
            os.environ["IPYTHONDIR"] = old
    seconds = time.monotonic() - start
    time.sleep(1.5)  # the daemon would have rewritten the CSV by now
    rows = list(csv.DictReader(csv_path.open(encoding="utf-8", newline="")))
    return {
        "results": {r.file: r for r in results}, "code": code, "log": log.getvalue(), "rows": rows,
        "csv_text": csv_path.read_text(encoding="utf-8"), "details": json.loads(details.read_text()),
        "folder": folder, "victim_bytes": victim_bytes, "profile": profile, "seconds": seconds,
    }


def _status(graded, name):
    r = graded["results"][name]
    return r.checks.get("padding_mask"), r.messages.get("padding_mask", "")


# --------------------------------------------------------------------------------- honest work


def test_the_run_finishes_and_every_file_has_a_row(graded):
    assert graded["code"] == 0
    names = set(graded["results"])
    for name in ("good_solution.ipynb", "UPPER_CASE.IPYNB", "backup.ipynb.bak", "notes.txt", "empty.ipynb",
                 "broken.ipynb", "a_list.ipynb", "folder.ipynb", "folder.ipynb/inner.ipynb", "a/03_masks.ipynb",
                 "b/03_masks.ipynb", "link_to_good.ipynb", "link_out.ipynb", "dangling.ipynb", "fifo.ipynb",
                 "no_exercises.ipynb", "=HYPERLINK(1).ipynb", "new\\nline.ipynb"):
        assert name in names, name
    assert len(graded["rows"]) == len(graded["results"])
    assert not any("checkpoint" in n for n in names)


def test_honest_submissions_earn_what_they_deserve(graded):
    r = graded["results"]
    assert r["good_solution.ipynb"].checks == {"padding_mask": "passed", "causal_mask": "passed"}
    assert r["good_solution.ipynb"].total == 2 == r["good_solution.ipynb"].max_points
    assert r["good_pasted_cells.ipynb"].total == 2  # found by the names it defines, without metadata
    assert r["partial.ipynb"].checks == {"padding_mask": "failed", "causal_mask": "passed"}
    assert "inverted" in r["partial.ipynb"].messages["padding_mask"]
    assert r["earlier_cell_broken.ipynb"].checks == {"padding_mask": "error", "causal_mask": "passed"}
    assert "SyntaxError" in r["earlier_cell_broken.ipynb"].messages["padding_mask"]
    assert r["untouched.ipynb"].checks == {"padding_mask": "not attempted", "causal_mask": "not attempted"}


# --------------------------------------------------------------------------------- cheats


@pytest.mark.parametrize("name, expected", [
    ("cheat_prints_pass_line.ipynb", "not attempted"),
    ("cheat_stub_then_prints.ipynb", "not attempted"),
    ("cheat_try_except.ipynb", "failed"),
    ("cheat_fake_checker_cell.ipynb", "failed"),
    ("cheat_fake_checker_in_exercise.ipynb", "failed"),
    ("cheat_fake_checks_object.ipynb", "failed"),
    ("cheat_checks_package_function.ipynb", "not attempted"),
    ("cheat_returns_ec_padding_mask.ipynb", "failed"),
    ("cheat_stored_outputs.ipynb", "not attempted"),
    ("cheat_patches_torch_equal.ipynb", "failed"),
    ("cheat_patches_verdict_class.ipynb", "failed"),
    ("cheat_settrace.ipynb", "failed"),
    ("cheat_forges_verdict_line.ipynb", "failed"),
    ("cheat_hunts_token.ipynb", "failed"),
    ("cheat_hands_over_a_result.ipynb", "failed"),
    ("cheat_writes_on_the_channel.ipynb", "failed"),
    ("cheat_starts_a_thread.ipynb", "failed"),
    ("cheat_tensor_subclass.ipynb", "failed"),
])
def test_cheats_earn_nothing(graded, name, expected):
    status, message = _status(graded, name)
    assert status == expected, message
    assert graded["results"][name].points["padding_mask"] == 0


def test_cheats_are_judged_on_their_answer_or_named(graded):
    """Whatever the learner's process changes in itself, the checker in its own process judges the answer."""
    for name in ("cheat_fake_checker_in_exercise.ipynb", "cheat_patches_torch_equal.ipynb",
                 "cheat_patches_verdict_class.ipynb", "cheat_settrace.ipynb", "cheat_hunts_token.ipynb",
                 "cheat_hands_over_a_result.ipynb", "cheat_starts_a_thread.ipynb", "cheat_tensor_subclass.ipynb"):
        status, message = _status(graded, name)
        # (patching torch.Tensor.__eq__ breaks the learner's own `!=`: it fails on its own error)
        assert "inverted" in message or "subclass of torch.Tensor" in message or "raised" in message, (name, message)
    assert "course's own" in _status(graded, "cheat_returns_ec_padding_mask.ipynb")[1]
    for name in ("cheat_writes_on_the_channel.ipynb", "cheat_forges_verdict_line.ipynb"):
        assert "checker's channel" in _status(graded, name)[1]


def test_a_comment_naming_a_checker_adds_no_column(graded):
    header = graded["csv_text"].splitlines()[0].split(",")
    assert header == ["student", "notebook", "padding_mask", "causal_mask", "total", "max", "status", "file", "notes"]
    assert all(row["max"] in ("2", "") for row in graded["rows"])
    assert graded["results"]["cheat_bonus_comment.ipynb"].checks["padding_mask"] == "passed"


# --------------------------------------------------------------------------------- saboteurs


def test_overwriting_another_submission_changes_nothing(graded):
    victim = graded["results"]["zz_victim.ipynb"]
    assert victim.checks == {"padding_mask": "passed", "causal_mask": "passed"}
    if graded["results"]["aa_overwrites_victim.ipynb"].checks:  # it could not even write the file
        assert (graded["folder"] / "zz_victim.ipynb").read_bytes() == graded["victim_bytes"]


def test_a_planted_ipython_startup_file_changes_no_later_verdict(graded):
    assert graded["results"]["zy_wrong_after_startup_file.ipynb"].checks["padding_mask"] == "failed"
    if "as uid 65534" in graded["log"]:  # run as another user, it could not even write the file
        assert not (graded["profile"] / "profile_default" / "startup" / "00-evil.py").exists()


def test_a_detached_process_cannot_rewrite_the_csv(graded):
    import psutil

    row = next(r for r in graded["rows"] if r["file"] == "ac_leaves_daemon.ipynb")
    assert row["notebook"] == "03_masks" and "pwned" not in graded["csv_text"]
    assert not [p for p in psutil.process_iter(["cmdline"]) if DAEMON_MARKER in " ".join(p.info["cmdline"] or [])]


# --------------------------------------------------------------------------------- files


def test_file_rows(graded):
    r = graded["results"]
    assert r["UPPER_CASE.IPYNB"].checks["causal_mask"] == "passed"
    assert r["backup.ipynb.bak"].checks["causal_mask"] == "passed"
    assert any("does not end in .ipynb" in n for n in r["backup.ipynb.bak"].notes)
    assert r["notes.txt"].status == "not a notebook"
    assert r["empty.ipynb"].status == "empty file"
    assert r["broken.ipynb"].status == "broken JSON"
    assert r["a_list.ipynb"].status == "not a notebook"
    assert r["folder.ipynb"].status == "a folder, not a notebook"
    assert r["folder.ipynb/inner.ipynb"].checks["causal_mask"] == "passed"
    assert (r["a/03_masks.ipynb"].student, r["b/03_masks.ipynb"].student) == ("a", "b")
    assert r["a/03_masks.ipynb"].checks != r["b/03_masks.ipynb"].checks
    assert r["no_exercises.ipynb"].status == "no course notebook matches"
    assert r["fifo.ipynb"].status == "not a regular file"


def test_symlinks_are_reported_not_merged_and_not_followed_out(graded):
    r = graded["results"]
    assert r["link_to_good.ipynb"].status == "symlink (not graded)"
    assert any("good_solution.ipynb" in n for n in r["link_to_good.ipynb"].notes)
    assert r["good_solution.ipynb"].total == 2 and r["link_to_good.ipynb"].total == 0
    assert r["link_out.ipynb"].status == "symlink out of the folder (not followed)"
    assert not r["link_out.ipynb"].checks
    assert r["dangling.ipynb"].status == "broken symlink"


def test_names_cannot_become_formulas_or_break_lines(graded):
    lines = graded["csv_text"].splitlines()
    assert any(line.startswith("'=HYPERLINK(1),") for line in lines)
    assert not any(line.startswith(("=", "+", "-", "@")) for line in lines)
    assert len(lines) == len(graded["rows"]) + 1  # no row spread over two lines
    table = graded["log"]
    assert "new\\nline.ipynb" in table and "new\nline" not in table


def test_summary_for_the_teacher(graded):
    log = graded["log"]
    assert "Summary by exercise:" in log
    assert "padding_mask:" in log and "passed" in log and "not attempted" in log
    assert "x Your padding_mask is inverted" in log  # the commonest failure, counted
    details = {d["file"]: d for d in graded["details"]}
    assert details["partial.ipynb"]["checks"]["padding_mask"] == "failed"
