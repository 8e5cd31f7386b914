"""Grade a class's notebooks: every exercise judged by the course's checker, in an isolated process.

``encoder-course grade PATH...``: the teachers' guide (docs/teachers.md) says what it does and protects. Every file
under PATH becomes a :class:`Submission`, read once (one open that cannot block) before any learner code runs,
and gets a row whatever it is; ``solutions.py`` matches it to a solution, which alone decides the exercises, the
points and the setup cells; each exercise is one job for a ``checker_process.VerdictRunner`` (``--jobs`` of them, each
with its own fork server). Rows are saved atomically as they finish, so ``--resume`` grades the rest.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import signal
import stat
import sys
import threading
import time
import unicodedata
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from encoder_course.checks.mistakes import mistake_id

from . import sandbox
from . import solutions as S
from .checker_process import OUTPUT_CAP, RunnerError, VerdictRunner

STATUSES = ("passed", "failed", "not attempted", "error", "timed out", "missing")
FIXED = ["student", "notebook"]
TRAILING = ["total", "max", "status", "file", "notes"]
SKIPPED_DIRS = {".ipynb_checkpoints", "__pycache__", ".git"}
MAX_BYTES = 50 * 1024 * 1024
MAX_DEPTH = 64  # a notebook nests about 6 deep; deeper JSON is refused before anything walks it
MAX_FOLDER_DEPTH = 32  # student/assignment/... is a few levels; a deeper folder gets one row, not a walk
ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
HIDDEN = ("Cc", "Cf", "Cs", "Zl", "Zp")  # escaped: controls, format (bidirectional, zero-width), surrogates, separators


@dataclass
class Submission:
    """A file found in the folders graded (read once, at the start), and what its exercises earned: a row."""

    path: Path
    file: str  # its path relative to the folder graded (shown escaped)
    student: str
    status: str = "graded"  # graded / empty file / broken JSON / not a notebook / symlink ... / unreadable ...
    notes: list = field(default_factory=list)
    nb: dict | None = None  # the notebook as read at listing time, the only time the file is opened
    stamp: tuple = ()  # (inode, size, mtime) when it was read: a change afterwards is noted
    cells: list = field(default_factory=list)  # its code cells, the solution they answer, and how that was told
    solution: S.Solution | None = None
    how: str = ""
    checks: dict = field(default_factory=dict)  # key -> status
    messages: dict = field(default_factory=dict)  # key -> checker's message
    points: dict = field(default_factory=dict)  # key -> points earned
    mistakes: dict = field(default_factory=dict)  # key -> the stable id of the mistake named (checks/mistakes.py)
    times: dict = field(default_factory=dict)  # key -> seconds its exercise took
    seconds: float = 0.0

    @property
    def notebook(self) -> str:
        return self.solution.name if self.solution else ""

    @property
    def max_points(self) -> float | None:
        return self.solution.max_points if self.solution else None

    @property
    def total(self) -> float:
        return sum(self.points.values())


DETAILS = ("file", "student", "status", "notebook", "checks", "messages", "mistakes", "points", "max_points", "notes",
           "times", "seconds")


# ----------------------------------------------------------------------------------------------
# Finding and reading the files


def escape(text) -> str:
    """Text safe to print and to write as UTF-8: control characters shown as ``\\n``, ``\\t``, ``\\x1b``;
    bidirectional and zero-width marks as ``\\u202e``; a byte of a file name that is not UTF-8 (Python
    holds it as a lone surrogate) as ``\\xe9``, and any other lone surrogate as ``\\ud800``."""
    out = []
    for ch in str(text):
        code = ord(ch)
        if ch in ESCAPES:
            out.append(ESCAPES[ch])
        elif 0xDC80 <= code <= 0xDCFF:  # surrogateescape: one undecodable byte of a name
            out.append(f"\\x{code - 0xDC00:02x}")
        elif unicodedata.category(ch) in HIDDEN:
            out.append(f"\\x{code:02x}" if code < 0xA0 else f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def file_stamp(info: os.stat_result) -> tuple:
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def too_deep(data) -> bool:
    """Whether JSON data nests deeper than MAX_DEPTH (walked without recursion)."""
    stack = [(data, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(item, dict):
            stack += [(v, depth + 1) for v in item.values()]
        elif isinstance(item, list):
            stack += [(v, depth + 1) for v in item]
    return False


NBGRADER_MARKS = ("nbgrader_config.py", "gradebook.db")  # what marks the root of an nbgrader course
NBGRADER_BOOKKEEPING = {"timestamp.txt"}  # nbgrader's own files in submitted/<student>/<assignment>/


def _submission(path: Path, rel: str, *args) -> Submission:
    parts = Path(rel).parts
    return Submission(path, escape(rel), escape(parts[0] if len(parts) > 1 else Path(rel).stem), *args)


def _nbgrader_submitted(root: str) -> str | None:
    """The ``submitted`` folder of an nbgrader course root (``submitted/<student>/<assignment>/*.ipynb``),
    or None when ``root`` is not one. Only that folder is graded: nbgrader's own ``source``, ``release``,
    ``autograded`` and ``feedback`` folders hold the teacher's and the graded copies."""
    submitted = os.path.join(root, "submitted")
    if os.path.isdir(submitted) and any(os.path.exists(os.path.join(root, m)) for m in NBGRADER_MARKS):
        return submitted
    return None


def discover(paths, exclude=(), listed: list | None = None) -> tuple[list[Submission], list[str]]:
    """Every file under ``paths`` as a :class:`Submission` (nothing dropped), and the folders graded. The files
    go into ``listed`` as they are found, so that a run interrupted while listing still has their rows."""
    exclude = {os.path.realpath(e) for e in exclude if e}
    paths = [Path(_nbgrader_submitted(os.path.realpath(p)) or p) if Path(p).is_dir() else Path(p) for p in paths]
    roots = [os.path.realpath(p) for p in paths if p.is_dir()]
    listed = [] if listed is None else listed
    for p in paths:
        if not p.is_dir():
            listed.append(_entry(p, p.name, roots, given=True))
            continue
        root = os.path.realpath(p)
        for folder, dirs, files, problem in _walk(root):
            if problem:  # a folder the grader cannot list, or one nested too deeply: a row of its own
                listed.append(_submission(Path(folder), os.path.relpath(folder, root) if folder != root else
                                          os.path.basename(root), problem))
                continue
            kept = []
            for d in sorted(dirs):
                full = os.path.join(folder, d)
                if d in SKIPPED_DIRS:
                    continue
                if os.path.islink(full):
                    files.append(d)  # a symlinked folder: reported, not followed
                    continue
                if d.lower().endswith(".ipynb"):
                    listed.append(_submission(Path(full), os.path.relpath(full, root), "a folder, not a notebook",
                                              ["a folder named like a notebook; its files have rows of their own"]))
                kept.append(d)
            dirs[:] = kept
            for name in sorted(files):
                full = os.path.join(folder, name)
                if (os.path.realpath(full) in exclude and not os.path.islink(full)) or (
                        os.path.basename(root) == "submitted" and name in NBGRADER_BOOKKEEPING and folder != root):
                    continue
                listed.append(_entry(Path(full), os.path.relpath(full, root), roots))
    return listed, roots


def _walk(root: str):
    """``os.walk`` without its recursion (a folder 1,000 levels deep would end the run in RecursionError) and
    without its silence: yields ``(folder, dirs, files, problem)``, where ``problem`` names a folder that cannot
    be listed (mode 000, say) or lies deeper than MAX_FOLDER_DEPTH, so that it gets a row. Like os.walk, the
    caller may prune ``dirs``; links are listed among the files' names' folders, never followed."""
    stack = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        if depth > MAX_FOLDER_DEPTH:
            yield folder, [], [], f"a folder nested more than {MAX_FOLDER_DEPTH} levels deep (not graded)"
            continue
        try:
            with os.scandir(folder) as listing:
                dirs, files = [], []
                for item in listing:
                    try:
                        is_dir = item.is_dir(follow_symlinks=False) or item.is_symlink() and os.path.isdir(item.path)
                    except OSError:
                        is_dir = False
                    (dirs if is_dir else files).append(item.name)
        except OSError as exc:
            yield folder, [], [], "unreadable folder: " + (exc.strerror or type(exc).__name__)
            continue
        yield folder, dirs, files, ""
        stack.extend((os.path.join(folder, d), depth + 1) for d in sorted(dirs, reverse=True))


def _entry(path: Path, rel: str, roots: list[str], given: bool = False) -> Submission:
    entry = _submission(path, rel)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return _set(entry, "not found")
    except OSError as exc:
        return _set(entry, "unreadable", exc.strerror or str(exc))
    if stat.S_ISLNK(info.st_mode):
        target = os.path.realpath(path)
        root = next((r for r in roots if target == r or target.startswith(r.rstrip(os.sep) + os.sep)), None)
        if not os.path.exists(target):
            return _set(entry, "broken symlink")
        if os.path.isdir(target):
            return _set(entry, "symlink to a folder (not followed)")
        if root is not None:
            return _set(entry, "symlink (not graded)", f"points to {escape(os.path.relpath(target, root))}, "
                                                       "which has its own row")
        if not given:
            return _set(entry, "symlink out of the folder (not followed)")
        entry.notes.append(f"a symlink to {escape(target)}")  # named on the command line: the teacher chose it
        return _read(entry, Path(target))
    if not stat.S_ISREG(info.st_mode):
        return _set(entry, "not a regular file")
    return _read(entry, path)


def _read(entry: Submission, path: Path) -> Submission:
    """The one read of a file: one open that neither follows a link nor blocks (a FIFO swapped in after the
    listing would wait for a writer forever), of a regular file only, at most MAX_BYTES + 1 bytes."""
    try:
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW), "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                return _set(entry, "not a regular file")
            raw, entry.stamp = handle.read(MAX_BYTES + 1), file_stamp(info)
    except OSError as exc:
        return _set(entry, "unreadable", exc.strerror or str(exc))
    odd = not path.name.endswith(".ipynb")
    broken = "not a notebook" if odd else "broken JSON"
    if len(raw) > MAX_BYTES:
        return _set(entry, f"too large (over {MAX_BYTES >> 20} MB)")
    if not raw.strip():
        return _set(entry, "empty file")
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        return _set(entry, broken, "not UTF-8 text")
    except ValueError as exc:
        return _set(entry, broken, escape(str(exc).splitlines()[0][:120]))
    except RecursionError:
        data = None
    if data is None or too_deep(data):
        return _set(entry, broken, f"nested more than {MAX_DEPTH} levels deep")
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        return _set(entry, "not a notebook", "JSON without a list of cells")
    if odd:
        entry.notes.append(f"graded although its name does not end in .ipynb ({escape(path.suffix or 'no extension')})")
    # Only what grading reads is kept (outputs can be most of a notebook): a large class fits in memory.
    entry.nb = {"cells": [{k: c[k] for k in ("cell_type", "id", "source", "metadata") if k in c}
                          if isinstance(c, dict) else c for c in data["cells"]]}
    return entry


def _set(entry: Submission, status: str, note: str = "") -> Submission:
    entry.status = status
    if note:
        entry.notes.append(note)
    return entry


# ----------------------------------------------------------------------------------------------
# Grading one submission


def grade_entry(entry: Submission, runner: VerdictRunner) -> Submission:
    """Grade one file, each of its exercises by a checker process; never raises for the file's sake."""
    start, solution = time.monotonic(), entry.solution
    if entry.nb is None:
        return entry
    if solution is None:
        return _set(entry, "no course notebook matches", "no exercise of the course was found in it")
    if entry.how and "cell metadata" not in entry.how:
        entry.notes.append(f"matched to {solution.name} by {entry.how}")
    try:
        changed = file_stamp(os.stat(entry.path)) != entry.stamp
    except OSError:
        changed = True
    if changed:
        entry.notes.append("the file changed after the grader read it; graded as it was read")
    found = {ex.key: S.exercise_cell(solution, ex, entry.cells) for ex in solution.exercises}
    labels = {c.index: f"exercise cell {key}" for key, c in reversed(found.items()) if c is not None}
    runnable = {}  # earlier exercise cells that ran to a verdict, by index (a cell that timed out is left out)
    for ex in solution.exercises:
        cell = found[ex.key]
        if cell is None:
            entry.checks[ex.key], entry.points[ex.key] = "missing", 0
            entry.messages[ex.key] = f"no exercise cell for {ex.name}"
            entry.mistakes[ex.key] = mistake_id(ex.key, entry.messages[ex.key])
            continue
        chosen = sorted({**runnable, cell.index: cell}.values(), key=lambda c: c.index)
        job = {"key": ex.key, "name": ex.name, "setup": solution.setup,
               "cells": [{"source": c.source, "label": labels[c.index], "graded": c is cell} for c in chosen]}
        began = time.monotonic()
        outcome = runner.run(job)
        entry.times[ex.key] = round(time.monotonic() - began, 3)
        entry.checks[ex.key], entry.messages[ex.key] = outcome.status, outcome.message
        entry.points[ex.key] = ex.points if outcome.status == "passed" else 0
        if outcome.status != "passed":
            entry.mistakes[ex.key] = mistake_id(ex.key, outcome.message)
        if outcome.notes:
            entry.notes.append(f"{ex.key}: {outcome.notes}")
        if outcome.output_bytes > OUTPUT_CAP:
            entry.notes.append(f"{ex.key}: printed {outcome.output_bytes} bytes (kept the first {OUTPUT_CAP})")
        if outcome.status == "timed out":
            entry.notes.append(f"{ex.key}: timed out; its cell is left out of the later exercises")
        else:
            runnable.setdefault(cell.index, cell)
    entry.seconds = time.monotonic() - start
    return entry


# ----------------------------------------------------------------------------------------------
# The gradebook


def cell(text) -> str:
    """A CSV cell that no spreadsheet turns into a formula (OWASP: prefix a quote)."""
    text = escape(text)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r", "|", "%") else text


def number(value) -> str:
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _first_line(r: Submission, key: str, width: int) -> str:
    first = (r.messages.get(key) or "").strip().splitlines()
    return first[0][:width] if first else ""


def row_of(r: Submission, keys: list[str]) -> dict:
    """``r``'s gradebook row, its text cells made safe (numbers are written as they are)."""
    notes = list(r.notes)
    for k, status in r.checks.items():
        if status != "passed":
            why = _first_line(r, k, 160) if status in ("failed", "error", "timed out") else ""
            notes.append(f"{k}: {status}" + (f" ({why})" if why else ""))
    return {"student": cell(r.student), "notebook": r.notebook, **{k: number(r.points.get(k)) for k in keys},
            "total": number(r.total), "max": number(r.max_points), "status": r.status, "file": cell(r.file),
            "notes": cell("; ".join(notes))}


def write_csv(path, rows: list[dict], keys: list[str]) -> None:
    """Write ``rows`` (already safe) atomically."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, FIXED + keys + TRAILING, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    _atomic_write(Path(path), buffer.getvalue())


def _atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file, flushed, renamed over ``path``; a lone surrogate (an exception's
    text may hold one) is written as its escape, ``\\ud800``."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8", errors="backslashreplace", newline="") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def read_csv(path) -> list[dict]:
    """The rows of an earlier run's CSV (for ``--resume``); cells as written (quote prefix kept)."""
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return list(csv.DictReader(handle))
    except (OSError, csv.Error, UnicodeDecodeError):
        return []


def summary(results: list[Submission], keys: list[str], top: int = 3) -> str:
    """Per exercise: how many passed, failed, ...; and the commonest failure messages."""
    lines = ["Summary by exercise:"]
    for k in keys:
        counts = Counter(r.checks[k] for r in results if k in r.checks)
        if not counts:
            continue
        lines.append(f"  {k}: " + ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s]))
        messages = Counter()
        for r in results:
            if r.checks.get(k) in ("failed", "error", "timed out"):
                messages[escape(_first_line(r, k, 120)) or r.checks[k]] += 1
        for message, n in messages.most_common(top):
            lines.append(f"      {n} x {message}")
    statuses = Counter(r.status for r in results if r.status != "graded")
    if statuses:
        lines.append("Files not graded: " + ", ".join(f"{n} {s}" for s, n in statuses.most_common()))
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# The run


UNTRUSTED = (
    "encoder-course grade: not run. Without bubblewrap, each submission's code would run as you: it could "
    "read your files (other submissions, the solutions, your home folder), reach the network and leave "
    "processes behind. Install bubblewrap (the package bubblewrap: each exercise then runs in its own "
    "namespaces, seeing only Python and the course), grade as root (each exercise then runs as 'nobody' in "
    "its own namespaces), or with --isolate container (Docker or Podman), or, if you trust every file you "
    "grade, pass --trust-submissions.\n")


def grade(paths, *, csv_path="grades.csv", details_path=None, timeout: float = 60.0, solutions_dir=None,
          resume: bool = False, isolate: str = "process", memory_mb: int = 4096, out=None,
          image: str = sandbox.IMAGE, jobs: int = 0, trust: bool = False) -> tuple[list[Submission], int]:
    """Grade every file under ``paths``; returns the results and the exit code (0, 2, or 128+signal).

    ``isolate``: process (the best isolation this machine has: as root, namespaces; else bubblewrap; else
    none, which needs ``trust``, ``--trust-submissions``), container, or none (as your user, for the tests).
    ``jobs`` submissions are graded at once (0: one per core), each by a runner of its own.
    """
    out = out or sys.stdout
    solutions_dir = Path(solutions_dir) if solutions_dir else S.default_solutions_dir()
    if solutions_dir is None:
        out.write("no solution notebooks: pass --solutions DIR (the folder of the solution notebooks)\n")
        return [], 2
    try:
        solutions = S.load_solutions(solutions_dir)
    except (OSError, ValueError, KeyError) as exc:
        out.write(f"cannot read the solution notebooks in {solutions_dir}: {exc}\n")
        return [], 2
    for target in (csv_path, details_path):
        if target and not Path(target).resolve().parent.is_dir():
            out.write(f"cannot write {escape(target)}: its folder does not exist\n")
            return [], 2
    previous, caught = {}, [signal.SIGINT]

    def stop(signum, frame):  # (a BaseException: no `except Exception` on the way makes it a graded error)
        for sig in previous:  # one is enough: the wrap-up (killing, saving, printing) is not interrupted
            signal.signal(sig, signal.SIG_IGN)
        caught.append(signum)
        raise KeyboardInterrupt

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(ValueError, OSError):  # not the main thread
            previous[sig] = signal.signal(sig, stop)
    try:
        return _grade(paths, solutions, solutions_dir, csv_path=csv_path, details_path=details_path,
                      timeout=timeout, resume=resume, isolate=isolate, memory_mb=memory_mb, out=out, image=image,
                      jobs=jobs, trust=trust, caught=caught)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _grade(paths, solutions, solutions_dir, *, csv_path, details_path, timeout, resume, isolate, memory_mb, out,
           image, jobs, trust, caught) -> tuple[list[Submission], int]:
    entries = []
    try:
        roots = discover(paths, exclude=[csv_path, details_path], listed=entries)[1]
    except KeyboardInterrupt:
        return _before_grading(entries, caught, csv_path, details_path, resume, out)
    if not entries:
        out.write("no files found to grade\n")
        return [], 2
    notebooks = [e for e in entries if e.nb is not None]
    mode = isolate
    if isolate == "process":
        as_root = os.name == "posix" and os.geteuid() == 0
        why_not_root = sandbox.root_cannot_isolate() if as_root else ""
        mode = "root" if as_root and not why_not_root else "bwrap" if sandbox.find_bwrap() else "none"
        if mode == "none" and notebooks and not trust:
            out.write(UNTRUSTED + (f"As root it cannot isolate here either: {why_not_root}.\n" if as_root else ""))
            return [], 2
    kept_rows = read_csv(csv_path) if resume and csv_path else []
    done = {row.get("file") for row in kept_rows}
    kept_details = read_details(details_path, done) if kept_rows and details_path else []
    todo = [e for e in entries if cell(e.file) not in done]
    graded = [e for e in todo if e.nb is not None]
    try:
        for e in list(graded):
            _prepare(e, solutions, graded)
    except KeyboardInterrupt:
        return _before_grading(entries, caught, csv_path, details_path, resume, out)
    used = {ex.key for e in graded if e.solution for ex in e.solution.exercises} | {k for row in kept_rows for k in row}
    keys = [k for k in dict.fromkeys(ex.key for m in solutions for ex in m.exercises) if k in used]
    # Hidden from the learner's processes: the folders graded and those of files named one by one (a folder
    # that holds the Python environment is not hidden, but each submission in it is), the solutions, and the
    # gradebook's folder.
    outputs = [str(p) for p in (csv_path, details_path) if p]
    hide = [*roots, *{str(e.path.resolve().parent) for e in notebooks}, str(solutions_dir),
            *(str(Path(p).resolve().parent) for p in outputs)]
    plan = sandbox.make_plan(mode, hide=hide, hide_files=outputs + [str(e.path) for e in notebooks],
                             memory_mb=memory_mb, cpu_s=int(timeout) + 10)
    setups = list(dict.fromkeys(s for e in graded if e.solution for s in e.solution.setup))
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(graded) or 1))
    runners = [VerdictRunner(plan, timeout=timeout, setups=setups, image=image) for _ in range(jobs)]
    free, local = list(runners), threading.local()

    def work(entry: Submission) -> Submission:  # each of the pool's threads takes a runner of its own
        local.runner = getattr(local, "runner", None) or free.pop()
        return grade_entry(entry, local.runner)

    before = set(sandbox.descendants())
    sandbox.prctl(sandbox.PR_SET_CHILD_SUBREAPER, 1)  # what a killed fork server leaves behind comes here
    sandbox.prctl(sandbox.PR_SET_DUMPABLE, 0)  # a learner's process of this user cannot read this one's memory
    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="grade")
    futures, results, code = [], [], 0
    try:
        if graded:
            for r in runners:
                r.start()
            out.write(f"verdict processes: {plan.describe()}" + (f", {jobs} at once" if jobs > 1 else "") + "\n")
            out.write("".join(f"warning: {warning}\n" for warning in plan.warnings))
        out.write(f"{len(todo)} file(s) to grade" + (f", {len(entries) - len(todo)} already in the CSV"
                                                      if resume else "") + "\n")
        futures = [pool.submit(work, entry) for entry in todo]
        for future in as_completed(futures):
            res = future.result()
            results.append(res)
            out.write(f"[{len(results)}/{len(todo)}] {res.file} ... {res.status}"
                      + (f" {number(res.total)}/{number(res.max_points)}" if res.max_points else "")
                      + f" ({res.seconds:.1f} s)\n")
            out.flush()
            _save(csv_path, details_path, kept_rows, results, keys, kept_details)
    except KeyboardInterrupt:
        code = 128 + caught[-1]
        out.write(f"\ninterrupted ({signal.Signals(code - 128).name}): {len(results)} of {len(todo)} file(s) "
                  "graded and saved; run again with --resume to grade the rest\n")
    except RunnerError as exc:
        code = 2
        out.write(f"\nencoder-course grade: {exc}\n")
    finally:
        for future in futures:
            future.cancel()
        for r in runners:  # kills what is still running: its job gets its outcome and returns
            r.interrupt()
        pool.shutdown(wait=True, cancel_futures=True)
        for r in runners:
            r.close()
        sandbox.kill_tree([p for p in sandbox.descendants() if p not in before])
        sandbox.discard_plan(plan)
        sandbox.prctl(sandbox.PR_SET_CHILD_SUBREAPER, 0)
    results.sort(key=todo.index)
    if results:
        out.write("\n" + summary(results, keys) + "\n")
    if csv_path and (results or kept_rows):
        _save(csv_path, details_path, kept_rows, results, keys, kept_details)
        out.write(f"\nwrote {escape(csv_path)}" + (f" and {escape(details_path)}" if details_path else "") + "\n")
    return results, code


def _prepare(entry: Submission, solutions, graded: list) -> None:
    """Read a notebook's cells and match it to its solution; a file the grader cannot read that far gets its
    row saying so (and leaves ``graded``), and the run goes on."""
    try:
        entry.cells = S.code_cells(entry.nb)
        entry.solution, entry.how = S.match(solutions, entry.cells, entry.path.name)
        entry.nb = {}  # (its cells are all the grader needs from now on: a large class is not held twice)
    except (Exception, RecursionError, MemoryError) as exc:
        entry.nb, entry.cells, entry.solution = None, [], None
        _set(entry, "unreadable", f"the grader could not read its cells ({type(exc).__name__})")
        graded.remove(entry)


def _before_grading(entries, caught, csv_path, details_path, resume, out) -> tuple[list[Submission], int]:
    """Interrupted before any exercise ran: save the rows already decided (files that are not notebooks, or
    cannot be read), so that ``--resume`` grades only the notebooks."""
    code = 128 + caught[-1]
    kept_rows = read_csv(csv_path) if resume and csv_path else []
    done = {row.get("file") for row in kept_rows}
    decided = [e for e in entries if e.nb is None and cell(e.file) not in done]
    keys = list(dict.fromkeys(k for row in kept_rows for k in row if k not in FIXED + TRAILING))
    if csv_path and (decided or kept_rows):
        kept_details = read_details(details_path, done) if kept_rows and details_path else []
        _save(csv_path, details_path, kept_rows, decided, keys, kept_details)
    out.write(f"\ninterrupted ({signal.Signals(code - 128).name}) before grading began: {len(decided)} row(s) of "
              "files that are not notebooks saved; run again with --resume to grade the rest\n")
    return decided, code


def read_details(path, files) -> list[dict]:
    """The entries of an earlier run's details file for the rows kept by ``--resume`` (``files``, as in the CSV)."""
    try:
        found = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [d for d in found if isinstance(d, dict) and cell(d.get("file", "")) in files] if isinstance(found, list) \
        else []


def _save(csv_path, details_path, kept_rows, results, keys, kept_details=()) -> None:
    if csv_path:
        write_csv(csv_path, kept_rows + [row_of(r, keys) for r in results], keys)
    if details_path:
        details = list(kept_details) + [{k: getattr(r, k) for k in DETAILS} for r in results]
        _atomic_write(Path(details_path), json.dumps(details, indent=1, ensure_ascii=False))
