"""The quizzes at the end of the notebooks (questions and scoring in :mod:`encoder_course.quizzes.quiz`)."""

from __future__ import annotations

import html

from ..quizzes.quiz import LETTERS, QuizSession

#: What the notebooks reach as ``widgets.<name>``.
__all__ = ["quiz", "quiz_view"]

_COLOURS = {True: "#1a7f37", False: "#b42318"}
_MARKS = {True: "✓ ", False: "✗ "}  # a mark as well as a colour, never colour alone


def quiz_view(session: QuizSession) -> dict:
    """What the quiz shows now, as HTML: feedback for each answered question and the score line."""
    feedback = []
    for index in range(len(session.questions)):
        answer = session.answers.get(index)
        feedback.append("" if answer is None else
                        f'<span style="color:{_COLOURS[answer.correct]}">{_MARKS[answer.correct]}'
                        f"{html.escape(answer.feedback)}</span>")
    return {"feedback": feedback, "score": f"<b>Score: {html.escape(session.summary())}</b>"}


def quiz(notebook: str | None = None, seed: str | None = None):
    """A notebook's quiz: pick an option per question; the first pick counts and the question locks.

    Args:
        notebook: the notebook's number or name; None for the review quiz of the last notebook.
        seed: whose option order to show (default: this learner's, see ``course.quiz.learner_seed``).

    Returns:
        an ipywidgets ``VBox``; its ``.radios`` (one ``RadioButtons`` per question, value None until
        answered), ``.feedback`` (one ``HTML`` each), ``.score`` (an ``HTML``) and ``.session`` (the
        :class:`~encoder_course.quizzes.quiz.QuizSession`) are attributes, so the wiring is testable
        without a browser.
    """
    import ipywidgets as W

    if notebook is None:
        from ..notebook_tools.manifest import notebook as find

        notebook = find("review").number
    session = QuizSession(notebook, seed)
    radios, feedback, rows = [], [], []
    for number, question in enumerate(session.questions, start=1):
        text = f"<b>{number}. {html.escape(question.text)}</b>"
        if question.code:
            text += f"<pre>{html.escape(question.code)}</pre>"
        options = [(f"{LETTERS[i]}. {option}", i) for i, option in enumerate(session.options(number - 1))]
        radio = W.RadioButtons(options=options, value=None, layout=W.Layout(width="auto"))
        note = W.HTML(value="")
        radios.append(radio)
        feedback.append(note)
        rows.append(W.VBox([W.HTML(value=text), radio, note]))
    score = W.HTML(value="")

    def refresh(_change=None):
        for index, radio in enumerate(radios):
            if radio.value is not None and index not in session.answers:
                session.answer(index, radio.value)
            if index in session.answers:
                radio.value = session.answers[index].chosen  # a later click does not change the answer
                radio.disabled = True
        view = quiz_view(session)
        for note, text in zip(feedback, view["feedback"]):
            note.value = text
        score.value = view["score"]

    for radio in radios:
        radio.observe(refresh, names="value")
    refresh()
    box = W.VBox([*rows, score])
    box.radios, box.feedback, box.score, box.session = radios, feedback, score, session
    return box
