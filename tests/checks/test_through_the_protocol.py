"""The grader's checker holds no learner object: the same verdicts through the plain-data protocol.

When a notebook is graded, the checker runs in a process of its own and reaches the learner's
function or class through ``remote.py`` (stand-ins, mirrors of modules, gradients linked back) and
``worker.py`` (the learner's side). For the catalogue's answers, right and wrong, the verdict through
the protocol must be the verdict on the object itself, word for word. A sample runs here (every
fifth wrong answer, every fourth right one: about half a minute); ``ENCODER_COURSE_FULL_PROTOCOL=1`` runs
all of them (645 answers, about two minutes on two cores).
"""

from __future__ import annotations

import os

import pytest
from grading_helpers import through_protocol

from encoder_course import checks

from .catalogue import catalogues

FULL = os.environ.get("ENCODER_COURSE_FULL_PROTOCOL", "") not in ("", "0")


@pytest.mark.parametrize("module", sorted(catalogues()))
def test_the_verdict_through_the_protocol_is_the_verdict(module):
    catalogue = catalogues()[module]
    chosen = [w for i, w in enumerate(catalogue.wrong) if FULL or i % 5 == 0]
    chosen += [r for i, r in enumerate(catalogue.right) if FULL or i % 4 == 0]
    differ = []
    for cid, checker, candidate, *_ in chosen:
        key = checker.exercise.key
        local = checks.verdict(key, candidate)
        status, message, _notes = through_protocol(key, candidate)
        if (status, message) != (local.status, local.message):
            differ.append(f"{cid}: {local.status} -> {status}\n  {local.message[:200]}\n  {message[:200]}")
    assert not differ, "\n".join(differ)
    assert chosen
