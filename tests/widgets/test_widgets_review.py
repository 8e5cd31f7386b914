"""encoder_course.widgets.review: the quiz widget shows feedback per answered question and locks after the first.

The questions and scoring are tested in test_quiz.py.
"""

from encoder_course import widgets
from encoder_course.quizzes import quiz


def test_quiz_view_shows_feedback_only_for_answered_questions():
    session = quiz.QuizSession("14", "erin")
    view = widgets.quiz_view(session)
    assert view["feedback"] == [""] * len(session.questions)
    assert "Score" in view["score"]
    right = session.orders[0].index(0)
    session.answer(0, right)
    wrong = (session.orders[1].index(0) + 1) % len(session.questions[1].options)
    session.answer(1, wrong)
    view = widgets.quiz_view(session)
    assert "✓" in view["feedback"][0] and "✗" in view["feedback"][1]
    assert all(text == "" for text in view["feedback"][2:])


def test_the_widget_locks_a_question_after_its_first_answer():
    box = widgets.quiz("14", seed="carol")
    session = box.session
    right = session.orders[0].index(0)
    wrong = (right + 1) % len(session.questions[0].options)
    box.radios[0].value = wrong
    assert box.radios[0].disabled and "✗" in box.feedback[0].value
    box.radios[0].value = right  # a second click: refused, the first answer stays
    assert box.radios[0].value == wrong and "0 / " in box.score.value
    box.radios[1].value = session.orders[1].index(0)
    assert "✓" in box.feedback[1].value and "1 / " in box.score.value
