"""Grade a class's notebooks: every exercise judged by the checker, in its own isolated process.

``encoder-course grade PATH... [--csv FILE] [--details FILE] [--timeout S] [--resume] [--master DIR] [--jobs N]``

* **The master copy decides.** Each submission is matched to a master (solution) notebook
  (``masters.py``); the exercise list, the points and the setup cells come from the master. The
  submission's check cells, comments, extra cells and stored outputs are never run or read.
* **Two processes per exercise** (started by ``runner.py``): the *learner's process*
  (``worker.py``, isolated by ``sandbox.py``) runs the master's setup cells, then the learner's
  exercise cells of that notebook up to and including the graded one (no other learner code runs);
  the *checker process* (``verdict.py``) runs the checker's own ``verdict(key, candidate)`` and
  reaches the learner's function or class only through plain data (``remote.py``, ``wire.py``). Only
  the checker process can write the verdict; a learner's process that prints a pass line, exits
  early, or changes the course's or torch's functions changes nothing the checker computes.
* **Every file gets a row**: notebooks under any extension, empty and broken files, JSON nested too
  deeply, non-notebooks, folders named ``*.ipynb``, FIFOs and devices (never opened in a way that
  could wait), symlinks (reported, never followed out of the folder, never merged into their target's
  row), files that cannot be read. Names that are not UTF-8 and hidden or reordering characters are
  shown escaped. Each file is opened and read once, before any learner code runs; a file changed
  later is graded as it was read (and the row says so).
* **An nbgrader course** (a folder with ``nbgrader_config.py`` or ``gradebook.db``): only its
  ``submitted/<student>/<assignment>/`` tree is graded, without nbgrader's ``timestamp.txt`` files.
* **Submissions graded at once** (``--jobs``, default one per core), each by its own runner (its own
  fork server and folder); a runner's sweep for stray processes spares the others' (``runner._IN_USE``).
* **Rows are written as they finish** (the whole CSV rewritten atomically after each submission), so
  an interrupted run keeps what it graded; ``--resume`` skips the files already in the CSV. SIGINT
  and SIGTERM stop the run after killing the current verdict process.
* The CSV imports into a gradebook: one row per submission (student, notebook, points per exercise,
  total, max, status, file, notes); no cell can become a spreadsheet formula. ``--details`` writes
  the statuses and the checker's messages as JSON. At the end the teacher gets a summary of the
  results and the commonest failure messages per exercise.
"""

from __future__ import annotations

import csv
import io
import json
import os
import queue
import signal
import stat
import sys
import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import masters as M
from . import sandbox
from .submitted import MAX_BYTES, MAX_DEPTH, NotRegular, cell, escape, file_stamp, number, read_bytes, too_deep

STATUSES = ("passed", "failed", "not attempted", "error", "timed out", "missing")
FIXED = ["student", "notebook"]
TRAILING = ["total", "max", "status", "file", "notes"]
SKIPPED_DIRS = {".ipynb_checkpoints", "__pycache__", ".git"}


@dataclass
class Result:
    """One row: a file of the folder, and what its exercises earned."""

    file: str  # path relative to the folder graded (shown escaped)
    student: str
    status: str = "graded"  # graded / empty file / broken JSON / not a notebook / symlink ... / unreadable ...
    notebook: str = ""  # the master it was matched to
    checks: dict = field(default_factory=dict)  # key -> status
    messages: dict = field(default_factory=dict)  # key -> checker's message
    points: dict = field(default_factory=dict)  # key -> points earned
    max_points: float | None = None
    notes: list = field(default_factory=list)
    seconds: float = 0.0

    @property
    def total(self) -> float:
        return sum(self.points.values())


@dataclass
class Entry:
    """A file found in the folder, read once at the start."""

    path: Path
    rel: str
    student: str
    status: str = "graded"
    notes: list = field(default_factory=list)
    nb: dict | None = None
    raw: bytes | None = None  # the bytes read at listing time, the only time the file is opened
    stamp: tuple = ()  # (inode, size, mtime) when it was read: a change afterwards is noted


# ----------------------------------------------------------------------------------------------
# Finding and reading the files


NBGRADER_MARKS = ("nbgrader_config.py", "gradebook.db")  # what marks the root of an nbgrader course
NBGRADER_BOOKKEEPING = {"timestamp.txt"}  # nbgrader's own files in submitted/<student>/<assignment>/


def _student_of(rel: str) -> str:
    parts = Path(rel).parts
    return parts[0] if len(parts) > 1 else Path(rel).stem


def _nbgrader_submitted(root: str) -> str | None:
    """The ``submitted`` folder of an nbgrader course root (``submitted/<student>/<assignment>/*.ipynb``),
    or None when ``root`` is not one. Only that folder is graded: nbgrader's own ``source``, ``release``,
    ``autograded`` and ``feedback`` folders hold the teacher's and the graded copies."""
    submitted = os.path.join(root, "submitted")
    if os.path.isdir(submitted) and any(os.path.exists(os.path.join(root, m)) for m in NBGRADER_MARKS):
        return submitted
    return None


def _inside(path: str, roots: list[str]) -> str | None:
    for root in roots:
        if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
            return root
    return None


def discover(paths, exclude=()) -> tuple[list[Entry], list[str]]:
    """Every file under ``paths`` as an :class:`Entry` (nothing dropped), and the folders graded."""
    exclude = {os.path.realpath(e) for e in exclude if e}
    roots, listed = [], []
    paths = [_nbgrader_submitted(os.path.realpath(raw)) or raw if Path(raw).is_dir() else raw for raw in paths]
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            roots.append(os.path.realpath(p))
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            root = os.path.realpath(p)
            nbgrader = os.path.basename(root) == "submitted"
            for folder, dirs, files in os.walk(root, followlinks=False):
                dirs.sort()
                kept = []
                for d in dirs:
                    full = os.path.join(folder, d)
                    if d in SKIPPED_DIRS:
                        continue
                    if os.path.islink(full):
                        files.append(d)  # a symlinked folder: reported, not followed
                        continue
                    if d.lower().endswith(".ipynb"):
                        rel = os.path.relpath(full, root)
                        listed.append(Entry(Path(full), rel, _student_of(rel), "a folder, not a notebook",
                                            ["a folder named like a notebook; the files in it have rows of their own"]))
                    kept.append(d)
                dirs[:] = kept
                for name in sorted(files):
                    full = os.path.join(folder, name)
                    if os.path.realpath(full) in exclude and not os.path.islink(full):
                        continue
                    if nbgrader and name in NBGRADER_BOOKKEEPING and folder != root:
                        continue
                    listed.append(_entry(Path(full), os.path.relpath(full, root), roots))
        else:
            listed.append(_entry(p, p.name, roots, given=True))
    return listed, roots


def _entry(path: Path, rel: str, roots: list[str], given: bool = False) -> Entry:
    entry = Entry(path, rel, _student_of(rel))
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        entry.status = "not found"
        return entry
    except OSError as exc:
        entry.status, entry.notes = "unreadable", [exc.strerror or str(exc)]
        return entry
    if stat.S_ISLNK(info.st_mode):
        target = os.path.realpath(path)
        root = _inside(target, roots)
        if not os.path.exists(target):
            entry.status = "broken symlink"
        elif os.path.isdir(target):
            entry.status = "symlink to a folder (not followed)"
        elif root is None and not given:
            entry.status = "symlink out of the folder (not followed)"
        elif root is not None:
            entry.status = "symlink (not graded)"
            entry.notes.append(f"points to {escape(os.path.relpath(target, root))}, which has its own row")
        else:  # a symlink named on the command line: the teacher chose it
            entry.notes.append(f"a symlink to {escape(target)}")
            return _read(entry, Path(target))
        return entry
    if not stat.S_ISREG(info.st_mode):
        entry.status = "not a regular file"
        return entry
    return _read(entry, path)


def _read(entry: Entry, path: Path) -> Entry:
    try:
        raw, entry.stamp = read_bytes(path)
    except NotRegular:
        entry.status = "not a regular file"
        return entry
    except OSError as exc:
        entry.status, entry.notes = "unreadable", [exc.strerror or str(exc)]
        return entry
    if len(raw) > MAX_BYTES:
        entry.status = f"too large (over {MAX_BYTES // (1024 * 1024)} MB)"
        return entry
    odd = not path.name.endswith(".ipynb")
    if not raw.strip():
        entry.status = "empty file"
        return entry
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        entry.status = "not a notebook" if odd else "broken JSON"
        entry.notes.append("not UTF-8 text")
        return entry
    except ValueError as exc:
        entry.status = "not a notebook" if odd else "broken JSON"
        entry.notes.append(escape(str(exc).splitlines()[0][:120]))
        return entry
    except RecursionError:
        data = None
    if data is None or too_deep(data):
        entry.status = "not a notebook" if odd else "broken JSON"
        entry.notes.append(f"nested more than {MAX_DEPTH} levels deep")
        return entry
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        entry.status = "not a notebook"
        entry.notes.append("JSON without a list of cells")
        return entry
    if odd:
        entry.notes.append(f"graded although its name does not end in .ipynb ({escape(path.suffix or 'no extension')})")
    entry.nb, entry.raw = data, raw
    return entry


# ----------------------------------------------------------------------------------------------
# Grading one submission


def plan_jobs(master: M.Master, cells: list[M.Cell]):
    """``[(exercise, student cell or None)]`` in the master's order."""
    return [(ex, M.exercise_cell(master, ex, cells)) for ex in master.exercises]


def grade_entry(entry: Entry, masters: list[M.Master], runner, log=None) -> Result:
    """Grade one file (its exercises each in a verdict process). Never raises for the file's sake."""
    result = Result(escape(entry.rel), escape(entry.student), entry.status, notes=list(entry.notes))
    start = time.monotonic()
    if entry.nb is None:
        return result
    cells = M.code_cells(entry.nb)
    master, how = M.match(masters, cells, entry.path.name)
    if master is None:
        result.status = "no course notebook matches"
        result.notes.append("no exercise of the course was found in it")
        return result
    result.notebook, result.max_points = master.name, master.max_points
    if how and "cell metadata" not in how:
        result.notes.append(f"matched to {master.name} by {how}")
    copy = entry.raw
    try:
        changed = file_stamp(os.stat(entry.path)) != entry.stamp
    except OSError:
        changed = True
    if changed:
        result.notes.append("the file changed after the grader read it; graded as it was read")
    planned = plan_jobs(master, cells)
    runnable = []  # earlier exercise cells that ran to a verdict (a cell that timed out is left out)
    for ex, found in planned:
        if found is None:
            result.checks[ex.key], result.points[ex.key] = "missing", 0
            result.messages[ex.key] = f"no exercise cell for {ex.name}"
            continue
        chosen = [c for c in runnable if c.index != found.index] + [found]
        chosen.sort(key=lambda c: c.index)
        job = {"key": ex.key, "name": ex.name, "setup": master.setup,
               "cells": [{"source": c.source, "label": f"exercise cell {_key_of(c, planned)}",
                          "graded": c is found} for c in chosen]}
        outcome = runner.run(job, copy, entry.path.name)
        result.checks[ex.key] = outcome.status
        result.points[ex.key] = ex.points if outcome.status == "passed" else 0
        result.messages[ex.key] = outcome.message
        if outcome.notes:
            result.notes.append(f"{ex.key}: {outcome.notes}")
        if outcome.output_bytes > runner.output_cap:
            result.notes.append(f"{ex.key}: printed {outcome.output_bytes} bytes (kept the first {runner.output_cap})")
        if outcome.status != "timed out" and found not in runnable:
            runnable.append(found)
        elif outcome.status == "timed out":
            result.notes.append(f"{ex.key}: timed out; its cell is left out of the later exercises")
        if log is not None:
            log(ex.key, outcome)
    result.seconds = time.monotonic() - start
    return result


def _key_of(cell_, planned) -> str:
    for ex, found in planned:
        if found is cell_:
            return ex.key
    return "?"


# ----------------------------------------------------------------------------------------------
# The gradebook


def columns_of(masters_used: list[M.Master]) -> list[str]:
    keys = []
    for m in masters_used:
        keys += [e.key for e in m.exercises if e.key not in keys]
    return keys


def row_of(r: Result, keys: list[str]) -> dict:
    row = {"student": r.student, "notebook": r.notebook}
    for k in keys:
        row[k] = number(r.points[k]) if k in r.points else ""
    notes = list(r.notes)
    for k, status in r.checks.items():
        if status in ("failed", "error", "timed out"):
            first = (r.messages.get(k) or "").strip().splitlines()
            notes.append(f"{k}: {status}" + (f" ({first[0][:160]})" if first else ""))
        elif status != "passed":
            notes.append(f"{k}: {status}")
    row.update({"total": number(r.total), "max": number(r.max_points), "status": r.status, "file": r.file,
                "notes": "; ".join(notes)})
    return row


def safe_row(row: dict, keys: list[str]) -> dict:
    """The row with every text cell made safe (numbers are written as they are)."""
    return {h: (v if h in keys or h in ("total", "max") else cell(v)) for h, v in row.items()}


def write_csv(path, rows: list[dict], keys: list[str]) -> None:
    """Write ``rows`` (already safe) atomically: a temporary file, flushed, renamed over the old one."""
    header = FIXED + keys + TRAILING
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([row.get(h, "") or "" for h in header])
    _atomic_write(Path(path), buffer.getvalue())


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8", newline="") as handle:
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


def format_table(results: list[Result], keys: list[str]) -> str:
    header = ["file", "notebook", *keys, "score", "status"]
    rows = []
    for r in results:
        score = f"{number(r.total)}/{number(r.max_points)}" if r.max_points is not None else "-"
        rows.append([r.file, r.notebook or "-", *[r.checks.get(k, "") for k in keys], score, r.status])
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(header, widths)).rstrip(), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines)


def summary(results: list[Result], keys: list[str], top: int = 3) -> str:
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
                first = (r.messages.get(k) or "").strip().splitlines()
                messages[escape(first[0][:120]) if first else r.checks[k]] += 1
        for message, n in messages.most_common(top):
            lines.append(f"      {n} x {message}")
    statuses = Counter(r.status for r in results if r.status != "graded")
    if statuses:
        lines.append("Files not graded: " + ", ".join(f"{n} {s}" for s, n in statuses.most_common()))
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# The run


UNTRUSTED = (
    "encoder-course grade: not run. As an ordinary user without bubblewrap, each submission's code would run "
    "as you: it could read your files (other submissions, the solutions, your home folder), reach the network "
    "and leave processes behind. Install bubblewrap (the package bubblewrap: each exercise then runs in its "
    "own namespaces, seeing only Python and the course), grade as root (each exercise then runs as 'nobody' "
    "in its own namespaces), or with --isolate container (Docker or Podman), or, if you trust every file you "
    "grade, pass --trust-submissions.\n")


class Interrupted(BaseException):
    """SIGINT or SIGTERM to the grader (a BaseException, as KeyboardInterrupt: no `except Exception` on the
    way, such as the runner's "could not start" handler, may turn it into a graded error)."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def grade(paths, *, csv_path="grades.csv", details_path=None, timeout: float = 60.0, master_dir=None,
          resume: bool = False, isolate: str = "process", memory_mb: int = 4096, out=None,
          image: str | None = None, runner_options: dict | None = None, jobs: int = 0,
          trust: bool = False) -> tuple[list[Result], int]:
    """Grade every file under ``paths``; returns the results and the exit code (0, 2, or 128+signal).

    ``jobs`` submissions are graded at once (0: one per core), each by a runner of its own. Without
    root, bubblewrap or a container, the learner's code would run as the teacher: that needs ``trust``
    (``--trust-submissions``), or the run stops before it starts.
    """
    from .runner import RunnerError, VerdictRunner

    out = out or sys.stdout
    master_dir = Path(master_dir) if master_dir else M.default_master_dir()
    if master_dir is None:
        out.write("no master notebooks: pass --master DIR (the folder of the solution notebooks)\n")
        return [], 2
    try:
        masters = M.load_masters(master_dir)
    except (OSError, ValueError, KeyError) as exc:
        out.write(f"cannot read the master notebooks in {master_dir}: {exc}\n")
        return [], 2
    for target in (csv_path, details_path):
        if target and not Path(target).resolve().parent.is_dir():
            out.write(f"cannot write {escape(target)}: its folder does not exist\n")
            return [], 2
    entries, roots = discover(paths, exclude=[csv_path, details_path])
    if not entries:
        out.write("no files found to grade\n")
        return [], 2
    as_user = isolate == "process" and (os.name != "posix" or os.geteuid() != 0)
    options = runner_options or {}
    if as_user and not trust and options.get("drop_privileges", True) and any(e.nb is not None for e in entries) \
            and not (options.get("allow_namespaces", True) and sandbox.find_bwrap()):
        out.write(UNTRUSTED)
        return [], 2
    kept_rows = read_csv(csv_path) if resume and csv_path else []
    done = {row.get("file") for row in kept_rows}
    todo = [e for e in entries if cell(e.rel) not in done]
    matched = []
    for e in todo:
        if e.nb is not None:
            m, _ = M.match(masters, M.code_cells(e.nb), e.path.name)
            if m is not None and m not in matched:
                matched.append(m)
    keys = columns_of(sorted(matched, key=lambda m: m.name))
    known = columns_of(masters)
    for row in kept_rows:  # keep the earlier run's exercise columns too (in course order)
        for k in known:
            if k in row and k not in keys:
                keys.append(k)
    keys.sort(key=known.index)
    results: list[Result] = []
    code = 0
    options = dict(runner_options or {})
    if image:
        options["image"] = image
    # Hidden from every verdict process: the folders graded and those of files named one by one (a
    # folder that holds the Python environment is not hidden, but each submission in it is), the
    # masters, and the gradebook's folder.
    given = sorted({str(e.path.resolve().parent) for e in entries if e.nb is not None})
    hide = [*roots, *given, str(master_dir)] + [str(Path(p).resolve().parent) for p in (csv_path, details_path) if p]
    hide_files = [str(p) for p in (csv_path, details_path) if p] + [str(e.path) for e in entries if e.nb is not None]
    graded = sum(e.nb is not None for e in todo)
    jobs = max(1, min(jobs or os.cpu_count() or 1, graded or 1))
    runners = [VerdictRunner(mode=isolate, timeout=timeout, memory_mb=memory_mb, hide=hide, hide_files=hide_files,
                             setups=[s for m in matched for s in m.setup], **options) for _ in range(jobs)]
    free: queue.Queue = queue.Queue()
    for r in runners:
        free.put(r)

    def work(entry: Entry) -> Result:
        r = free.get()
        try:
            return grade_entry(entry, masters, r)
        finally:
            free.put(r)

    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="grade")
    pending: dict = {}  # future -> entry, while it is being graded
    previous = {}

    def stop(signum, frame):
        for sig in previous:  # one is enough: the wrap-up (killing, saving, printing) is not interrupted
            signal.signal(sig, signal.SIG_IGN)
        raise Interrupted(signum)

    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[sig] = signal.signal(sig, stop)
        except (ValueError, OSError):  # not the main thread
            pass
    try:
        if graded:
            for r in runners:
                r.start()
            plan = runners[0].plan
            out.write(f"verdict processes: {plan.describe()}" + (f", {jobs} at once" if jobs > 1 else "") + "\n"
                      if plan else "")
            for warning in plan.warnings if plan else []:
                out.write(f"warning: {warning}\n")
        out.write(f"{len(todo)} file(s) to grade" + (f", {len(entries) - len(todo)} already in the CSV"
                                                      if resume else "") + "\n")
        pending = {pool.submit(work, entry): entry for entry in todo}
        while pending:
            done, _ = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in sorted(done, key=lambda f: todo.index(pending[f])):
                entry = pending.pop(future)
                res = future.result()
                results.append(res)
                out.write(f"[{len(results)}/{len(todo)}] {escape(entry.rel)} ... {res.status}"
                          + (f" {number(res.total)}/{number(res.max_points)}" if res.max_points else "")
                          + f" ({res.seconds:.1f} s)\n")
                out.flush()
                _save(csv_path, details_path, kept_rows, results, keys)
    except Interrupted as exc:
        code = 128 + exc.signum
        out.write(f"\ninterrupted ({exc}): {len(results)} of {len(todo)} file(s) graded and saved; "
                  "run again with --resume to grade the rest\n")
    except RunnerError as exc:
        code = 2
        out.write(f"\nencoder-course grade: {exc}\n")
    finally:
        for future in pending:
            future.cancel()
        for r in runners:  # kills what is still running: its worker gets its outcome and returns
            r.interrupt()
        pool.shutdown(wait=True, cancel_futures=True)
        for r in runners:
            r.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    order = {escape(e.rel): i for i, e in enumerate(todo)}
    results.sort(key=lambda r: order.get(r.file, len(order)))
    if results:
        out.write("\n" + format_table(results, keys) + "\n\n" + summary(results, keys) + "\n")
    if csv_path and (results or kept_rows):
        _save(csv_path, details_path, kept_rows, results, keys)
        out.write(f"\nwrote {escape(csv_path)}" + (f" and {escape(details_path)}" if details_path else "") + "\n")
    return results, code


def _save(csv_path, details_path, kept_rows, results, keys) -> None:
    if csv_path:
        write_csv(csv_path, kept_rows + [safe_row(row_of(r, keys), keys) for r in results], keys)
    if details_path:
        _atomic_write(Path(details_path), json.dumps([asdict(r) for r in results], indent=1, ensure_ascii=False))
