"""The quiz of notebook 12: every question graded right, wrong and unanswered; bad input refused."""

import pytest

from encoder_course.quiz import QUESTIONS, Question, grade_quiz


def test_questions_are_well_formed():
    assert len(QUESTIONS) >= 8
    for q in QUESTIONS:
        assert isinstance(q, Question)
        assert len(q.options) >= 3 and len(set(q.options)) == len(q.options)
        assert 0 <= q.answer < len(q.options)
        assert q.text and q.explanation and q.see


@pytest.mark.parametrize("index", range(len(QUESTIONS)))
def test_each_question_right_wrong_and_unanswered(index):
    q = QUESTIONS[index]
    answers = [None] * len(QUESTIONS)
    answers[index] = q.answer
    item = grade_quiz(answers).items[index]
    assert item.status == "correct" and item.is_correct and item.chosen == q.answer
    assert item.feedback.startswith("Correct.") and q.see in item.feedback
    for wrong in range(len(q.options)):
        if wrong == q.answer:
            continue
        answers[index] = wrong
        item = grade_quiz(answers).items[index]
        assert item.status == "wrong" and not item.is_correct
        assert item.feedback.startswith("Not quite")
        assert q.options[q.answer].rstrip(".") in item.feedback and q.explanation in item.feedback
    answers[index] = None
    item = grade_quiz(answers).items[index]
    assert item.status == "unanswered" and item.chosen is None and item.feedback == "Not answered yet."


def test_scores_and_summary():
    n = len(QUESTIONS)
    right = [q.answer for q in QUESTIONS]
    results = grade_quiz(right)
    assert (results.score, results.answered, results.total) == (n, n, n)
    assert results.summary() == f"{n} / {n} correct"
    wrong = [(q.answer + 1) % len(q.options) for q in QUESTIONS]
    assert grade_quiz(wrong).score == 0
    empty = grade_quiz([None] * n)
    assert (empty.score, empty.answered) == (0, 0)
    assert empty.summary() == f"0 / {n} correct, {n} not answered yet"
    mixed = grade_quiz({0: QUESTIONS[0].answer, 1: (QUESTIONS[1].answer + 1) % len(QUESTIONS[1].options)})
    assert (mixed.score, mixed.answered) == (1, 2)
    assert mixed.items[2].status == "unanswered"


@pytest.mark.parametrize(
    "answers, error, match",
    [
        ([0] * (len(QUESTIONS) - 1), ValueError, "expected"),
        ([0] * (len(QUESTIONS) + 1), ValueError, "expected"),
        ([99] + [None] * (len(QUESTIONS) - 1), ValueError, "between 0 and"),
        ([-1] + [None] * (len(QUESTIONS) - 1), ValueError, "between 0 and"),
        (["b"] + [None] * (len(QUESTIONS) - 1), TypeError, "option index"),
        ([1.0] + [None] * (len(QUESTIONS) - 1), TypeError, "option index"),
        ([True] + [None] * (len(QUESTIONS) - 1), TypeError, "option index"),
        ("abcd", TypeError, "list of option indices"),
        (42, TypeError, "list of option indices"),
        ({len(QUESTIONS): 0}, ValueError, "question indices"),
        ({"1": 0}, ValueError, "question indices"),
    ],
)
def test_bad_input_is_refused(answers, error, match):
    with pytest.raises(error, match=match):
        grade_quiz(answers)
