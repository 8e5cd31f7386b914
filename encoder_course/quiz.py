"""The self-check quiz of notebook 12: questions, and a pure grading function.

The widget in :func:`encoder_course.widgets.quiz` only displays these questions and shows what
:func:`grade_quiz` says; all the logic is here, so it is tested without a browser.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence


@dataclass(frozen=True)
class Question:
    """One multiple-choice question.

    Attributes:
        text: the question.
        options: the possible answers, shown in this order.
        answer: index of the correct option in ``options``.
        explanation: why the correct option is right (shown after any answer).
        see: where the course measured it (notebook number and section).
    """

    text: str
    options: tuple[str, ...]
    answer: int
    explanation: str
    see: str


@dataclass(frozen=True)
class QuestionResult:
    """The grade of one question.

    Attributes:
        index: the question's position in :data:`QUESTIONS` (from 0).
        chosen: the option index given, or None when unanswered.
        correct: the correct option index.
        status: ``"correct"``, ``"wrong"`` or ``"unanswered"``.
        feedback: a sentence for the learner: the verdict, the explanation and where to read more.
    """

    index: int
    chosen: int | None
    correct: int
    status: str
    feedback: str

    @property
    def is_correct(self) -> bool:
        """True when the chosen option is the correct one."""
        return self.status == "correct"


@dataclass(frozen=True)
class QuizResults:
    """The grade of a whole quiz: one :class:`QuestionResult` per question, and the score."""

    items: tuple[QuestionResult, ...]

    @property
    def score(self) -> int:
        """Number of correct answers."""
        return sum(item.is_correct for item in self.items)

    @property
    def answered(self) -> int:
        """Number of questions answered (right or wrong)."""
        return sum(item.status != "unanswered" for item in self.items)

    @property
    def total(self) -> int:
        """Number of questions."""
        return len(self.items)

    def summary(self) -> str:
        """One line: the score and how many are still open."""
        open_ = self.total - self.answered
        tail = f", {open_} not answered yet" if open_ else ""
        return f"{self.score} / {self.total} correct{tail}"


QUESTIONS: tuple[Question, ...] = (
    Question(
        text="Why are the attention scores divided by sqrt(d_k)?",
        options=(
            "To make the attention weights of each row sum to one.",
            "With roughly unit-variance queries and keys, a dot product over d_k dimensions has "
            "variance about d_k; dividing by sqrt(d_k) brings it back to about 1, so softmax does "
            "not saturate and its gradients do not vanish.",
            "To save memory in the score matrix.",
            "Because the keys are normalised to length sqrt(d_k) by LayerNorm.",
        ),
        answer=1,
        explanation="The variance of q·k grows linearly with d_k (64 at d_k = 64); large scores push "
                    "softmax towards one-hot rows whose gradient is almost zero. Softmax itself makes "
                    "rows sum to one, with or without the scale.",
        see="02 · attention, “Why divide by √d_k?” and “Claim check 2”",
    ),
    Question(
        text="Eight heads of width 64 against one head of width 512 (d_model = 512): what changes?",
        options=(
            "Eight heads have eight times the parameters.",
            "Eight heads cost eight times the FLOPs.",
            "Parameters and FLOPs are the same; each head gets its own softmax, so one position can "
            "attend to several places in different ways at once.",
            "Nothing at all: the outputs are identical.",
        ),
        answer=2,
        explanation="The four projections are 4 · 512² weights either way, and QKᵀ, AV cost the same "
                    "in total. What the split buys is H separate attention distributions per token; "
                    "what it costs is a smaller d_head for each.",
        see="04 · multi_head, “Cost: eight small heads vs one big head” and “Why several heads?”",
    ),
    Question(
        text="BERT lets every token attend to tokens on both sides. Why is there no causal mask?",
        options=(
            "A causal mask would make attention quadratic.",
            "It reads a whole, given input to understand it, so every token may use context on both "
            "sides; a causal mask is for generating the next token, where looking ahead would leak "
            "the answer.",
            "Causal masks only work with pre-LN.",
            "Because encoders have no padding.",
        ),
        answer=1,
        explanation="Bidirectional attention is the point of an encoder. Decoders that generate text "
                    "left to right need the causal mask.",
        see="03 · masks, “Causal masks, and why an encoder does not use one”",
    ),
    Question(
        text="Which statement about post-LN and pre-LN is right?",
        options=(
            "BERT and RoBERTa are pre-LN models.",
            "Pre-LN puts LayerNorm inside each residual branch and keeps an un-normalised residual "
            "stream, so the stack needs one final LayerNorm; post-LN (2017 paper, BERT) normalises "
            "after each residual add.",
            "Post-LN cannot train models deeper than 12 layers.",
            "Pre-LN and post-LN compute the same function with the same weights.",
        ),
        answer=1,
        explanation="BERT-large is a 24-layer post-LN model, trained with a warmup. Pre-LN tends to be "
                    "easier to optimise when deep; both are in use, and they are not interchangeable.",
        see="07 · encoder_block, “Two places for the LayerNorm”; 10 · training, “Post-LN vs pre-LN, with and without warmup”",
    ),
    Question(
        text="In BERT-base, which part holds the most parameters?",
        options=(
            "The attention projections (about 26 %).",
            "The feed-forward networks (about 52 %).",
            "The embeddings (about 22 %).",
            "The LayerNorms.",
        ),
        answer=1,
        explanation="Each layer has 2 · 768 · 3072 FFN weights against 4 · 768² attention weights: "
                    "twice as many. Over 12 layers that is about 57 M of the 109 M parameters.",
        see="08 · stacking, “Counting BERT-base exactly”",
    ),
    Question(
        text="A sentence gets different logits when it is batched with 3 or with 124 padding "
             "positions. What is the fix?",
        options=(
            "Lower the learning rate.",
            "Pass the padding mask so that no token attends to padding.",
            "Switch from post-LN to pre-LN.",
            "Pad every batch to the same length forever.",
        ),
        answer=1,
        explanation="Without the mask, real tokens attend to the padding, and each padded slot has its "
                    "own position vector, so more padding changes the result. With the mask the "
                    "predictions are identical at every padding length.",
        see="03 · masks, “The production bug: the same sentence, different answers”; 10 · training, “The padding mask, on and off”",
    ),
    Question(
        text="Why does a Transformer use LayerNorm rather than BatchNorm?",
        options=(
            "LayerNorm normalises each token over its own features, so the result does not depend "
            "on the other sequences in the batch, the batch size or the sequence length.",
            "LayerNorm normalises across the positions of the sequence.",
            "BatchNorm has no learned scale and shift.",
            "LayerNorm is faster because it has no parameters.",
        ),
        answer=0,
        explanation="BatchNorm's statistics come from the batch, which varies with padding and batch "
                    "size (and is one sequence at inference). LayerNorm has learned γ and β of size "
                    "d_model and looks at one token at a time.",
        see="05 · residual_and_layernorm, “LayerNorm vs BatchNorm: does the batch matter?”",
    ),
    Question(
        text="Why is d_ff = 4 · d_model in BERT and the 2017 Transformer?",
        options=(
            "It is provably optimal.",
            "Every modern model uses exactly 4x.",
            "It is a convention that worked well; SwiGLU models often use about 8/3 · d_model so the "
            "three matrices keep the same parameter count.",
            "Because there are four attention projections.",
        ),
        answer=2,
        explanation="2 · d · 4d = 8d² weights; a gated FFN with three d × (8/3)d matrices also has 8d². "
                    "Many models pick other ratios.",
        see="06 · feed_forward, “Is 4x special? The ratio is a convention”",
    ),
    Question(
        text="Self-attention without position information is...",
        options=(
            "permutation-invariant: shuffling the tokens leaves every output unchanged.",
            "permutation-equivariant: shuffling the tokens shuffles the outputs the same way.",
            "unaffected by the order only in the first layer.",
            "able to tell order from the values of the token embeddings.",
        ),
        answer=1,
        explanation="Each output row follows its token; a pooled sentence vector would be invariant, "
                    "the token outputs are not. Position vectors break the symmetry.",
        see="01 · tokens_and_positions, “Claim check: attention alone cannot see order”",
    ),
    Question(
        text="BERT-base-sized layer (d_model 768, d_ff 3072): from which length L does attention's "
             "quadratic part cost more than the rest of the layer?",
        options=(
            "L = 64",
            "L = 512",
            "L = 4608 (= 2 · d_model + d_ff = 6 · d_model)",
            "Always: attention dominates at every length.",
        ),
        answer=2,
        explanation="QKᵀ and AV cost 4L²d FLOPs against 8Ld² + 4L·d·d_ff for the projections and the "
                    "FFN; they are equal at L = 2d + d_ff. At L = 512 the FFN is the largest term.",
        see="09 · cost, “Attention against the rest, over L”",
    ),
)


def _check_choice(position, value, n_options: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"answer for question {position + 1} must be an option index (int) or None, "
            f"got {type(value).__name__} ({value!r})"
        )
    if not 0 <= value < n_options:
        raise ValueError(
            f"answer for question {position + 1} must be between 0 and {n_options - 1}, got {value}"
        )
    return value


def _as_list(answers, n: int) -> list:
    if isinstance(answers, Mapping):
        for key in answers:
            if isinstance(key, bool) or not isinstance(key, int) or not 0 <= key < n:
                raise ValueError(f"answer keys must be question indices 0..{n - 1}, got {key!r}")
        return [answers.get(i) for i in range(n)]
    if isinstance(answers, (str, bytes)) or not isinstance(answers, Sequence):
        raise TypeError(
            f"answers must be a list of option indices (or None) or a dict {{question: option}}, "
            f"got {type(answers).__name__}"
        )
    if len(answers) != n:
        raise ValueError(f"expected {n} answers (None for unanswered), got {len(answers)}")
    return list(answers)


def grade_quiz(answers, questions: Sequence[Question] = QUESTIONS) -> QuizResults:
    """Grade answers to the quiz, with feedback for each question.

    Args:
        answers: one option index (from 0) or None (unanswered) per question, as a list, or a dict
            ``{question index: option index}`` where missing questions count as unanswered.
        questions: the questions (the course's :data:`QUESTIONS` by default).

    Returns:
        a :class:`QuizResults`; ``results.items[i].feedback`` is the text for question ``i``.

    Raises:
        TypeError: an answer is not an int (or None), or ``answers`` is not a list or dict.
        ValueError: wrong number of answers, an option index out of range, or a bad dict key.
    """
    chosen_list = _as_list(answers, len(questions))
    items = []
    for i, (question, raw) in enumerate(zip(questions, chosen_list)):
        chosen = _check_choice(i, raw, len(question.options))
        right = question.options[question.answer]
        if chosen is None:
            status = "unanswered"
            feedback = "Not answered yet."
        elif chosen == question.answer:
            status = "correct"
            feedback = f"Correct. {question.explanation} (See {question.see}.)"
        else:
            status = "wrong"
            feedback = (f"Not quite: the answer is “{right.rstrip('.')}”. {question.explanation} "
                        f"(See {question.see}.)")
        items.append(QuestionResult(i, chosen, question.answer, status, feedback))
    return QuizResults(tuple(items))
