"""The quiz widget of notebook 12: its callback and its wiring, without a browser."""

import pytest

from encoder_course import widgets
from encoder_course.quiz import QUESTIONS


@pytest.mark.parametrize("index", range(len(QUESTIONS)))
def test_quiz_view_every_option_of_every_question(index):
    for option in [None, *range(len(QUESTIONS[index].options))]:
        answers = [None] * len(QUESTIONS)
        answers[index] = option
        view = widgets.quiz_view(answers)
        assert len(view["feedback"]) == len(QUESTIONS)
        text = view["feedback"][index]
        if option is None:
            assert "Not answered yet" in text
        elif option == QUESTIONS[index].answer:
            assert "✓" in text and "1 / " in view["score"]
        else:
            assert "✗" in text and "0 / " in view["score"]


def test_quiz_widget_updates_feedback_when_an_answer_is_picked():
    box = widgets.quiz()
    assert len(box.radios) == len(QUESTIONS) and all(r.value is None for r in box.radios)
    assert "not answered yet" in box.score.value
    box.radios[0].value = QUESTIONS[0].answer
    assert "✓" in box.feedback[0].value and "1 / " in box.score.value
    box.radios[1].value = (QUESTIONS[1].answer + 1) % len(QUESTIONS[1].options)
    assert "✗" in box.feedback[1].value and "1 / " in box.score.value
    for radio, question in zip(box.radios, QUESTIONS):
        radio.value = question.answer
    assert f"{len(QUESTIONS)} / {len(QUESTIONS)} correct" in box.score.value
