"""The quizzes measure understanding, not test-taking: every bank is well formed, options are shuffled per
learner, a question is scored on its first answer, and picking by length, by position or always the same
letter scores at chance."""

from __future__ import annotations

import statistics

import pytest

from encoder_course import widgets
from encoder_course.quizzes import quiz

BANKS = {number: quiz.questions(number) for number in quiz.bank_modules()}
ALL = [(number, i, q) for number, qs in BANKS.items() for i, q in enumerate(qs)]
SEEDS = [f"learner-{n}" for n in range(300)]


def test_every_bank_is_well_formed():
    assert "14" in BANKS
    for number, index, q in ALL:
        where = f"notebook {number}, question {index + 1}"
        assert isinstance(q, quiz.Question), where
        assert 3 <= len(q.options) <= len(quiz.LETTERS), where
        assert len(set(q.options)) == len(q.options), where
        assert q.text.strip() and q.explanation.strip() and q.see.strip(), where


def test_options_of_a_question_are_alike_in_length():
    """No option stands out by length: the longest is at most 2.5 times the shortest (in characters)."""
    for number, index, q in ALL:
        lengths = [len(o) for o in q.options]
        assert max(lengths) <= 2.5 * min(lengths), (number, index + 1, q.options)


def _strategy_score(pick) -> float:
    """Mean fraction right over every question and many learners, for a way of picking."""
    scores = []
    for seed in SEEDS:
        right = total = 0
        for number, qs in BANKS.items():
            session = quiz.QuizSession(number, seed)
            for index in range(len(qs)):
                shown = session.options(index)
                right += session.answer(index, pick(shown)).correct
                total += 1
        scores.append(right / total)
    return statistics.mean(scores)


def _chance() -> float:
    return statistics.mean(1 / len(q.options) for _, _, q in ALL)


@pytest.mark.parametrize("name, pick", [
    ("always the first", lambda shown: 0),
    ("always the second", lambda shown: 1),
    ("always the last", lambda shown: len(shown) - 1),
    ("always the longest", lambda shown: max(range(len(shown)), key=lambda i: (len(shown[i]), -i))),
    ("always the shortest", lambda shown: min(range(len(shown)), key=lambda i: (len(shown[i]), i))),
])
def test_picking_without_reading_scores_at_chance(name, pick):
    score = _strategy_score(pick)
    assert abs(score - _chance()) < 0.05, f"{name}: {score:.2f} right, chance is {_chance():.2f}"


def test_one_learner_always_sees_the_same_order_and_learners_differ():
    a, b = quiz.QuizSession("14", "alice"), quiz.QuizSession("14", "alice")
    assert [a.options(i) for i in range(len(a.questions))] == [b.options(i) for i in range(len(b.questions))]
    positions = {quiz.QuizSession("14", seed).orders[0].index(0) for seed in SEEDS[:40]}
    assert len(positions) == len(quiz.questions("14")[0].options)  # the right option moves around


def test_a_question_is_scored_on_its_first_answer():
    session = quiz.QuizSession("14", "bob")
    right = session.orders[0].index(0)
    wrong = (right + 1) % len(session.questions[0].options)
    first = session.answer(0, wrong)
    assert not first.correct and "Not this one: the answer is" in first.feedback
    assert session.questions[0].explanation in first.feedback
    assert session.answer(0, right) is first and session.score == 0  # switching earns nothing
    assert session.answer(1, session.orders[1].index(0)).correct and session.score == 1
    assert "1 / " in session.summary() and "not answered yet" in session.summary()
    with pytest.raises(ValueError, match="option number"):
        session.answer(2, 99)


def test_the_first_answer_survives_running_the_quiz_cell_again(monkeypatch):
    """The learner's own quiz (no explicit seed) keeps its first answers for the kernel's lifetime,
    by notebook and question: a new session, as the quiz cell run again builds, starts with them."""
    monkeypatch.setenv(quiz.ENV_VAR, "frank")
    quiz.forget_answers()
    try:
        first_run = quiz.QuizSession("07")
        right = first_run.orders[0].index(0)
        wrong = (right + 1) % len(first_run.questions[0].options)
        first = first_run.answer(0, wrong)

        second_run = quiz.QuizSession("7")  # the same notebook, however it is named
        assert second_run.answers == {0: first}
        assert second_run.answer(0, right) is first and second_run.score == 0  # no second first try
        assert quiz.QuizSession("07_encoder_block").answers[0] is first

        # Another notebook's question 1 is a different question.
        assert quiz.QuizSession("06").answers == {}
        # A session opened before the answer was given (an old output of the cell) adopts it too.
        stale = quiz.QuizSession("05")
        quiz.QuizSession("05").answer(1, 0)
        assert stale.answer(1, 1).chosen == 0

        # The widget built again shows the kept answer, locked.
        box = widgets.quiz("07")
        assert box.radios[0].value == wrong and box.radios[0].disabled and "✗" in box.feedback[0].value

        # An explicit seed (tests, a teacher's preview) keeps nothing; restarting the kernel forgets.
        assert quiz.QuizSession("07", "frank").answers == {}
        quiz.forget_answers()
        assert quiz.QuizSession("07").answers == {}
    finally:
        quiz.forget_answers()


@pytest.mark.parametrize("number", sorted(BANKS))
def test_every_question_of_every_bank_gives_its_explanation(number):
    for index, q in enumerate(BANKS[number]):
        for chosen in range(len(q.options)):
            session = quiz.QuizSession(number, "dana")
            answer = session.answer(index, chosen)
            assert q.explanation in answer.feedback and q.see in answer.feedback
            assert answer.correct == (session.options(index)[chosen] == q.options[0])


def test_the_learner_seed_is_kept(tmp_path, monkeypatch):
    monkeypatch.delenv(quiz.ENV_VAR, raising=False)
    monkeypatch.setattr(quiz, "SEED_FILE", tmp_path / "seed")
    first = quiz.learner_seed()
    assert first and quiz.learner_seed() == first
    monkeypatch.setenv(quiz.ENV_VAR, "eve")
    assert quiz.learner_seed() == "eve"


def test_the_feed_forward_memory_question_is_computed():
    """Notebook 06, question 3: its answer and each distractor's reading, computed with nn.Linear."""
    import torch

    q = quiz.questions("06")[2]
    w1, w2 = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    with torch.no_grad():
        w1.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0]]))
        w1.bias.copy_(torch.tensor([-0.5, -0.5]))
        w2.weight.copy_(torch.tensor([[0.0, 1.0], [4.0, 0.0]]))
        w2.bias.zero_()
        h = torch.tensor([1.5, 0.2])
        a = torch.relu(w1(h))
        readings = [w2(a),  # the answer
                    a @ w2.weight,  # the values read from W2's rows
                    w2(torch.relu(h @ w1.weight.T)),  # the bias forgotten
                    a]  # stopped at the activations

    def shown(t):
        return "[" + ", ".join(f"{v:.1f}" for v in t.tolist()) + "]"

    assert [shown(t) for t in readings] == list(q.options)
