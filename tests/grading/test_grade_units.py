"""The grader's parts that need no verdict process: safe text, file discovery, matching, plans, channels."""

from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path

import pytest
from grading_helpers import RIGHT, SOLUTIONS, learner, solved, strip_course_metadata, write

from encoder_course.cli import main
from encoder_course.grading import checker_process, sandbox
from encoder_course.grading import grade as G
from encoder_course.grading import solutions as S


@pytest.mark.parametrize("raw, shown", [
    ("=SUM(A1)", "'=SUM(A1)"), ("+1", "'+1"), ("-2", "'-2"), ("@cmd", "'@cmd"), ("\tx", "\\tx"),
    ("\rx", "\\rx"), ("plain", "plain"), ("two\nlines", "two\\nlines"), ("esc\x1b[31m", "esc\\x1b[31m"),
])
def test_csv_cells_cannot_become_formulas_or_break_rows(raw, shown):
    assert G.cell(raw) == shown


def test_rows_are_written_whole_and_read_back(tmp_path):
    path = tmp_path / "g.csv"
    r = G.Submission(Path("=evil.ipynb"), "=evil.ipynb", "=evil", notes=["a\nb"], points={"padding_mask": 1})
    row = G.row_of(r, ["padding_mask"])
    G.write_csv(path, [row], ["padding_mask"])
    back = G.read_csv(path)
    assert back[0]["student"] == "'=evil" and back[0]["notes"] == "a\\nb" and back[0]["padding_mask"] == "1"
    G.write_csv(path, back, ["padding_mask"])  # rewriting kept rows does not quote them twice
    assert G.read_csv(path)[0]["file"] == "'=evil.ipynb"
    assert not list(tmp_path.glob(".*tmp"))


def test_discovery_reports_what_it_cannot_read(tmp_path, monkeypatch):
    write(tmp_path, "locked.ipynb", json.dumps(learner()))
    write(tmp_path, "fine.ipynb", json.dumps(learner()))
    real = os.open

    def refuse(path, *args):
        if Path(path).name == "locked.ipynb":
            raise PermissionError(13, "Permission denied")
        return real(path, *args)

    monkeypatch.setattr(os, "open", refuse)
    entries, _ = G.discover([tmp_path])
    by_name = {e.file: e for e in entries}
    assert by_name["locked.ipynb"].status == "unreadable" and "Permission denied" in by_name["locked.ipynb"].notes
    assert by_name["fine.ipynb"].nb is not None


def test_discovery_skips_the_grader_outputs_and_checkpoints(tmp_path):
    write(tmp_path, "a.ipynb", json.dumps(learner()))
    write(tmp_path, "grades.csv", "student\n")
    write(tmp_path, ".ipynb_checkpoints/a-checkpoint.ipynb", json.dumps(learner()))
    entries, roots = G.discover([tmp_path], exclude=[tmp_path / "grades.csv"])
    assert [e.file for e in entries] == ["a.ipynb"] and roots == [os.path.realpath(tmp_path)]


def test_students_are_named_from_the_path(tmp_path):
    write(tmp_path, "alice/03_masks.ipynb", json.dumps(learner()))
    write(tmp_path, "bob.ipynb", json.dumps(learner()))
    entries, _ = G.discover([tmp_path])
    assert {e.file: e.student for e in entries} == {"alice/03_masks.ipynb": "alice", "bob.ipynb": "bob"}


def test_a_submission_is_matched_by_metadata_then_name_then_definitions():
    solutions = S.load_solutions(SOLUTIONS)
    by_name = {m.name: m for m in solutions}
    assert S.match(solutions, S.code_cells(learner()), "anything.ipynb")[0] is by_name["03_masks"]
    bare = strip_course_metadata(solved(padding_mask=RIGHT["padding_mask"]))
    assert S.match(solutions, S.code_cells(bare), "03_whatever.ipynb")[0] is by_name["03_masks"]
    assert S.match(solutions, S.code_cells(bare), "homework.ipynb")[0] is by_name["03_masks"]
    cells = S.code_cells(bare)
    found = S.exercise_cell(by_name["03_masks"], by_name["03_masks"].exercises[0], cells)
    assert "token_ids != pad_id" in found.source


def test_points_and_exercises_come_from_the_solution_only():
    m = {x.name: x for x in S.load_solutions(SOLUTIONS)}["03_masks"]
    assert [(e.key, e.name, e.points) for e in m.exercises] == [("padding_mask", "padding_mask", 1.0),
                                                                ("causal_mask", "causal_mask", 1.0)]
    assert len(m.setup) == 1 and "from encoder_course import checks" in m.setup[0]


def test_a_verdict_is_one_whole_line_with_a_known_status():
    good = json.dumps({"status": "passed", "message": "", "notes": ""}).encode()
    parse = checker_process.parse_verdict
    assert parse(json.dumps({"status": "great", "message": "", "notes": ""}).encode() + b"\n") is None
    assert parse(json.dumps({"status": "passed", "message": 3, "notes": ""}).encode() + b"\n") is None
    assert checker_process.parse_verdict(b"garbage\n" + good + b"\n") is None  # the verdict is the checker's one line
    assert checker_process.parse_verdict(good + b"\n")["status"] == "passed"
    assert checker_process.parse_verdict(good) is None  # not a whole line yet


def test_the_plan_says_what_it_cannot_protect():
    plan = sandbox.make_plan("none")
    assert "your user" in plan.warnings[0] and "(yours), no namespaces" in plan.describe()
    root = sandbox.make_plan("root")
    try:
        assert "as uid 65534, own mount/PID/network namespaces" in root.describe()
    finally:
        sandbox.discard_plan(root)
    assert not any(os.path.exists(stub) for _, stub in root.withheld)


def test_root_that_cannot_isolate_is_refused_like_an_ordinary_user(tmp_path, monkeypatch, capsys):
    """Root without namespaces (a container without CAP_SYS_ADMIN), or with a Python environment that
    ``nobody`` cannot read, gets no weaker root mode: bubblewrap, else the run needs --trust-submissions."""
    write(tmp_path / "class", "a.ipynb", json.dumps(learner()))
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(sandbox, "find_bwrap", lambda: None)
    for probe, exposure, why in ((False, [], "may not create namespaces"),
                                 (True, ["/x is not readable by others"], "/x is not readable by others")):
        monkeypatch.setattr(sandbox, "probe_namespaces", lambda probe=probe: probe)
        monkeypatch.setattr(sandbox, "plan_exposure", lambda paths, exposure=exposure: ([], exposure))
        assert sandbox.root_cannot_isolate() and why in sandbox.root_cannot_isolate()
        code = main(["grade", str(tmp_path / "class"), "--csv", str(tmp_path / "g.csv"), "--solutions", str(SOLUTIONS)])
        out = capsys.readouterr().out
        assert code == 2 and "not run" in out and "As root it cannot isolate here either: " in out, out
        assert why in out.split("either: ")[1], out
    assert not (tmp_path / "g.csv").exists()


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
    cmd = sandbox.container_command("docker", "img", "n1", sandbox.Plan("container", memory_mb=1024))
    text = " ".join(cmd)
    for part in ("--network none", "--user 65534:65534", "--read-only", "--memory 1024m", "--cap-drop ALL",
                 "--pids-limit", "img python -s -m encoder_course.grading.checker_process stdio"):
        assert part in text
    assert sandbox.DOCKERFILE.is_file() and "encoder_course.grading.checker_process" in sandbox.DOCKERFILE.read_text()
    build = sandbox.build_image_command("docker")
    assert build[:2] == ["docker", "build"] and build[-1] == str(sandbox.course_root())


def test_container_isolation_without_an_engine_fails_clearly(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sandbox, "container_engine", lambda: (None, "docker info failed: no daemon"))
    write(tmp_path, "a.ipynb", json.dumps(learner()))
    out = io.StringIO()
    results, code = G.grade([tmp_path], csv_path=None, isolate="container", solutions_dir=SOLUTIONS, out=out)
    assert code == 2 and "needs Docker or Podman" in out.getvalue() and "--isolate process" in out.getvalue()
    assert main(["grade", str(tmp_path), "--isolate", "container", "--build-image", "--csv", ""]) == 2
    assert "needs Docker or Podman" in capsys.readouterr().err


def test_files_that_need_no_verdict_process(tmp_path, capsys):
    (tmp_path / "a.ipynb").write_text("not json", encoding="utf-8")
    (tmp_path / "b.ipynb").write_text("  \n", encoding="utf-8")
    assert main(["grade", str(tmp_path), "--csv", str(tmp_path / "g.csv"), "--solutions", str(SOLUTIONS)]) == 0
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


def test_a_file_swapped_for_a_fifo_after_the_listing_is_refused_not_waited_on(tmp_path):
    """The one read opens without blocking and checks the open file itself, not the listing's view."""
    os.mkfifo(tmp_path / "swapped.ipynb")
    entry = G._read(G._submission(tmp_path / "swapped.ipynb", "swapped.ipynb"), tmp_path / "swapped.ipynb")
    assert entry.status == "not a regular file"


def test_no_file_stops_the_run_and_every_one_gets_a_row(tmp_path, capsys):
    """Deep nesting (past the parser's recursion limit, and just under it), a name that is not UTF-8,
    bidirectional controls in a name, a FIFO: each gets a row with its reason, the CSV stays UTF-8,
    and --resume works after it."""
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "deep.ipynb").write_text('{"cells": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    (folder / "deep_but_parsable.ipynb").write_text('{"cells": [' + "[" * 500 + "]" * 500 + "]}", encoding="utf-8")
    os.mkfifo(folder / "pipe.ipynb")
    with open(os.path.join(os.fsencode(folder), b"Jos\xe9.ipynb"), "wb") as handle:
        handle.write(json.dumps(learner()).encode())
    (folder / "a\u202egnp.ipynb").write_text(json.dumps({"cells": []}), encoding="utf-8")
    csv_path = tmp_path / "g.csv"
    assert main(["grade", str(folder), "--csv", str(csv_path), "--master", str(SOLUTIONS)]) == 0  # (the old name)
    rows = {row["file"]: row for row in G.read_csv(csv_path)}
    assert rows["deep.ipynb"]["status"] == "broken JSON" and "nested more than" in rows["deep.ipynb"]["notes"]
    assert rows["deep_but_parsable.ipynb"]["status"] == "broken JSON"
    assert rows["pipe.ipynb"]["status"] == "not a regular file"
    assert "Jos\\xe9.ipynb" in rows  # the byte that is not UTF-8, shown escaped
    assert "a\\u202egnp.ipynb" in rows  # the right-to-left override, shown escaped
    csv_path.read_bytes().decode("utf-8")  # the whole CSV is valid UTF-8
    out = capsys.readouterr().out
    assert "\u202e" not in out
    assert main(["grade", str(folder), "--csv", str(csv_path), "--solutions", str(SOLUTIONS), "--resume"]) == 0
    assert "0 file(s) to grade, 5 already in the CSV" in capsys.readouterr().out


def test_a_malformed_verdict_line_is_refused_never_raised(tmp_path):
    """A line nested past the parser's limit; a lone surrogate in a message is written as its escape."""
    assert checker_process.parse_verdict(b"[" * 100_000 + b"]" * 100_000 + b"\n") is None
    lone = json.dumps({"status": "failed", "message": "bad \ud800 text", "notes": ""}).encode()
    G._atomic_write(tmp_path / "d.json", json.dumps(checker_process.parse_verdict(lone + b"\n"), ensure_ascii=False))
    assert "bad \\ud800 text" in (tmp_path / "d.json").read_text(encoding="utf-8")


@pytest.mark.parametrize("raw, shown", [("Jos\udce9", "Jos\\xe9"), ("x\ud800y", "x\\ud800y"), ("a\u202eb", "a\\u202eb"),
                                        ("zero\u200bwidth", "zero\\u200bwidth"), ("caf\u00e9", "caf\u00e9")])
def test_names_and_messages_are_escaped_to_writable_visible_text(raw, shown):
    assert G.escape(raw) == shown
    G.escape(raw).encode("utf-8")


def test_an_nbgrader_course_is_graded_from_its_submitted_tree(tmp_path):
    """Given an nbgrader course root, only submitted/<student>/<assignment>/ is graded, each student named
    by their folder, nbgrader's timestamp files skipped; the teacher's source and graded copies are not."""
    course = tmp_path / "course"
    write(course, "nbgrader_config.py", "c = get_config()\n")
    write(course, "source/03_masks/03_masks.ipynb", json.dumps(learner()))
    write(course, "autograded/alice/03_masks/03_masks.ipynb", json.dumps(learner()))
    for student in ("alice", "bob"):
        write(course, f"submitted/{student}/03_masks/03_masks.ipynb", json.dumps(learner()))
        write(course, f"submitted/{student}/03_masks/timestamp.txt", "2026-12-01 10:00:00\n")
    entries, roots = G.discover([course])
    assert sorted((e.student, e.file) for e in entries) == [("alice", "alice/03_masks/03_masks.ipynb"),
                                                           ("bob", "bob/03_masks/03_masks.ipynb")]
    assert roots == [os.path.realpath(course / "submitted")]
    plain = tmp_path / "plain"  # a folder that merely has a "submitted" subfolder is graded whole
    write(plain, "submitted/x.ipynb", json.dumps(learner()))
    write(plain, "y.ipynb", json.dumps(learner()))
    assert len(G.discover([plain])[0]) == 2


def test_an_ordinary_user_must_say_they_trust_the_submissions(tmp_path, monkeypatch, capsys):
    """Without root, bubblewrap or a container the learner's code would run as the teacher: refused, with
    why and the ways on; files that run no code are still listed."""
    write(tmp_path / "class", "a.ipynb", json.dumps(learner()))
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(sandbox, "find_bwrap", lambda: None)
    args = ["--csv", str(tmp_path / "g.csv"), "--solutions", str(SOLUTIONS)]
    assert main(["grade", str(tmp_path / "class"), *args]) == 2
    out = capsys.readouterr().out
    assert "not run" in out and "read your files" in out and "--trust-submissions" in out
    assert "--isolate container" in out and "as root" in out and "bubblewrap" in out
    assert not (tmp_path / "g.csv").exists()
    write(tmp_path / "odd", "notes.txt", "not a notebook")
    assert main(["grade", str(tmp_path / "odd"), "--csv", str(tmp_path / "h.csv"), "--solutions", str(SOLUTIONS)]) == 0


def test_a_docker_client_without_its_daemon_does_not_hide_podman(tmp_path, monkeypatch):
    from encoder_course.grading import sandbox

    for name, code in (("docker", 1), ("podman", 0)):  # docker answers `info` with an error, podman works
        tool = tmp_path / name
        tool.write_text(f"#!/bin/sh\necho '{name} says {code}' >&2\nexit {code}\n")
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert sandbox.container_engine() == (str(tmp_path / "podman"), "")
    (tmp_path / "podman").unlink()
    engine, why = sandbox.container_engine()
    assert engine is None and "docker says 1" in why


# -- round 6: the grader's own process never parses, walks or matches a submission without a bound --------


def _with_cell(source: str) -> dict:
    nb = learner()
    nb["cells"].append({"cell_type": "code", "metadata": {}, "source": source, "outputs": [],
                        "execution_count": None})
    return nb


HOSTILE_CELLS = {
    "plus_terms": "x = 1" + " + 1" * 5000,  # past the parser's recursion limit
    "minus_signs": "x = " + "-" * 10_000 + "1",  # past the parser's memory for nesting
    "colon_lines": "a:\n" * 400_000,  # a regex that spans lines would be quadratic in these 1.2 MB
    "sixteen_mb": "y = 1\n" * 2_800_000,  # 16 MB: its syntax tree would take gigabytes
}


@pytest.mark.parametrize("name", sorted(HOSTILE_CELLS))
def test_a_hostile_cell_is_read_in_bounded_time_and_memory(name):
    import time
    import tracemalloc

    nb = _with_cell(HOSTILE_CELLS[name])
    tracemalloc.start()
    cpu = time.process_time()
    try:
        cells = S.code_cells(nb)
        S.match(S.load_solutions(SOLUTIONS), cells, "03_masks.ipynb")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    cpu = time.process_time() - cpu
    size = len(HOSTILE_CELLS[name])
    assert peak < 40 * size + (200 << 20), f"{peak >> 20} MB for a cell of {size >> 10} kB"
    assert cpu < 60, f"{cpu:.0f} s of processor time for a cell of {size >> 10} kB"  # (a hang, not a budget)


def test_a_deep_or_unreadable_folder_gets_a_row_and_stops_nothing(tmp_path, monkeypatch):
    folder = tmp_path / "class"
    write(folder, "alice/03_masks.ipynb", learner())
    deep = folder / "bob"
    levels = [deep / Path(*["d"] * n) if n else deep for n in range(1101)]  # os.walk would end in RecursionError
    for level in levels:  # (os.makedirs and shutil.rmtree recurse too)
        level.mkdir()
    (levels[-1] / "x.ipynb").write_text("{}")
    locked = folder / "carol"
    write(locked, "03_masks.ipynb", learner())
    real_scandir = os.scandir

    def scandir(path):  # mode 000 as an ordinary user (root reads it anyway)
        if os.fspath(path) == str(locked):
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(G.os, "scandir", scandir)
    entries, _ = G.discover([folder])
    by_file = {e.file: e for e in entries}
    assert by_file["alice/03_masks.ipynb"].nb is not None
    assert by_file["carol"].status == "unreadable folder: Permission denied"
    too_deep = [e for e in entries if e.status.startswith("a folder nested more than")]
    assert len(too_deep) == 1 and too_deep[0].student == "bob", [(e.file, e.status) for e in entries]
    (levels[-1] / "x.ipynb").unlink()
    for level in reversed(levels):
        level.rmdir()


def test_a_file_the_grader_cannot_read_gets_its_row_and_the_run_goes_on(tmp_path, monkeypatch):
    folder = tmp_path / "class"
    write(folder, "a.ipynb", learner())
    write(folder, "b.ipynb", solved(padding_mask=RIGHT["padding_mask"]))
    real = S.code_cells

    def code_cells(nb):
        if any("EXPLODE" in "".join(c.get("source", "")) for c in nb["cells"]):
            raise RecursionError("maximum recursion depth exceeded")
        return real(nb)

    write(folder, "c.ipynb", _with_cell("EXPLODE"))
    monkeypatch.setattr(S, "code_cells", code_cells)
    log = io.StringIO()
    results, code = G.grade([folder], csv_path=tmp_path / "g.csv", solutions_dir=SOLUTIONS, isolate="none", out=log)
    rows = {row["file"]: row for row in G.read_csv(tmp_path / "g.csv")}
    assert code == 0 and set(rows) == {"a.ipynb", "b.ipynb", "c.ipynb"}, log.getvalue()
    assert rows["c.ipynb"]["status"] == "unreadable" and "RecursionError" in rows["c.ipynb"]["notes"]
    assert rows["b.ipynb"]["padding_mask"] == "1"


def test_a_run_interrupted_before_grading_saves_the_rows_it_has(tmp_path, monkeypatch):
    folder = tmp_path / "class"
    write(folder, "a_broken.ipynb", "{not json")
    write(folder, "b.ipynb", learner())
    write(folder, "c_later.ipynb", learner())
    real = G._entry

    def entry(path, rel, roots, given=False):
        if rel == "c_later.ipynb":
            raise KeyboardInterrupt  # Ctrl-C while the folder is being listed
        return real(path, rel, roots, given)

    monkeypatch.setattr(G, "_entry", entry)
    log = io.StringIO()
    _, code = G.grade([folder], csv_path=tmp_path / "g.csv", solutions_dir=SOLUTIONS, isolate="none", out=log)
    assert code == 130 and "before grading began" in log.getvalue(), log.getvalue()
    rows = {row["file"]: row for row in G.read_csv(tmp_path / "g.csv")}
    assert set(rows) == {"a_broken.ipynb"} and rows["a_broken.ipynb"]["status"] == "broken JSON"
    monkeypatch.setattr(G, "_entry", real)
    log = io.StringIO()
    _, code = G.grade([folder], csv_path=tmp_path / "g.csv", solutions_dir=SOLUTIONS, isolate="none", out=log,
                      resume=True)
    assert code == 0 and set(G.read_csv(tmp_path / "g.csv")[i]["file"] for i in range(3)) == {
        "a_broken.ipynb", "b.ipynb", "c_later.ipynb"}, log.getvalue()


def test_bubblewrap_starts_when_the_class_folder_lies_inside_the_course_checkout():
    """README's layout: the class folder and the gradebook inside the course's clone. The folder is hidden
    (an empty read-only tmpfs), so its files need no mount point of their own, which bubblewrap could not make
    in a read-only folder ("Can't create file ... Read-only file system")."""
    import shutil
    import subprocess
    import tempfile

    if not sandbox.find_bwrap():
        pytest.skip("bubblewrap is not installed, or cannot make namespaces here")
    folder = Path(tempfile.mkdtemp(prefix=".class-", dir=sandbox.course_root()))
    try:
        notebook = write(folder, "a.ipynb", learner())
        gradebook = folder.parent / f"{folder.name}.csv"
        gradebook.write_text("student\n")
        plan = sandbox.make_plan("bwrap", hide=[str(folder)], hide_files=[str(notebook), str(gradebook)],
                                 memory_mb=512, cpu_s=10)
        command = sandbox.bwrap_command(plan)
        assert ["--ro-bind", "/dev/null", str(notebook)] != command[-3:]
        seen = subprocess.run(command + ["/bin/sh", "-c", f"ls -A {folder}; cat {gradebook}; echo started"],
                              capture_output=True, text=True, timeout=60)
        assert seen.returncode == 0 and seen.stdout.split() == ["started"], seen.stdout + seen.stderr
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        with __import__("contextlib").suppress(OSError):
            gradebook.unlink()
        if "plan" in locals():
            sandbox.discard_plan(plan)


def test_the_learners_processes_are_given_the_course_package_not_the_checkout():
    """From a checkout, the sandboxes bind ``encoder_course/`` alone: its git history, a gradebook or a class
    folder kept in the checkout, and the folders beside it stay out of sight."""
    root = os.path.realpath(sandbox.course_root())
    needed = sandbox.needed_paths()
    if (Path(root) / "pyproject.toml").exists():  # a checkout (an installed package lives in site-packages)
        assert root not in needed and os.path.join(root, "encoder_course") in needed, needed
    cover = dict((c, shown) for c, shown in sandbox.cover_the_host(needed, []))
    for top in ("/run", "/var", "/home", "/root", "/srv"):
        if os.path.isdir(top) and not any(n == top for n in needed):
            assert top in cover and all(sandbox._under(s, top) for s in cover[top]), (top, cover.get(top))
    assert not any(c in cover for c in ("/usr", "/etc", "/tmp", "/proc", "/dev"))
