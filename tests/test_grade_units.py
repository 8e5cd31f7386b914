"""The grader's parts that need no verdict process: safe text, file discovery, matching, plans, channels."""

from __future__ import annotations

import io
import json
import os
import stat

import pytest
from grading_helpers import MASTERS, RIGHT, learner, solved, strip_course_metadata, write

from encoder_course.course import grade as G
from encoder_course.course import masters as M
from encoder_course.course import runner, sandbox
from encoder_course.course.cli import main


@pytest.mark.parametrize("raw, shown", [
    ("=SUM(A1)", "'=SUM(A1)"), ("+1", "'+1"), ("-2", "'-2"), ("@cmd", "'@cmd"), ("\tx", "\\tx"),
    ("\rx", "\\rx"), ("plain", "plain"), ("two\nlines", "two\\nlines"), ("esc\x1b[31m", "esc\\x1b[31m"),
])
def test_csv_cells_cannot_become_formulas_or_break_rows(raw, shown):
    assert G.cell(raw) == shown


def test_rows_are_written_whole_and_read_back(tmp_path):
    path = tmp_path / "g.csv"
    row = G.safe_row({"student": "=evil", "notebook": "03_masks", "padding_mask": "1", "total": "1", "max": "2",
                      "status": "graded", "file": "=evil.ipynb", "notes": "a\nb"}, ["padding_mask"])
    G.write_csv(path, [row], ["padding_mask"])
    back = G.read_csv(path)
    assert back[0]["student"] == "'=evil" and back[0]["notes"] == "a\\nb" and back[0]["padding_mask"] == "1"
    G.write_csv(path, back, ["padding_mask"])  # rewriting kept rows does not quote them twice
    assert G.read_csv(path)[0]["file"] == "'=evil.ipynb"
    assert not list(tmp_path.glob(".*tmp"))


def test_discovery_reports_what_it_cannot_read(tmp_path, monkeypatch):
    write(tmp_path, "locked.ipynb", json.dumps(learner()))
    write(tmp_path, "fine.ipynb", json.dumps(learner()))
    real = G.read_bytes

    def refuse(path):
        if path.name == "locked.ipynb":
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(G, "read_bytes", refuse)
    entries, _ = G.discover([tmp_path])
    by_name = {e.rel: e for e in entries}
    assert by_name["locked.ipynb"].status == "unreadable" and "Permission denied" in by_name["locked.ipynb"].notes
    assert by_name["fine.ipynb"].nb is not None


def test_discovery_skips_the_grader_outputs_and_checkpoints(tmp_path):
    write(tmp_path, "a.ipynb", json.dumps(learner()))
    write(tmp_path, "grades.csv", "student\n")
    write(tmp_path, ".ipynb_checkpoints/a-checkpoint.ipynb", json.dumps(learner()))
    entries, roots = G.discover([tmp_path], exclude=[tmp_path / "grades.csv"])
    assert [e.rel for e in entries] == ["a.ipynb"] and roots == [os.path.realpath(tmp_path)]


def test_students_are_named_from_the_path(tmp_path):
    write(tmp_path, "alice/03_masks.ipynb", json.dumps(learner()))
    write(tmp_path, "bob.ipynb", json.dumps(learner()))
    entries, _ = G.discover([tmp_path])
    assert {e.rel: e.student for e in entries} == {"alice/03_masks.ipynb": "alice", "bob.ipynb": "bob"}


def test_a_submission_is_matched_by_metadata_then_name_then_definitions():
    masters = M.load_masters(MASTERS)
    by_name = {m.name: m for m in masters}
    assert M.match(masters, M.code_cells(learner()), "anything.ipynb")[0] is by_name["03_masks"]
    bare = strip_course_metadata(solved(padding_mask=RIGHT["padding_mask"]))
    assert M.match(masters, M.code_cells(bare), "03_whatever.ipynb")[0] is by_name["03_masks"]
    assert M.match(masters, M.code_cells(bare), "homework.ipynb")[0] is by_name["03_masks"]
    cells = M.code_cells(bare)
    found = M.exercise_cell(by_name["03_masks"], by_name["03_masks"].exercises[0], cells)
    assert "token_ids != pad_id" in found.source


def test_points_and_exercises_come_from_the_master_only():
    m = {x.name: x for x in M.load_masters(MASTERS)}["03_masks"]
    assert [(e.key, e.name, e.points) for e in m.exercises] == [("padding_mask", "padding_mask", 1.0),
                                                                ("causal_mask", "causal_mask", 1.0)]
    assert len(m.setup) == 1 and "from encoder_course import checks" in m.setup[0]


def test_a_verdict_needs_the_token():
    good = json.dumps({"token": "abc", "status": "passed", "message": "", "notes": ""}).encode()
    bad = json.dumps({"token": "abd", "status": "passed", "message": "", "notes": ""}).encode()
    assert runner._parse_verdicts(bad + b"\n", "abc") == (None, 1)
    found, invalid = runner._parse_verdicts(b"garbage\n" + good + b"\n", "abc")
    assert found["status"] == "passed" and invalid == 1
    assert runner._parse_verdicts(good, "abc") == (None, 0)  # not a whole line yet


def test_the_plan_without_root_says_what_it_cannot_protect(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    plan = sandbox.make_plan(namespaces_available=True)
    assert plan.uid is None and not plan.namespaces and "your user" in plan.warnings[0]


def test_folders_others_cannot_enter_are_covered_and_the_needed_ones_shown():
    import shutil
    import tempfile
    from pathlib import Path

    base = Path(tempfile.mkdtemp())  # /tmp/xyz, 0700 like pytest's own folders: covered itself
    private = base / "home"
    (private / "python" / "lib").mkdir(parents=True)
    os.chmod(base, 0o755)
    os.chmod(private, 0o700)
    os.chmod(private / "python", 0o755)
    cover, problems = sandbox.plan_exposure([str(private / "python")])
    assert cover == [[str(private), [str(private / "python")]]] and not problems
    os.chmod(private / "python", 0o700)
    assert sandbox.plan_exposure([str(private / "python")])[1]
    shutil.rmtree(base)


def test_the_clean_environment_has_nothing_of_the_teachers(monkeypatch):
    monkeypatch.setenv("TEACHER_SECRET", "x")
    env = sandbox.clean_environment("/tmp/job")
    assert "TEACHER_SECRET" not in env and env["HOME"] == "/tmp/job"
    assert env["OMP_NUM_THREADS"] == "1" and env["HF_HUB_OFFLINE"] == "1" and env["MPLBACKEND"] == "Agg"
    assert env["ENCODER_COURSE_WORKSPACE"].startswith("/tmp/job/") and env["IPYTHONDIR"].startswith("/tmp/job/")


def test_the_container_command_isolates(tmp_path):
    cmd = sandbox.container_command("docker", "img", "n1", sandbox.Plan(memory_mb=1024))
    text = " ".join(cmd)
    for part in ("--network none", "--user 65534:65534", "--read-only", "--memory 1024m", "--cap-drop ALL",
                 "--pids-limit", "img python -s -m encoder_course.course.verdict stdio"):
        assert part in text
    assert sandbox.DOCKERFILE.is_file() and "encoder_course.course.verdict" in sandbox.DOCKERFILE.read_text()
    build = sandbox.build_image_command("docker")
    assert build[:2] == ["docker", "build"] and build[-1] == str(sandbox.course_root())


def test_container_isolation_without_an_engine_fails_clearly(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sandbox, "container_engine", lambda: (None, "docker info failed: no daemon"))
    write(tmp_path, "a.ipynb", json.dumps(learner()))
    out = io.StringIO()
    results, code = G.grade([tmp_path], csv_path=None, isolate="container", master_dir=MASTERS, out=out)
    assert code == 2 and "needs Docker or Podman" in out.getvalue() and "--isolate process" in out.getvalue()
    assert main(["grade", str(tmp_path), "--isolate", "container", "--build-image", "--csv", ""]) == 2
    assert "needs Docker or Podman" in capsys.readouterr().err


def test_files_that_need_no_verdict_process(tmp_path, capsys):
    (tmp_path / "a.ipynb").write_text("not json", encoding="utf-8")
    (tmp_path / "b.ipynb").write_text("  \n", encoding="utf-8")
    assert main(["grade", str(tmp_path), "--csv", str(tmp_path / "g.csv"), "--master", str(MASTERS)]) == 0
    out = capsys.readouterr().out
    assert "broken JSON" in out and "empty file" in out and (tmp_path / "g.csv").exists()
    assert main(["grade", str(tmp_path / "gone.ipynb"), "--csv", ""]) == 0
    assert "not found" in capsys.readouterr().out
    (tmp_path / "empty").mkdir()
    assert main(["grade", str(tmp_path / "empty"), "--csv", ""]) == 2
    assert main(["grade", str(tmp_path), "--csv", str(tmp_path / "no" / "g.csv")]) == 2


def test_a_fifo_does_not_block_discovery(tmp_path):
    os.mkfifo(tmp_path / "pipe.ipynb")
    entries, _ = G.discover([tmp_path])
    assert entries[0].status == "not a regular file"
    assert stat.S_ISFIFO(os.lstat(tmp_path / "pipe.ipynb").st_mode)
