"""Shared by the checker catalogues: collect candidates with decorators, and judge them."""

from __future__ import annotations

import pytest

from encoder_course.checks import ExerciseError


class Catalogue:
    """Wrong answers, each with the phrase its message must contain, and right answers."""

    def __init__(self):
        self.wrong: list = []  # (id, checker, candidate, description, phrase)
        self.right: list = []  # (id, checker, candidate, description)

    def add_wrong(self, cid, checker, desc, words):
        def deco(candidate):
            self.wrong.append((cid, checker, candidate, desc, words))
            return candidate
        return deco

    def add_right(self, cid, checker, desc):
        def deco(candidate):
            self.right.append((cid, checker, candidate, desc))
            return candidate
        return deco

    def wrong_params(self):
        return pytest.mark.parametrize("checker, candidate, words", [(w[1], w[2], w[4]) for w in self.wrong],
                                       ids=[w[0] for w in self.wrong])

    def right_params(self):
        return pytest.mark.parametrize("checker, candidate", [(r[1], r[2]) for r in self.right],
                                       ids=[r[0] for r in self.right])

    def assert_sizes(self, wrong: int, right: int):
        assert len(self.wrong) >= wrong and len(self.right) >= right
        ids = [w[0] for w in self.wrong] + [r[0] for r in self.right]
        assert len(set(ids)) == len(ids), "every candidate needs its own id"


def assert_named(checker, candidate, words, capsys):
    """The wrong answer is rejected with an ExerciseError naming its mistake; nothing is printed."""
    with pytest.raises(ExerciseError) as info:
        checker(candidate)
    message = str(info.value)
    assert words in message, message
    assert "The checker could not use" not in message, message
    assert capsys.readouterr().out == ""


def assert_passes(checker, candidate, capsys):
    checker(candidate)
    assert capsys.readouterr().out.startswith("✓ ")
