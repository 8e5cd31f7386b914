"""The checker of ``sinusoidal_positions`` (notebook 01): every wrong answer named, every right one passing."""

from __future__ import annotations

import functools
import math

import numpy as np
import torch
from torch import nn

import encoder_course as ec
from encoder_course import checks

from .catalogue import Catalogue, pe_right, pe_swapped

C_PE = checks.check_sinusoidal_positions

CATALOGUE = Catalogue(C_PE)
WRONG, RIGHT = CATALOGUE.wrong, CATALOGUE.right
wrong, right = CATALOGUE.add_wrong, CATALOGUE.add_right


def _pe(L, d, *, base=10000.0, cos_fn=torch.cos):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    freq = base ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
    pe = torch.zeros(L, d)
    pe[:, 0::2] = torch.sin(pos / freq)
    pe[:, 1::2] = cos_fn(pos / freq)
    return pe


def _pe_d(L, d, d_for_freq=None):
    dd = d if d_for_freq is None else d_for_freq
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    freq = 10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / dd)
    pe = torch.zeros(L, d)
    pe[:, 0::2] = torch.sin(pos / freq)
    pe[:, 1::2] = torch.cos(pos / freq)
    return pe


_BIG = _pe_d(64, 512)


_TABLES: dict = {}


def _freq(d, dd=None, base=10000.0):
    return base ** (torch.arange(0, d, 2, dtype=torch.float32) / (d if dd is None else dd))


def _fill(L, d, freq, pos=None, halves=False):
    pos = torch.arange(L, dtype=torch.float32)[:, None] if pos is None else pos
    pe = torch.zeros(L, d)
    if halves:
        pe[:, : d // 2], pe[:, d // 2:] = torch.sin(pos / freq), torch.cos(pos / freq)
    else:
        pe[:, 0::2], pe[:, 1::2] = torch.sin(pos / freq), torch.cos(pos / freq)
    return pe


# ----------------------------------------------------------------------------------------------
# Wrong answers, each to be named


wrong("pe-swapped", C_PE, "cos in the even columns, sin in the odd", "sin and cos are swapped")(pe_swapped)


@wrong("pe-halves", C_PE, "all sines, then all cosines", "they are interleaved")
def pe_halves(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    freq = 10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
    return torch.cat([torch.sin(pos / freq), torch.cos(pos / freq)], dim=1)


@wrong("pe-exponent-i", C_PE, "exponent i/d_model with i the pair index", "you used 10000^(i/d_model)")
def pe_exponent_i(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    freq = 10000 ** (torch.arange(d // 2, dtype=torch.float32) / d)
    pe = torch.zeros(L, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos / freq), torch.cos(pos / freq)
    return pe


@wrong("pe-odd-own", C_PE, "odd columns with their own exponent (2i+1)/d_model",
       "the exponent is wrong for the odd columns")
def pe_odd_own(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    freq = 10000 ** (torch.arange(d, dtype=torch.float32) / d)
    pe = torch.zeros(L, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos / freq[0::2]), torch.cos(pos / freq[1::2])
    return pe


@wrong("pe-multiply", C_PE, "pos * 10000^(2i/d) instead of pos / ...", "instead of dividing")
def pe_multiply(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    freq = 10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
    pe = torch.zeros(L, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * freq), torch.cos(pos * freq)
    return pe


@wrong("pe-from-one", C_PE, "positions from 1", "positions start at 1")
def pe_from_one(L, d):
    return pe_right(L + 1, d)[1:]


wrong("pe-float64", C_PE, "a float64 table", "it should be torch.float32")(lambda L, d: pe_right(L, d).double())
wrong("pe-transposed", C_PE, "(d_model, seq_len): rows and columns swapped",
      "rows and columns")(lambda L, d: pe_right(L, d).T)
wrong("pe-numpy", C_PE, "returns a NumPy array", "returned a NumPy ndarray")(lambda L, d: pe_right(L, d).numpy())
wrong("pe-none", C_PE, "no return", "forget the `return` line")(lambda L, d: None)


@wrong("pe-base-1000", C_PE, "1000 instead of 10000 as the base",
       'base of the frequencies is 1000')
def pe_base_1000(L, d):
    return _pe(L, d, base=1000.0)


@wrong("pe-log10", C_PE, "exp(-log10(10000)*2i/d): log10 instead of natural log",
       'log10(10000) = 4')
def pe_log10(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    inv = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log10(10000.0) / d))
    return torch.stack([torch.sin(pos * inv), torch.cos(pos * inv)], -1).flatten(1)


@wrong("pe-batch-dim", C_PE, "returns (1, L, d) with a batch dim",
       'should be (seq_len, d_model)')
def pe_batch(L, d):
    return _pe(L, d).unsqueeze(0)


@wrong("pe-list", C_PE, "returns .tolist()",
       'Python list')
def pe_list(L, d):
    return _pe(L, d).tolist()


@wrong("pe-long-table", C_PE, "pe = torch.zeros(L, d, dtype=torch.long): values truncated to ints",
       'integer table')
def pe_long(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    freq = 10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
    pe = torch.zeros(L, d, dtype=torch.long)
    pe[:, 0::2] = torch.sin(pos / freq).long()
    pe[:, 1::2] = torch.cos(pos / freq).long()
    return pe


@wrong("pe-int-floordiv", C_PE, "exponent (2*i)//d_model with integer i: every frequency is 1",
       'same frequency')
def pe_floordiv(L, d):
    pos = torch.arange(L)[:, None]
    i = torch.arange(d // 2)
    freq = 10000 ** ((2 * i) // d)
    pe = torch.zeros(L, d)
    pe[:, 0::2] = torch.sin(pos / freq)
    pe[:, 1::2] = torch.cos(pos / freq)
    return pe


@wrong("pe-sin-twice", C_PE, "copy-paste: odd columns also sin",
       'odd columns hold sines')
def pe_sin_twice(L, d):
    return _pe(L, d, cos_fn=torch.sin)


@wrong("pe-odd-dmodel-crash?", C_PE, "returns a 0-d tensor",
       'returned shape ()')
def pe_scalar(L, d):
    return torch.tensor(0.0)


@wrong("pe-probe-linspace-exponent", C_PE, "exponents from torch.linspace(0, 1, d_model // 2): 2i/(d_model-2)",
       'wrong frequency')
def pe_linspace(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    freq = 10000 ** torch.linspace(0, 1, d // 2)
    pe = torch.zeros(L, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos / freq), torch.cos(pos / freq)
    return pe


@wrong("pe-probe-fixed-512-table", C_PE, "a table precomputed once for d_model=512, sliced [:seq_len, :d_model]",
       'wrong frequency')
def pe_fixed_table(L, d):
    return _BIG[:L, :d].clone()


@wrong("pe-probe-normalised-positions", C_PE, "positions torch.arange(seq_len) / seq_len (normalised to [0, 1))",
       'wrong frequency')
def pe_norm_pos(L, d):
    pos = (torch.arange(L, dtype=torch.float32) / L)[:, None]
    freq = 10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
    pe = torch.zeros(L, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos / freq), torch.cos(pos / freq)
    return pe


@wrong("pe-half-columns", C_PE, "only the d_model // 2 sine columns: torch.sin(pos / freq), no cos",
       "should be (seq_len, d_model)")
def pe_half(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    return torch.sin(pos / _freq(d))


@wrong("pe-denominator-d-half", C_PE, "exponent 2i / (d_model // 2) (pairs counted, then 2i anyway)",
       "exponent is wrong")
def pe_dhalf(L, d):
    return _fill(L, d, _freq(d, d // 2))


@wrong("pe-exp-missing-minus", C_PE, "inv = torch.exp(arange(0, d, 2) * math.log(10000) / d): the minus sign lost",
       'instead of dividing')
def pe_exp_sign(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    inv = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * math.log(10000.0) / d)
    pe = torch.zeros(L, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * inv), torch.cos(pos * inv)
    return pe


@wrong("pe-stack-dim1", C_PE, "torch.stack([sin, cos], dim=1).flatten(1): halves, not interleaved",
       'they are interleaved')
def pe_stack1(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    ang = pos / _freq(d)
    return torch.stack([torch.sin(ang), torch.cos(ang)], dim=1).flatten(1)


@wrong("pe-freq-repeat-not-interleave", C_PE, "angles pos / freq.repeat(2) (tiled), sin on even cols, cos on odd",
       'frequencies are tiled')
def pe_repeat(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    ang = pos / _freq(d).repeat(2)  # (L, d): [f0, f1, ..., f0, f1, ...] instead of [f0, f0, f1, f1, ...]
    pe = torch.zeros(L, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(ang[:, 0::2]), torch.cos(ang[:, 1::2])
    return pe


@wrong("pe-probe-exponent-seq_len", C_PE, "exponent 2i / seq_len (the wrong size in the denominator)",
       "wrong frequency")
def pe_seq(L, d):
    return _fill(L, d, 10000.0 ** (torch.arange(0, d, 2, dtype=torch.float32) / L))


@wrong("pe-halves-and-base-1000", C_PE, "two mistakes at once: halves AND base 1000",
       'two slips: the sines and cosines sit in two halves')
def pe_two(L, d):
    return _fill(L, d, _freq(d, base=1000.0), halves=True)


@wrong("pe-float16", C_PE, "table built in half precision (torch.zeros(..., dtype=torch.float16))",
       'it should be torch.float32')
def pe_half_prec(L, d):
    return _fill(L, d, _freq(d)).half()


# Mistakes unlike the listed slips: the probe (each row looked up among the table's positions, each
# column against its sign, the columns' order) must name them.
wrong("pe-probe-count-down", C_PE, "positions L-1, ..., 1, 0: the table upside down", "positions count down")(
    lambda L, d: pe_right(L, d).flip(0))
wrong("pe-probe-start-at-two", C_PE, "positions from 2 (two special tokens skipped)", "positions start at 2")(
    lambda L, d: pe_right(L + 2, d)[2:])
wrong("pe-probe-minus-cos", C_PE, "the odd columns hold -cos", "the right values with the sign flipped")(
    lambda L, d: pe_right(L, d) * torch.tensor([1.0, -1.0]).repeat(d // 2))
wrong("pe-probe-columns-reversed", C_PE, "the columns in reverse order (pe.flip(1))", "columns in the wrong order")(
    lambda L, d: pe_right(L, d).flip(1))


# ----------------------------------------------------------------------------------------------
# Right answers, in many styles, each to pass


wrong("pe-package", C_PE, "the package's own function, passed as the answer", "calls the course's own")(
    ec.sinusoidal_positions)
right("pe-power", C_PE, "10000 ** (2i / d), sin and cos into the even and odd columns")(pe_right)


@right("pe-stack", C_PE, "interleave by stacking and flattening")
def pe_stack(L, d):
    pos = torch.arange(L).float().unsqueeze(1)
    inv = torch.exp(torch.arange(0, d, 2).float() * (-math.log(10000.0) / d))
    return torch.stack([torch.sin(pos * inv), torch.cos(pos * inv)], dim=-1).flatten(1)


@right("pe-double-outer", C_PE, "float64 torch.outer, cast with .float()")
def pe_r1(L, d):
    pos = torch.arange(L, dtype=torch.float64)
    inv = 1.0 / (10000.0 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    ang = torch.outer(pos, inv)
    pe = torch.empty(L, d, dtype=torch.float64)
    pe[:, ::2], pe[:, 1::2] = ang.sin(), ang.cos()
    return pe.float()


@right("pe-loops", C_PE, "plain Python loops with math.sin/cos")
def pe_r2(L, d):
    pe = torch.zeros(L, d)
    for pos in range(L):
        for i in range(0, d, 2):
            pe[pos, i] = math.sin(pos / (10000 ** (i / d)))
            pe[pos, i + 1] = math.cos(pos / (10000 ** (i / d)))
    return pe


@right("pe-numpy-then-torch", C_PE, "numpy then torch.from_numpy(...).float()")
def pe_r3(L, d):
    pos = np.arange(L)[:, None]
    ang = pos / np.power(10000, np.arange(0, d, 2) / d)
    pe = np.zeros((L, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(ang), np.cos(ang)
    return torch.from_numpy(pe).float()


@right("pe-noncontiguous", C_PE, "built as (d, L) and returned .T (non-contiguous)")
def pe_r4(L, d):
    pos = torch.arange(L, dtype=torch.float32)[None, :]
    inv = 10000 ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    t = torch.empty(d, L)
    t[0::2], t[1::2] = torch.sin(inv[:, None] * pos), torch.cos(inv[:, None] * pos)
    return t.T


@right("pe-parameter", C_PE, "returns nn.Parameter(table, requires_grad=False)")
def pe_r5(L, d):
    return nn.Parameter(_pe(L, d), requires_grad=False)


@right("pe-polar", C_PE, "complex exponentials: torch.polar, view_as_real, (imag, real) interleaved")
def pe_polar(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    ang = pos * torch.exp(-math.log(10000.0) * torch.arange(0, d, 2, dtype=torch.float32) / d)
    z = torch.polar(torch.ones_like(ang), ang)  # cos + i sin
    return torch.stack([z.imag, z.real], dim=-1).reshape(L, d)


@right("pe-lru-cache", C_PE, "functools.lru_cache: the same tensor object returned for repeated sizes")
@functools.lru_cache(maxsize=None)
def pe_cached(L, d):
    return _pe_d(L, d)


@right("pe-max-len-table-view", C_PE, "a 5000-row table per d_model kept in a dict; returns a view [:seq_len]")
def pe_maxlen(L, d):
    if d not in _TABLES:
        _TABLES[d] = _pe_d(5000, d)
    return _TABLES[d][:L]


@right("pe-rotation-cumprod", C_PE, "positions by repeated rotation: cumprod of complex64 steps e^{i w}")
def pe_cumprod(L, d):
    w = torch.exp(-math.log(10000.0) * torch.arange(0, d, 2, dtype=torch.float32) / d)
    step = torch.polar(torch.ones_like(w), w).to(torch.complex64)
    z = torch.cat([torch.ones(1, d // 2, dtype=torch.complex64), step.expand(L - 1, -1)]).cumprod(0)
    pe = torch.empty(L, d)
    pe[:, 0::2], pe[:, 1::2] = z.imag, z.real
    return pe


@right("pe-phase-shift", C_PE, "one sin for all columns: sin(angle + (col % 2) * pi/2), angles repeat_interleave(2)")
def pe_phase(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    ang = (pos / _freq(d)).repeat_interleave(2, dim=1)  # (L, d)
    phase = (torch.arange(d) % 2).float() * (math.pi / 2)
    return torch.sin(ang + phase)


@right("pe-where-einsum", C_PE, "einsum('i,j->ij') on all columns, torch.where(even, sin, cos)")
def pe_where(L, d):
    cols = torch.arange(d)
    inv = 10000.0 ** (-(cols - cols % 2).float() / d)  # the same frequency for 2i and 2i+1
    ang = torch.einsum("i,j->ij", torch.arange(L).float(), inv)
    return torch.where(cols % 2 == 0, torch.sin(ang), torch.cos(ang))


test_catalogue_cases, test_wrong_answer_is_named, test_right_answer_passes = CATALOGUE.tests()
