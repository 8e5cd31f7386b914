"""Stable ids of the mistakes the checkers name, for the grader's details and the teacher's report.

``encoder_course/data/mistakes.json`` gives each catalogued mistake an id, ``<exercise key>/<name>``, and the
phrase its messages contain (the catalogue tests in ``tests/checks`` hold every message to its phrase, so an
id follows its mistake when the wording around the phrase changes). ``mistake_id(key, message)`` is the id
of the mistake a message names first; a message that names none still gets one of the general ids below. Ids
are never reused or dropped: one that no message gives any more is moved to ``retired``. Plain data: importing
this loads neither torch nor a checker.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

FILE = Path(__file__).resolve().parents[1] / "data" / "mistakes.json"

#: What a message says when it names no catalogued mistake, in order: (name, pattern).
GENERAL = (
    ("not-attempted", r"not attempted yet"),
    ("timed-out", r"no verdict within|took more than .* of processor time|time limit"),
    ("too-much-memory", r"MB of memory"),
    ("uses-the-course-s-answer", r"calls the course's own|uses the course's own"),
    ("not-defined", r"is not defined after running the exercise cell"),
    ("setup-failed", r"the course's setup cell failed"),
    ("no-exercise-cell", r"no exercise cell for"),
    ("raised-an-error", r"\braised [A-Za-z_.]*(Error|Exception|Interrupt|Exit)\b"),
    ("unreadable-answer", r"could not use what your|cannot be checked"),
    ("other", r""),
)


@functools.cache
def table() -> dict:
    """The ids file: ``{"mistakes": {id: phrase}, "retired": {id: why}}``."""
    return json.loads(FILE.read_text(encoding="utf-8"))


@functools.cache
def _phrases(key: str) -> list[tuple[str, str]]:
    prefix = key + "/"
    return [(mid, phrase) for mid, phrase in table()["mistakes"].items() if mid.startswith(prefix)]


def mistake_ids(key: str, message: str) -> list[str]:
    """Every catalogued mistake of exercise ``key`` that ``message`` names, the one it names first first."""
    found = [(message.find(phrase), -len(phrase), mid) for mid, phrase in _phrases(key) if phrase in message]
    return [mid for _, _, mid in sorted(found)]


def mistake_id(key: str, message: str) -> str:
    """The id of the mistake ``message`` (a checker's or the grader's message on exercise ``key``) names."""
    found = mistake_ids(key, message)
    if found:
        return found[0]
    return next(f"{key}/{name}" for name, pattern in GENERAL if re.search(pattern, message))


def general_ids(key: str) -> list[str]:
    return [f"{key}/{name}" for name, _ in GENERAL]
