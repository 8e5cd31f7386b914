"""The teacher's view of a graded class (``encoder-course report GRADES``): one offline HTML page and the marks
in the CSV layouts that Canvas and Moodle import.

It reads what ``encoder-course grade`` wrote: the gradebook CSV and the details JSON beside it (each
exercise's status, the checker's message and the stable id of the mistake it names, ``checks/mistakes.py``).
The page has the pass rate per exercise, the commonest mistakes per exercise with the message learners saw,
a learner x exercise grid, run times and the files the grader could not read. It requests nothing: styles
and figures are inline.
"""

from __future__ import annotations

import csv
import html
import io
import json
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from encoder_course.checks.registry import EXERCISES

#: How a check's status is shown: (label, symbol, CSS class). Never colour alone: each has a word and a sign.
SHOWN = {"passed": ("passed", "✓", "ok"), "failed": ("wrong", "✗", "bad"),
         "not attempted": ("not attempted", "–", "none"), "timed out": ("timed out", "◔", "bad"),
         "error": ("error", "!", "bad"), "missing": ("no exercise cell", "∅", "none")}
FIXED = ("student", "notebook", "total", "max", "status", "file", "notes")


def details_path_for(csv_path) -> Path:
    """Where ``grade`` writes the details by default: ``grades.csv`` -> ``grades.details.json``."""
    path = Path(csv_path)
    return path.with_name(path.stem + ".details.json")


@dataclass
class Class:
    """A graded class as the report sees it."""

    rows: list = field(default_factory=list)  # the gradebook's rows (dicts, as in the CSV)
    details: dict = field(default_factory=dict)  # file -> the grader's details of that file
    keys: list = field(default_factory=list)  # the exercises graded, in the course's order

    @property
    def graded(self) -> list:
        return [r for r in self.rows if r.get("status") == "graded"]

    def status(self, row: dict, key: str) -> str | None:
        """An exercise's status in a row (from the details; from the points alone when there are none)."""
        found = self.details.get(row.get("file"), {}).get("checks", {})
        if key in found:
            return found[key]
        if row.get(key, "") == "":
            return None
        return "passed" if _number(row[key]) > 0 else "failed"


def _number(text) -> float:
    try:
        return float(str(text).lstrip("'"))
    except ValueError:
        return 0.0


def load(csv_path, details_path=None) -> Class:
    """The class graded into ``csv_path`` (and its details file, when there is one)."""
    with open(csv_path, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        rows, columns = list(reader), list(reader.fieldnames or [])
    order = list(EXERCISES)
    keys = sorted((c for c in columns if c not in FIXED), key=lambda k: order.index(k) if k in order else len(order))
    path = Path(details_path) if details_path else details_path_for(csv_path)
    details = {}
    if path.is_file():
        for entry in json.loads(path.read_text(encoding="utf-8")):
            details[entry.get("file")] = entry
    return Class(rows, details, keys)


# ----------------------------------------------------------------------------------------------
# Gradebook exports


def _marks(klass: Class) -> tuple[list[str], dict, dict]:
    """(notebooks, {student: {notebook: points}}, {notebook: max points}) of the graded rows."""
    notebooks, marks, most = [], defaultdict(dict), {}
    for r in klass.graded:
        nb = r["notebook"]
        if nb not in notebooks:
            notebooks.append(nb)
        marks[r["student"]][nb] = max(marks[r["student"]].get(nb, 0.0), _number(r["total"]))
        most[nb] = max(most.get(nb, 0.0), _number(r["max"]))
    return sorted(notebooks), marks, most


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def canvas_csv(klass: Class) -> str:
    """Canvas's gradebook import: Student, ID, SIS User ID, SIS Login ID, Section, then one column per notebook
    (a column Canvas does not know becomes a new assignment), and a "Points Possible" row first. The student
    (the submission's folder name) goes in Student and SIS Login ID: Canvas matches a row by either."""
    notebooks, marks, most = _marks(klass)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *notebooks])
    writer.writerow(["    Points Possible", "", "", "", "", *(_fmt(most[nb]) for nb in notebooks)])
    for student in sorted(marks):
        writer.writerow([student, "", "", student, "", *(_fmt(marks[student][nb]) if nb in marks[student] else ""
                                                         for nb in notebooks)])
    return out.getvalue()


def moodle_csv(klass: Class) -> str:
    """Moodle's "Import grades, CSV file": a Username column (map it to the user field your folders are named
    by), then a grade and a feedback column per notebook (map each to its grade item, or to a new one)."""
    notebooks, marks, _ = _marks(klass)
    feedback = defaultdict(dict)
    for r in klass.graded:
        entry = klass.details.get(r.get("file"), {})
        wrong = []
        for k, status in entry.get("checks", {}).items():
            if status != "passed":
                first = (str(entry.get("messages", {}).get(k, "")).strip().splitlines() or [""])[0][:200]
                wrong.append(f"{k}: {SHOWN.get(status, (status,))[0]}" + (f" ({first})" if status == "failed" else ""))
        feedback[r["student"]][r["notebook"]] = "; ".join(wrong) or "all exercises passed"
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["Username", *(c for nb in notebooks for c in (nb, f"{nb} feedback"))])
    for student in sorted(marks):
        writer.writerow([student, *(c for nb in notebooks for c in (
            (_fmt(marks[student][nb]), feedback[student].get(nb, "")) if nb in marks[student] else ("", "")))])
    return out.getvalue()


# ----------------------------------------------------------------------------------------------
# The page

STYLE = """
:root { color-scheme: light; --ok: #0a6b2d; --bad: #a4161a; --none: #555; --line: #ccc; }
body { font: 16px/1.5 system-ui, sans-serif; margin: 0 auto; max-width: 70rem; padding: 1rem; color: #1a1a1a;
       background: #fff; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.3rem; margin-top: 2rem; } h3 { font-size: 1.05rem; }
table { border-collapse: collapse; margin: .5rem 0; }
th, td { border: 1px solid var(--line); padding: .25rem .5rem; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.scroll { overflow-x: auto; max-width: 100%; }
.ok { color: var(--ok); } .bad { color: var(--bad); } .none { color: var(--none); }
.grid td { white-space: nowrap; }
details { margin: .25rem 0 .75rem; } summary { cursor: pointer; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f4f4f4; padding: .5rem; margin: .25rem 0; }
code { overflow-wrap: anywhere; }
svg text { font: 13px system-ui, sans-serif; fill: #1a1a1a; }
"""


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _bars(rates: list[tuple[str, int, int]]) -> str:
    """An inline SVG bar chart of the pass rate per exercise (the same numbers are in the table under it)."""
    width, row, left = 640, 26, 230
    height = row * len(rates) + 10
    parts = [f'<svg role="img" aria-labelledby="bars-title" viewBox="0 0 {width} {height}" width="100%" '
             f'style="max-width:{width}px">', '<title id="bars-title">Pass rate per exercise</title>']
    for i, (key, passed, total) in enumerate(rates):
        y = 5 + i * row
        share = passed / total if total else 0.0
        parts.append(f'<text x="{left - 8}" y="{y + 16}" text-anchor="end">{_e(key)}</text>')
        parts.append(f'<rect x="{left}" y="{y + 3}" width="{(width - left - 70) * share:.1f}" height="{row - 8}" '
                     'fill="#2f6fb0"/>')
        parts.append(f'<text x="{left + (width - left - 70) * share + 6:.1f}" y="{y + 16}">{share:.0%}</text>')
    return "".join(parts) + "</svg>"


def build_html(klass: Class, title: str = "Class report") -> str:
    graded, keys = klass.graded, klass.keys
    students = sorted({r["student"] for r in klass.rows})
    body = [f"<h1>{_e(title)}</h1>",
            f"<p>{len(klass.rows)} file(s) from {len(students)} learner(s); {len(graded)} graded, "
            f"{len(klass.rows) - len(graded)} the grader could not grade. "
            + ("" if klass.details else "No details file was found: statuses are read from the points alone, "
               "and no mistakes are named. ") + "</p>"]
    # pass rates
    rates = []
    for k in keys:
        statuses = [s for s in (klass.status(r, k) for r in graded) if s is not None]
        if statuses:
            rates.append((k, sum(s == "passed" for s in statuses), len(statuses), Counter(statuses)))
    body.append('<h2 id="pass-rates">Pass rate per exercise</h2>')
    if rates:
        body.append(_bars([(k, p, n) for k, p, n, _ in rates]))
        head = "".join(f'<th scope="col">{_e(SHOWN[s][0])}</th>' for s in SHOWN)
        lines = []
        for k, p, n, counts in rates:
            cells = "".join(f'<td class="num">{counts.get(s, 0)}</td>' for s in SHOWN)
            lines.append(f'<tr><th scope="row"><code>{_e(k)}</code></th><td class="num">{p / n:.0%}</td>{cells}</tr>')
        body.append('<div class="scroll" role="region" aria-label="Pass rates" tabindex="0"><table>'
                    f'<caption>Submissions per exercise and status</caption><tr><th scope="col">exercise</th>'
                    f'<th scope="col">pass rate</th>{head}</tr>{"".join(lines)}</table></div>')
    else:
        body.append("<p>No exercise was graded.</p>")
    # mistakes
    body.append('<h2 id="mistakes">Commonest mistakes</h2>')
    found_any = False
    for k in keys:
        seen, example = Counter(), {}
        for r in graded:
            entry = klass.details.get(r.get("file"), {})
            mid = entry.get("mistakes", {}).get(k)
            if mid and klass.status(r, k) not in ("passed", "not attempted", "missing"):
                seen[mid] += 1
                example.setdefault(mid, entry.get("messages", {}).get(k, ""))
        if not seen:
            continue
        found_any = True
        body.append(f"<h3><code>{_e(k)}</code></h3><ol>")
        for mid, n in seen.most_common(5):
            first = (example[mid].strip().splitlines() or [""])[0]
            body.append(f"<li><strong>{n}</strong> × <code>{_e(mid)}</code>: {_e(first[:200])}<details><summary>"
                        f"The whole message learners saw</summary><pre>{_e(example[mid][:3000])}</pre></details></li>")
        body.append("</ol>")
    if not found_any:
        body.append("<p>No mistake was named.</p>")
    # grid
    body.append('<h2 id="grid">Learners and exercises</h2>')
    legend = ", ".join(f'<span class="{c}">{sym}</span> {_e(label)}' for label, sym, c in SHOWN.values())
    body.append(f"<p>{legend}; empty: not submitted.</p>")
    head = "".join(f'<th scope="col"><code>{_e(k)}</code></th>' for k in keys)
    lines = []
    for student in students:
        mine = [r for r in graded if r["student"] == student]
        cells = []
        for k in keys:
            states = [s for s in (klass.status(r, k) for r in mine) if s is not None]
            state = "passed" if "passed" in states else states[-1] if states else None
            if state is None:
                cells.append("<td></td>")
            else:
                label, sym, css = SHOWN.get(state, (state, "?", "bad"))
                cells.append(f'<td class="{css}">{sym} {_e(label)}</td>')
        total = sum(_number(r["total"]) for r in mine)
        most = sum(_number(r["max"]) for r in mine)
        lines.append(f'<tr><th scope="row">{_e(student)}</th><td class="num">{_fmt(total)} / {_fmt(most)}</td>'
                     f'{"".join(cells)}</tr>')
    stuck = [st for st in students if any(r["student"] == st for r in graded)
             and not any(klass.status(r, k) == "passed" for r in graded if r["student"] == st for k in keys)]
    body.append(f"<p>Nothing passed yet ({len(stuck)}): {_e(', '.join(stuck))}.</p>" if stuck else "")
    body.append('<div class="scroll" role="region" aria-label="Learners and exercises" tabindex="0">'
                '<table class="grid"><caption>Each learner\'s result per exercise</caption>'
                f'<tr><th scope="col">learner</th><th scope="col">points</th>{head}</tr>{"".join(lines)}</table></div>')
    # times
    body.append('<h2 id="times">Run times</h2>')
    times = defaultdict(list)
    for entry in klass.details.values():
        for k, seconds in entry.get("times", {}).items():
            times[k].append(float(seconds))
    per_file = [float(e["seconds"]) for e in klass.details.values() if e.get("seconds")]
    if times:
        lines = "".join(f'<tr><th scope="row"><code>{_e(k)}</code></th><td class="num">{len(times[k])}</td>'
                        f'<td class="num">{statistics.median(times[k]):.2f}</td>'
                        f'<td class="num">{max(times[k]):.2f}</td></tr>' for k in keys if times[k])
        body.append('<div class="scroll" role="region" aria-label="Run times" tabindex="0"><table>'
                    '<caption>Seconds per exercise (checker and learner\'s process together)</caption>'
                    '<tr><th scope="col">exercise</th><th scope="col">runs</th><th scope="col">median</th>'
                    f'<th scope="col">longest</th></tr>{lines}</table></div>')
        body.append(f"<p>Per file: median {statistics.median(per_file):.2f} s, longest {max(per_file):.2f} s, "
                    f"{sum(per_file):.1f} s in all.</p>" if per_file else "")
    else:
        body.append("<p>No times were recorded (no details file).</p>")
    # files not graded
    body.append('<h2 id="unread">Files the grader could not grade</h2>')
    bad = [r for r in klass.rows if r.get("status") != "graded"]
    if bad:
        lines = "".join(f'<tr><td><code>{_e(r.get("file", ""))}</code></td><td>{_e(r.get("status", ""))}</td>'
                        f'<td>{_e(r.get("notes", ""))}</td></tr>' for r in bad)
        body.append('<div class="scroll" role="region" aria-label="Files not graded" tabindex="0"><table>'
                    '<caption>Each has a row with 0 points in the gradebook</caption><tr><th scope="col">file</th>'
                    f'<th scope="col">why</th><th scope="col">notes</th></tr>{lines}</table></div>')
    else:
        body.append("<p>None: every file was read and graded.</p>")
    return ('<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_e(title)}</title><style>{STYLE}</style></head>"
            f'<body><main>{"".join(body)}</main></body></html>\n')


def report(csv_path, *, details_path=None, out="report.html", canvas=None, moodle=None) -> list[str]:
    """Write the page (and the exports asked for); the paths written."""
    klass = load(csv_path, details_path)
    written = []
    pages = {out: lambda: build_html(klass, f"Class report: {Path(csv_path).name}"), canvas: lambda: canvas_csv(klass),
             moodle: lambda: moodle_csv(klass)}
    for path, make in pages.items():
        if path:
            Path(path).write_text(make(), encoding="utf-8")
            written.append(str(path))
    return written
