"""The mistakes' ids are stable: every published id is still given or retired with a reason, every catalogued
mistake has one, and a message is read back to the id of the mistake it names."""

from __future__ import annotations

import re
from pathlib import Path

from encoder_course.checks import EXERCISES, mistakes

from .catalogue import catalogues

PUBLISHED = Path(__file__).with_name("published_mistake_ids.txt")


def _current() -> set:
    return set(mistakes.table()["mistakes"]) | {i for key in EXERCISES for i in mistakes.general_ids(key)}


def test_no_published_id_disappears_without_being_retired():
    published = set(PUBLISHED.read_text(encoding="utf-8").split())
    retired = mistakes.table()["retired"]
    gone = sorted(published - _current() - set(retired))
    assert not gone, f"ids removed without being retired (move them to 'retired' with the reason): {gone}"
    assert all(isinstance(why, str) and why.strip() for why in retired.values())
    assert not set(retired) & set(mistakes.table()["mistakes"]), "a retired id is never given again"
    new = sorted(_current() - published)
    assert not new, f"new ids: add them to {PUBLISHED.name} (they are published from now on): {new}"


def test_every_id_is_well_formed_and_every_catalogued_mistake_has_one():
    table = mistakes.table()["mistakes"]
    for mid, phrase in table.items():
        key, _, name = mid.partition("/")
        assert key in EXERCISES and re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name), mid
        assert name not in {n for n, _ in mistakes.GENERAL}, f"{mid} takes a general id's name"
        assert phrase.strip(), mid
    from encoder_course import checks

    key_of = {c: k for k, c in checks.CHECKERS.items()}
    phrases = {(mid.partition("/")[0], phrase) for mid, phrase in table.items()}
    missing = sorted({(key_of[w[1]], w[4]) for c in catalogues().values() for w in c.wrong} - phrases)
    assert not missing, f"catalogued mistakes without an id: {missing[:5]}"


def test_a_message_is_read_back_to_the_mistake_it_names_first():
    key = "scaled_dot_product_attention"
    table = mistakes.table()["mistakes"]
    axis = next(m for m, p in table.items() if m.startswith(key) and p == "softmax runs over the wrong axis")
    scale = next(m for m, p in table.items() if m.startswith(key) and p == "the scores are not scaled")
    message = "Your attention is not right yet: the scores are not scaled ..., and the softmax runs over the wrong axis"
    assert mistakes.mistake_ids(key, message)[:2] == [scale, axis]
    assert mistakes.mistake_id(key, message) == scale
    assert mistakes.mistake_id(key, "scaled_dot_product_attention: not attempted yet (replace ...)") \
        == f"{key}/not-attempted"
    assert mistakes.mistake_id(key, "Your scaled_dot_product_attention raised ZeroDivisionError for ...") \
        == f"{key}/raised-an-error"
    assert mistakes.mistake_id(key, "something nobody wrote") == f"{key}/other"
