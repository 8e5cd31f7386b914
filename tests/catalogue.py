"""Shared by the checker catalogues: collect candidates with decorators, and judge them."""

from __future__ import annotations

import math

import pytest
import torch.nn.functional as F
from torch import nn

import encoder_course as ec
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

    def tests(self, wrong: int, right: int):
        """The three tests of a catalogue file: its size, each wrong answer named, each right one passing.

        Use as ``test_catalogue_sizes, test_wrong_answer_is_named, test_right_answer_passes =
        CATALOGUE.tests(...)`` so pytest collects them from the catalogue's own file.
        """
        def test_catalogue_sizes():
            self.assert_sizes(wrong, right)

        @pytest.mark.filterwarnings("ignore")
        @self.wrong_params()
        def test_wrong_answer_is_named(checker, candidate, words, capsys):
            assert_named(checker, candidate, words, capsys)

        @pytest.mark.filterwarnings("ignore")
        @self.right_params()
        def test_right_answer_passes(checker, candidate, capsys):
            assert_passes(checker, candidate, capsys)

        return test_catalogue_sizes, test_wrong_answer_is_named, test_right_answer_passes

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
