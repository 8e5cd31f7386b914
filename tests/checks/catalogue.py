"""Shared by the checker tests: the catalogue of candidates, how they are judged, and what they build on.

Each ``test_<exercise>.py`` here holds one exercise's catalogue: wrong answers, each with the phrase
its message must contain, and right answers in many styles, each of which must pass. The candidates
were written in four rounds, each an adversarial probe for mistakes the checkers would miss or
explain badly; they are kept together by exercise.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import pathlib
import re
import sys
import time

import pytest
import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn

import encoder_course as ec
from encoder_course import checks
from encoder_course.checks import ExerciseError, mistakes
from encoder_course.notebook_tools import budgets

#: Processor seconds one check may take in the tests: only a gross regression reaches it (the budget,
#: CHECK_BUDGET_S on a 2-core machine, is measured by ``python tests/checks/times.py``).
CHECK_CEILING_S = budgets.CHECK_BUDGET_S * budgets.HANG_FACTOR

#: What each checker prints when the answer is right (the line the self-check and the grader look for).
PASS_LINES = {checks.CHECKERS[key]: f"✓ {key}: all checks passed" for key in checks.EXERCISES}


class Catalogue:
    """One exercise's wrong answers, each with the phrase its message must contain, and right answers."""

    def __init__(self, *checkers):
        self.checkers = checkers  # the exercise's checkers (the masks have two)
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
        return pytest.mark.parametrize("checker, candidate, words, by_probe",
                                       [(w[1], w[2], w[4], by_probe(w[0])) for w in self.wrong],
                                       ids=[w[0] for w in self.wrong])

    def right_params(self):
        return pytest.mark.parametrize("checker, candidate", [(r[1], r[2]) for r in self.right],
                                       ids=[r[0] for r in self.right])

    def tests(self):
        """The three tests of a catalogue file: its cases well formed, each wrong answer named, each right one passing.

        Use as ``test_catalogue_cases, test_wrong_answer_is_named, test_right_answer_passes =
        CATALOGUE.tests()`` so pytest collects them from the catalogue's own file.
        """
        def test_catalogue_cases():
            self.assert_cases()

        @pytest.mark.filterwarnings("ignore")
        @self.wrong_params()
        def test_wrong_answer_is_named(checker, candidate, words, by_probe, capsys):
            assert_named(checker, candidate, words, capsys, by_probe)

        @pytest.mark.filterwarnings("ignore")
        @self.right_params()
        def test_right_answer_passes(checker, candidate, capsys):
            assert_passes(checker, candidate, capsys)

        return test_catalogue_cases, test_wrong_answer_is_named, test_right_answer_passes

    def assert_cases(self):
        """Wrong and right answers for every checker of the exercise, each case with its own id."""
        assert self.wrong and self.right
        ids = [w[0] for w in self.wrong] + [r[0] for r in self.right]
        assert len(set(ids)) == len(ids), "every candidate needs its own id"
        assert {w[1] for w in self.wrong} == set(self.checkers) == {r[1] for r in self.right}


#: Phrases that name no mistake: what every failing message says, or says of any mistake.
GENERIC_PHRASES = (
    "different numbers", "different values", "not right yet", "gives different", "from the reference",
    "the largest difference", "read the error above", "check the arguments you pass",
    "print the shape of each tensor", "check the spelling", "your code printed",
)
_GENERIC_WORDS = re.compile(r"^(your \w+|raised \w+|\w+error|mask|shape|dtype|gradient|dropout|eps|bool|nan|"
                            r"return|residual|order|swapped|exponent)$", re.IGNORECASE)


def generic_phrase(words: str) -> str:
    """Why ``words`` names no particular mistake ("" when it does)."""
    text = words.strip().lower()
    if len(text) < 5:
        return "too short to name a mistake"
    if _GENERIC_WORDS.match(text):
        return "a word every message of this kind contains"
    found = [g for g in GENERIC_PHRASES if g in text or text in g]
    return f"generic ({found[0]!r})" if found else ""


@contextlib.contextmanager
def recording_labels():
    """Record the case labels ("with a padding mask ...") the checkers pass with each call of the candidate."""
    labels: list[str] = []
    patched = []
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("encoder_course.checks") and hasattr(module, "_invoke"):
            original = module._invoke

            def recorder(name, what, fn, *args, _original=original, **kwargs):
                labels.append(what)
                return _original(name, what, fn, *args, **kwargs)

            patched.append((module, original))
            module._invoke = recorder
    try:
        yield labels
    finally:
        for module, original in patched:
            module._invoke = original


def by_probe(cid: str) -> bool:
    """Whether the candidate ``cid`` is one a probe must name (its id says so: ``xx-probe-...``)."""
    return "-probe-" in cid


@contextlib.contextmanager
def recording_probes():
    """Record every diagnosis a probe gives (``checks._compare.probe``) while the block runs."""
    from encoder_course.checks import _compare

    found: list[str] = []
    _compare._PROBED = found
    try:
        yield found
    finally:
        _compare._PROBED = None


def assert_named(checker, candidate, words, capsys, probed=None):
    """The wrong answer is rejected with an ExerciseError naming its mistake; nothing is printed.

    The phrase must be a diagnosis: neither generic (:func:`generic_phrase`) nor a case label, and
    found in the message outside the labels. ``probed`` (when not None) says whether the phrase must
    come from a probe's diagnosis (a mistake unlike the listed ones) or from a listed slip, a case's
    hint or a direct check.
    """
    assert not generic_phrase(words), (words, generic_phrase(words))
    start = time.process_time()
    with recording_labels() as labels, recording_probes() as probes, pytest.raises(ExerciseError) as info:
        checker(candidate)
    spent = time.process_time() - start
    assert spent < CHECK_CEILING_S, f"the check took {spent:.1f} s of processor time"
    message = str(info.value)
    if probed is not None:
        from_probe = any(words in p for p in probes)
        assert from_probe == probed, (
            f"named by {'a probe' if from_probe else 'a listed slip or a direct check'}, but the id says "
            f"{'a probe' if probed else 'a listed slip'}: {message}")
    assert words in message, message
    # the mistake's stable id (checks/mistakes.py) is among those the message names, the grader's details carry
    key = next(k for k, c in checks.CHECKERS.items() if c is checker)
    own = [mid for mid, phrase in mistakes.table()["mistakes"].items() if mid.startswith(key + "/") and phrase == words]
    assert own and own[0] in mistakes.mistake_ids(key, message), (
        f"give the phrase {words!r} an id in encoder_course/data/mistakes.json ({key}/<name>)" if not own else message)
    unlabelled = message
    for label in sorted(set(labels), key=len, reverse=True):
        assert words not in label, f"{words!r} is the case label {label!r}, not a diagnosis"
        unlabelled = unlabelled.replace(label, "")
    assert words in unlabelled, f"{words!r} is found only in a case label: {message}"
    assert isinstance(info.value, AssertionError)
    assert "The checker could not use" not in message, message
    assert "checks.py" not in message and "encoder_course/checks" not in message, message
    assert "Traceback" not in message, message
    assert capsys.readouterr().out == ""


def assert_passes(checker, candidate, capsys):
    """The right answer passes: the checker returns None and prints its one pass line, nothing else."""
    start = time.process_time()
    assert checker(candidate) is None
    spent = time.process_time() - start
    assert spent < CHECK_CEILING_S, f"the check took {spent:.1f} s of processor time"
    assert capsys.readouterr().out == PASS_LINES[checker] + "\n"


def catalogues() -> dict:
    """Every exercise's catalogue, by test module name (``test_positions``, ...)."""
    here = pathlib.Path(__file__).parent
    modules = [importlib.import_module(f"{__package__}.{path.stem}") for path in sorted(here.glob("test_*.py"))]
    return {m.__name__.rpartition(".")[2]: m.CATALOGUE for m in modules if hasattr(m, "CATALOGUE")}


def counts() -> tuple[int, int, int]:
    """How many wrong answers the catalogues hold, how many of them a probe names, and how many right
    answers they hold (the maintainers' guide states all three)."""
    found = catalogues().values()
    return (sum(len(c.wrong) for c in found), sum(by_probe(w[0]) for c in found for w in c.wrong),
            sum(len(c.right) for c in found))


# ----------------------------------------------------------------------------------------------
# What a learner starts from: the exercises' given __init__ (as in the learner notebooks), with a
# few helpers the candidates share, and a plain attention to build on.


def sdpa(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


class MHASkeleton(nn.Module):
    """MultiHeadAttention's given __init__, with split/merge helpers."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)

    def split(self, t):
        B, L, D = t.shape
        return t.view(B, L, self.n_heads, self.d_head).transpose(1, 2)

    def merge(self, h):
        B, H, L, dh = h.shape
        return h.transpose(1, 2).reshape(B, L, H * dh)

    def qkv(self, x):
        return self.split(self.w_q(x)), self.split(self.w_k(x)), self.split(self.w_v(x))


class LayerNormSkeleton(nn.Module):
    """LayerNorm's given __init__, with the formula as a helper."""

    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))  # gamma
        self.bias = nn.Parameter(torch.zeros(d_model))  # beta

    def norm(self, x, mean, var, eps=None):
        return self.weight * (x - mean) / torch.sqrt(var + (self.eps if eps is None else eps)) + self.bias


class FeedForwardSkeleton(nn.Module):
    """FeedForward's given __init__."""

    def __init__(self, d_model, d_ff, activation="gelu"):
        super().__init__()
        if activation not in ("gelu", "relu"):
            raise ValueError(f"activation must be 'gelu' or 'relu', got {activation!r}")
        self.activation = activation
        self.w1 = nn.Linear(d_model, d_ff)
        self.w2 = nn.Linear(d_ff, d_model)

    def act(self, h):
        return F.relu(h) if self.activation == "relu" else F.gelu(h)


class BlockSkeleton(nn.Module):
    """EncoderBlock's given __init__, built on the package's sublayers."""

    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False, activation="gelu", eps=1e-5):
        super().__init__()
        self.norm_first = norm_first
        self.attn = ec.MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.ffn = ec.FeedForward(d_model, d_ff, activation=activation, dropout=dropout)
        self.norm1 = ec.LayerNorm(d_model, eps=eps)
        self.norm2 = ec.LayerNorm(d_model, eps=eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.p = dropout  # for the candidates that call F.dropout themselves


class EmbeddingsSkeleton(nn.Module):
    """Embeddings' given __init__ (notebook 08), built on the package's sinusoids and LayerNorm."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        d = config.d_model
        self.token = nn.Embedding(config.vocab_size, d)
        if config.scale_embeddings:
            nn.init.normal_(self.token.weight, std=d ** -0.5)
        if config.positions == "learned":
            self.position = nn.Embedding(config.max_len, d)
            nn.init.normal_(self.position.weight, std=0.02)
        else:
            self.register_buffer("sinusoids", ec.sinusoidal_positions(config.max_len, d), persistent=False)
        self.token_type = nn.Embedding(config.type_vocab_size, d) if config.type_vocab_size else None
        self.norm = ec.LayerNorm(d, eps=config.eps) if config.embedding_norm else None
        self.dropout = nn.Dropout(config.dropout)

    def table(self):
        """The position table (max_len, d_model), learned or sinusoidal (a helper the candidates share)."""
        return self.position.weight if self.config.positions == "learned" else self.sinusoids


class StackSkeleton(nn.Module):
    """Encoder's given __init__ (notebook 08), built on the package's Embeddings, blocks and LayerNorm."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embeddings = ec.Embeddings(config)
        self.layers = nn.ModuleList(
            ec.EncoderBlock(config.d_model, config.n_heads, config.d_ff, dropout=config.dropout,
                            norm_first=config.norm_first, activation=config.activation, eps=config.eps)
            for _ in range(config.n_layers))
        self.final_norm = ec.LayerNorm(config.d_model, eps=config.eps) if config.norm_first else None


MB, LB, FB, BB = MHASkeleton, LayerNormSkeleton, FeedForwardSkeleton, BlockSkeleton
ES, SS = EmbeddingsSkeleton, StackSkeleton


def from_cell(source: str, **names):
    """The object a notebook cell defines, run with only ``names`` in scope (a cell whose notebook
    lacks an import, say); the last function or class the cell defines is returned."""
    scope = dict(names)
    exec(compile(source, "<notebook cell>", "exec"), scope)  # noqa: S102 (test candidates only)
    defined = [v for k, v in scope.items() if k not in names and k != "__builtins__" and callable(v)]
    return defined[-1]


# ----------------------------------------------------------------------------------------------
# Candidates that more than one test file uses


def pe_right(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    freq = 10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
    pe = torch.zeros(L, d)
    pe[:, 0::2] = torch.sin(pos / freq)
    pe[:, 1::2] = torch.cos(pos / freq)
    return pe


def pe_swapped(L, d):
    return pe_right(L, d)[:, torch.arange(d) ^ 1]


def sdpa_with(q, k, v, mask=None, *, dim=-1, scale="sqrt", mask_mode="fill", order="ok"):
    """Attention with one slip chosen by keyword (the defaults give the right answer)."""
    scores = q @ k.transpose(-2, -1)
    if scale == "sqrt":
        scores = scores / math.sqrt(q.shape[-1])
    elif scale == "d":
        scores = scores / q.shape[-1]
    elif scale == "dv":
        scores = scores / math.sqrt(v.shape[-1])
    if mask is not None and mask_mode == "fill":
        scores = scores.masked_fill(~mask, float("-inf"))
    elif mask is not None and mask_mode == "inverted":
        scores = scores.masked_fill(mask, float("-inf"))
    elif mask is not None and mask_mode == "zero":
        scores = scores.masked_fill(~mask, 0.0)
    w = torch.softmax(scores, dim=dim)
    if mask is not None and mask_mode == "after":
        w = w * mask
    out = w @ v
    if order == "swap":
        return w, out
    if order == "single":
        return out
    if order == "raw":
        return out, scores
    return out, w


def sdpa_in_place(q, k, v, mask=None):
    q /= math.sqrt(q.shape[-1])
    return sdpa_with(q, k, v, mask, scale="none")


class MHAEinops(MB):  # correct: einops + einsum + finfo.min
    def forward(self, x, mask=None):
        q, k, v = (rearrange(w(x), "b l (h d) -> b h l d", h=self.n_heads) for w in (self.w_q, self.w_k, self.w_v))
        s = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.d_head)
        if mask is not None:
            s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
        h = torch.einsum("bhqk,bhkd->bhqd", s.softmax(-1), v)
        return self.w_o(rearrange(h, "b h l d -> b l (h d)"))


class MHAFusedQKV(MB):  # correct: one F.linear with the three weights concatenated
    def forward(self, x, mask=None):
        W = torch.cat([self.w_q.weight, self.w_k.weight, self.w_v.weight])
        b = torch.cat([self.w_q.bias, self.w_k.bias, self.w_v.bias])
        q, k, v = (self.split(t) for t in F.linear(x, W, b).chunk(3, dim=-1))
        h, _ = ec.scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(self.merge(h))


class FFErf(FB):  # correct: GELU written out with erf; follows self.activation
    def forward(self, x):
        h = self.w1(x)
        h = torch.relu(h) if self.activation == "relu" else 0.5 * h * (1 + torch.erf(h / math.sqrt(2)))
        return self.w2(h)


class FFGetattr(FB):  # correct: the activation looked up by name in torch.nn.functional
    def forward(self, x):
        fn = getattr(F, self.activation)
        h = fn(self.w1(x), approximate="none") if self.activation == "gelu" else fn(self.w1(x))
        return self.w2(h)


# ----------------------------------------------------------------------------------------------
# The mistakes' stable ids (encoder_course/checks/mistakes.py), made for newly catalogued mistakes


def new_mistake_ids() -> dict:
    """``{id: phrase}`` for each catalogued mistake (exercise, phrase) that has no id yet: ``<key>/<name>``, the
    name made from its first candidate's id (``sdpa-scale-Lk`` -> ``scaled_dot_product_attention/scale-lk``)."""
    from encoder_course.checks import mistakes

    table = mistakes.table()
    taken = set(table["mistakes"]) | set(table["retired"])
    known = {(mid.partition("/")[0], phrase) for mid, phrase in table["mistakes"].items()}
    key_of = {c: k for k, c in checks.CHECKERS.items()}
    new = {}
    for catalogue in catalogues().values():
        for cid, checker, _, _, words in catalogue.wrong:
            key = key_of[checker]
            if (key, words) in known:
                continue
            name = re.sub(r"[^a-z0-9]+", "-", re.sub(r"^probe-", "", cid.partition("-")[2]).lower()).strip("-")
            mid, n = f"{key}/{name or 'mistake'}", 2
            while mid in taken or mid in new:
                mid, n = f"{key}/{name}-{n}", n + 1
            new[mid] = words
            known.add((key, words))
    return new


def write_new_mistake_ids() -> list[str]:
    """Give every newly catalogued mistake its id, in ``data/mistakes.json`` and the published list."""
    import json

    from encoder_course.checks import mistakes

    new = new_mistake_ids()
    if new:
        table = json.loads(mistakes.FILE.read_text(encoding="utf-8"))
        table["mistakes"] = dict(sorted({**table["mistakes"], **new}.items()))
        mistakes.FILE.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        mistakes.table.cache_clear()
        mistakes._phrases.cache_clear()
        published = pathlib.Path(__file__).with_name("published_mistake_ids.txt")
        ids = set(published.read_text(encoding="utf-8").split()) | set(new)
        ids |= {i for key in checks.EXERCISES for i in mistakes.general_ids(key)}
        published.write_text("\n".join(sorted(ids)) + "\n", encoding="utf-8")
    return sorted(new)
