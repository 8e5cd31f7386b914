"""The quizzes: a short one at the end of every content notebook, and the review quiz of the last notebook.

The questions live in ``encoder_course/quizzes/bank/<name>.py``, one module per notebook, named like
it (``masks.py`` for ``03_masks``). In a bank the right option is always written first; no learner sees
that order. Each learner gets every question's options in an order of their own (:func:`learner_seed`), so
picking by position or always the same letter scores at chance, and the options of a question are written
alike in length and form, so picking the longest one does too (``tests/quizzes/test_quiz.py`` measures both). A
question is scored on its first answer: the widget locks a question once it is answered and shows why the
right option is right. The learner's own first answers (a session built without an explicit seed) are kept
for as long as the kernel runs, by notebook and question, so running the quiz cell again shows them locked
instead of offering a second first try; restarting the kernel starts afresh.

All the logic is here, so it is tested without a browser; :func:`encoder_course.widgets.quiz` only
displays a :class:`QuizSession`.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import random
import secrets
from dataclasses import dataclass, field
from pathlib import Path

LETTERS = "ABCDEFGH"
SEED_FILE = Path.home() / ".encoder_course_learner"
ENV_VAR = "ENCODER_COURSE_LEARNER"


@dataclass(frozen=True)
class Question:
    """One multiple-choice question.

    Attributes:
        text: the question (a calculation, a few lines of code to read, or a claim to weigh).
        options: the possible answers; **the first is the right one** (shown shuffled).
        explanation: why the right option is right, and what makes the tempting ones wrong.
        see: where the course measured or showed it (notebook and section).
        code: lines of code the question asks about, shown in a code block (optional).
    """

    text: str
    options: tuple[str, ...]
    explanation: str
    see: str
    code: str = ""


def bank_modules() -> dict[str, str]:
    """Notebook number -> module of its question bank (``bank/<notebook name>.py``), for every bank that exists."""
    from ..notebook_tools.manifest import NOTEBOOKS

    return {nb.number: nb.module("quiz_bank") for nb in NOTEBOOKS if nb.module("quiz_bank")}


def questions(notebook: str) -> tuple[Question, ...]:
    """The questions of a notebook, by its number ("02") or name ("02_attention")."""
    number = str(notebook)[:2].zfill(2) if str(notebook)[:2].isdigit() else str(notebook).zfill(2)
    modules = bank_modules()
    if number not in modules:
        raise KeyError(f"no quiz for notebook {notebook!r}; there are quizzes for {', '.join(modules)}")
    return importlib.import_module(modules[number]).QUESTIONS


def learner_seed() -> str:
    """Who is answering, as a seed for the order of the options: ``$ENCODER_COURSE_LEARNER``, or a random
    value made once and kept in ``~/.encoder_course_learner`` (so a learner keeps their order)."""
    if os.environ.get(ENV_VAR):
        return os.environ[ENV_VAR]
    try:
        return SEED_FILE.read_text().strip() or _new_seed()
    except OSError:
        return _new_seed()


def _new_seed() -> str:
    seed = secrets.token_hex(8)
    try:
        SEED_FILE.write_text(seed + "\n")
    except OSError:  # a read-only home: the order is then new in each session
        pass
    return seed


def shown_order(question: Question, seed: str, where: str) -> list[int]:
    """The bank indices of the options in the order this learner sees them."""
    digest = hashlib.sha256(f"{seed}|{where}|{question.text}".encode()).hexdigest()
    order = list(range(len(question.options)))
    random.Random(int(digest[:16], 16)).shuffle(order)
    return order


@dataclass
class Answer:
    """The learner's first answer to one question, and the feedback it earned."""

    chosen: int  # in the shown order
    correct: bool
    feedback: str


# The learner's first answers in this kernel: (seed, notebook number, question index, question text) ->
# Answer. Filled by sessions that remember (see QuizSession), so a quiz cell run again keeps them.
_FIRST_ANSWERS: dict[tuple[str, str, int, str], Answer] = {}


def forget_answers() -> None:
    """Forget every first answer kept in this kernel (as a kernel restart does)."""
    _FIRST_ANSWERS.clear()


@dataclass
class QuizSession:
    """One learner's quiz for one notebook: shuffled options, and the first answer to each question.

    Args:
        notebook: the notebook's number or name.
        seed: the learner's seed (default :func:`learner_seed`).
        remember: keep the first answers for as long as the kernel runs, so that a new session for the
            same learner and notebook (the quiz cell run again) starts with them and cannot replace them.
            Default: True when ``seed`` is not given (the learner's own quiz), False for an explicit seed.
    """

    notebook: str
    seed: str | None = None
    answers: dict[int, Answer] = field(default_factory=dict)
    remember: bool | None = None

    def __post_init__(self):
        if self.remember is None:
            self.remember = self.seed is None
        self.seed = learner_seed() if self.seed is None else str(self.seed)
        self.questions = questions(self.notebook)
        where = str(self.notebook)[:2]
        self.orders = [shown_order(q, self.seed, f"{where}.{i}") for i, q in enumerate(self.questions)]
        self.number = where.zfill(2)  # "1", "01" and "01_tokens_and_positions" are one notebook
        if self.remember:
            for index in range(len(self.questions)):
                kept = _FIRST_ANSWERS.get(self._key(index))
                if kept is not None:
                    self.answers.setdefault(index, kept)

    def _key(self, index: int) -> tuple[str, str, int, str]:
        return (self.seed, self.number, index, self.questions[index].text)

    def options(self, index: int) -> list[str]:
        """The options of question ``index`` (from 0) in this learner's order."""
        return [self.questions[index].options[i] for i in self.orders[index]]

    def answer(self, index: int, chosen: int) -> Answer:
        """Record an answer (an index into :meth:`options`); only the first answer to a question counts."""
        if self.remember and index not in self.answers and 0 <= index < len(self.questions):
            kept = _FIRST_ANSWERS.get(self._key(index))  # answered meanwhile in another run of the cell
            if kept is not None:
                self.answers[index] = kept
        if index in self.answers:
            return self.answers[index]
        question = self.questions[index]
        if isinstance(chosen, bool) or not isinstance(chosen, int) or not 0 <= chosen < len(question.options):
            raise ValueError(f"an answer to question {index + 1} is an option number from 0 to "
                             f"{len(question.options) - 1}, got {chosen!r}")
        right = self.orders[index].index(0)
        correct = chosen == right
        verdict = "Right." if correct else f"Not this one: the answer is {LETTERS[right]}, “{question.options[0]}”."
        self.answers[index] = Answer(chosen, correct, f"{verdict} {question.explanation} (See {question.see}.)")
        if self.remember:
            _FIRST_ANSWERS.setdefault(self._key(index), self.answers[index])
        return self.answers[index]

    @property
    def score(self) -> int:
        """Questions whose first answer was right."""
        return sum(a.correct for a in self.answers.values())

    def summary(self) -> str:
        """One line: the score, and how many questions are still open."""
        open_ = len(self.questions) - len(self.answers)
        tail = f", {open_} not answered yet" if open_ else ""
        return f"{self.score} / {len(self.questions)} right on the first answer{tail}"


def grade(notebook: str, answers: dict[int, int] | list, seed: str | None = None) -> QuizSession:
    """Grade a whole set of answers at once (option numbers in the learner's shown order)."""
    session = QuizSession(notebook, seed, remember=False)
    items = answers.items() if isinstance(answers, dict) else enumerate(answers)
    for index, chosen in items:
        if chosen is not None:
            session.answer(index, chosen)
    return session
