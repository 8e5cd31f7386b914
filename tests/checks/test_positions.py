"""The checkers of ``sinusoidal_positions`` (notebook 01) and ``apply_rotary`` (notebook 13): every wrong answer
named, every right one passing."""

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
C_RT = checks.check_apply_rotary

CATALOGUE = Catalogue(C_PE, C_RT)
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


def pe_fixed_length(seq_len, d_model, rows=64):
    """A table of a fixed 64 rows, sliced to seq_len: notebook 01's 200 rows are cut to 64."""
    pos = torch.arange(rows, dtype=torch.float32)[:, None]
    angles = pos / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
    pe = torch.zeros(rows, d_model)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return pe[:seq_len]


wrong("pe-fixed-length", C_PE, "a table of 64 rows, sliced to seq_len", "is the table's length fixed")(pe_fixed_length)

_BUFFER = torch.zeros(512, 512)


def pe_shared_buffer(seq_len, d_model):
    """Written into a global buffer and returned as a view of it: the next call overwrites the last table."""
    pos = torch.arange(seq_len, dtype=torch.float32)[:, None]
    angles = pos / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
    table = _BUFFER[:seq_len, :d_model]
    table[:, 0::2], table[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return table


wrong("pe-shared-buffer", C_PE, "a view of a global buffer, written by every call", "changed when")(pe_shared_buffer)


_PE_BY_WIDTH, _PE_BY_LENGTH = {}, {}


@wrong("pe-cached-by-width", C_PE, "a table built once per d_model at the first seq_len, sliced after",
       "is the table's length fixed")
def pe_cached_by_width(seq_len, d_model):
    if d_model not in _PE_BY_WIDTH:
        _PE_BY_WIDTH[d_model] = _pe(seq_len, d_model)
    return _PE_BY_WIDTH[d_model][:seq_len].clone()


@wrong("pe-cached-by-length", C_PE, "a table cached by seq_len alone: a later width gets the old table",
       "a table kept from an earlier call of the same length")
def pe_cached_by_length(seq_len, d_model):
    if seq_len not in _PE_BY_LENGTH:
        _PE_BY_LENGTH[seq_len] = _pe(seq_len, d_model)
    return _PE_BY_LENGTH[seq_len].clone()


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
       "the positions are scaled")
def pe_norm_pos(L, d):
    pos = (torch.arange(L, dtype=torch.float32) / L)[:, None]
    freq = 10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
    pe = torch.zeros(L, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos / freq), torch.cos(pos / freq)
    return pe


@wrong("pe-probe-exponent-from-1", C_PE, "two_i = torch.arange(1, d_model, 2): odd numbers used as 2i",
       "each exponent is off by 1/d_model")
def pe_from_1(L, d):
    return _fill(L, d, 10000 ** (torch.arange(1, d, 2, dtype=torch.float32) / d))


@wrong("pe-probe-degrees", C_PE, "torch.sin(torch.deg2rad(angles)): the angles taken as degrees",
       "the angles are taken as degrees")
def pe_degrees(L, d):
    return _fill(L, d, _freq(d), pos=torch.deg2rad(torch.arange(L, dtype=torch.float32))[:, None])


@wrong("pe-probe-linspace-positions", C_PE, "positions torch.linspace(0, 1, seq_len) * seq_len: steps of L / (L - 1)",
       "the positions are scaled")
def pe_linspace_pos(L, d):
    return _fill(L, d, _freq(d), pos=(torch.linspace(0, 1, L) * L)[:, None])


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



# The sines and cosines put together by a stack (or cat) and a reshape along the wrong dimension.
def _sin_cos(L, d):
    angles = torch.arange(L, dtype=torch.float32)[:, None] / _freq(d)  # (L, d/2)
    return angles.sin(), angles.cos()


wrong("pe-stack-dim0-reshape", C_PE, "torch.stack([sin, cos]).reshape(L, d): (2, L, d/2) read as (L, d)",
      "each row takes the sines of two positions")(lambda L, d: torch.stack(_sin_cos(L, d)).reshape(L, d))
wrong("pe-cat-dim0-reshape", C_PE, "torch.cat([sin, cos]).reshape(L, d): (2L, d/2) read as (L, d)",
      "each row takes the sines of two positions")(lambda L, d: torch.cat(_sin_cos(L, d)).reshape(L, d))


@wrong("pe-angles-frequency-first", C_PE, "angles inv_freq[:, None] * pos (d/2, L), then stack(dim=-1).reshape(L, d)",
       "the table was read frequency by frequency")
def pe_frequency_first(L, d):
    angles = (1 / _freq(d))[:, None] * torch.arange(L, dtype=torch.float32)[None, :]  # (d/2, L)
    return torch.stack([angles.sin(), angles.cos()], dim=-1).reshape(L, d)


wrong("pe-stack-permuted-reshape", C_PE, "torch.stack([sin, cos]).permute(2, 1, 0).reshape(L, d)",
      "the table was read frequency by frequency")(
    lambda L, d: torch.stack(_sin_cos(L, d)).permute(2, 1, 0).reshape(L, d))
wrong("pe-probe-stack-reshape-transposed", C_PE, "torch.stack([sin, cos]).reshape(d, L).T",
      "many sit in the wrong places")(lambda L, d: torch.stack(_sin_cos(L, d)).reshape(d, L).T)
wrong("pe-stack-dim1-reshape", C_PE, "torch.stack([sin, cos], dim=1).reshape(L, d): halves",
      "they are interleaved")(lambda L, d: torch.stack(_sin_cos(L, d), dim=1).reshape(L, d))
right("pe-stack-permute-right", C_PE, "torch.stack([sin, cos]).permute(1, 2, 0).reshape(L, d)")(
    lambda L, d: torch.stack(_sin_cos(L, d)).permute(1, 2, 0).reshape(L, d))
right("pe-cat-then-interleave", C_PE, "torch.cat([sin, cos], -1) then its columns taken in interleaved order")(
    lambda L, d: torch.cat(_sin_cos(L, d), -1)[:, torch.arange(d).reshape(2, d // 2).T.reshape(-1)])



# ----------------------------------------------------------------------------------------------
# apply_rotary (notebook 13)


def _angles(x, positions=None, base=10000.0):
    """The (L, d/2) angles positions * base^(-2i/d), as a learner computes them."""
    length, d = x.shape[-2], x.shape[-1]
    if positions is None:
        positions = torch.arange(length)
    inv_freq = base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)  # (d/2,)
    return positions.float()[:, None] * inv_freq  # (L, d/2)


def _turn(x, angles):
    """Each pair (x[2i], x[2i+1]) turned by the (L, d/2) angles."""
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


def rt_right(x, positions=None, base=10000.0):
    return _turn(x, _angles(x, positions, base))


# Wrong answers, each to be named

wrong("rt-identity", C_RT, "returns x as it is", "nothing is turned")(lambda x, positions=None, base=10000.0: x.clone())


@wrong("rt-wrong-way", C_RT, "the sine terms with their signs swapped: turned by minus the angle", "the wrong way")
def rt_wrong_way(x, positions=None, base=10000.0):
    angles = _angles(x, positions, base)
    cos, sin = angles.cos(), angles.sin()
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack([even * cos + odd * sin, -even * sin + odd * cos], dim=-1).flatten(-2)


@wrong("rt-rotate-half", C_RT, "Hugging Face's layout: cat(freqs, freqs) and rotate_half (features i and i + d/2)",
       "valid RoPE layout, but not the one this exercise asks for")
def rt_rotate_half(x, positions=None, base=10000.0):
    freqs = _angles(x, positions, base)
    emb = torch.cat([freqs, freqs], dim=-1)  # (L, d)
    x1, x2 = x.chunk(2, dim=-1)
    return x * emb.cos() + torch.cat([-x2, x1], dim=-1) * emb.sin()


@wrong("rt-halves-out", C_RT, "the pairs turned right, returned as torch.cat([first, second], dim=-1)",
       "laid out as two halves")
def rt_halves_out(x, positions=None, base=10000.0):
    d = x.shape[-1]
    if positions is None:
        positions = torch.arange(x.shape[-2])
    angles = positions[:, None].double() * base ** (-torch.arange(0, d, 2).double() / d)  # (L, d/2)
    even, odd = x[..., 0::2].double(), x[..., 1::2].double()
    first, second = even * angles.cos() - odd * angles.sin(), even * angles.sin() + odd * angles.cos()
    return torch.cat([first, second], dim=-1).to(x.dtype)


@wrong("rt-exponent-i", C_RT, "inv_freq = base ** (-torch.arange(d // 2) / d): i/d, not 2i/d", "base^(-i/d)")
def rt_exponent_i(x, positions=None, base=10000.0):
    length, d = x.shape[-2:]
    positions = torch.arange(length) if positions is None else positions
    angles = positions.float()[:, None] * base ** (-torch.arange(d // 2, dtype=torch.float32) / d)
    return _turn(x, angles)


@wrong("rt-exponent-half-d", C_RT, "inv_freq = base ** (-arange(0, d, 2) / (d // 2)): over d/2", "divides by d/2")
def rt_half_d(x, positions=None, base=10000.0):
    length, d = x.shape[-2:]
    positions = torch.arange(length) if positions is None else positions
    angles = positions.float()[:, None] * base ** (-torch.arange(0, d, 2, dtype=torch.float32) / (d // 2))
    return _turn(x, angles)


@wrong("rt-floor-division", C_RT, "inv_freq = base ** -(torch.arange(0, d, 2) // d): every exponent 0",
       "integer division")
def rt_floor(x, positions=None, base=10000.0):
    length, d = x.shape[-2:]
    positions = torch.arange(length) if positions is None else positions
    return _turn(x, positions.float()[:, None] * base ** -(torch.arange(0, d, 2) // d).float())


@wrong("rt-positions-ignored", C_RT, "always torch.arange(L), the positions argument unused",
       "ignores the positions it is given")
def rt_ignore_positions(x, positions=None, base=10000.0):
    return _turn(x, _angles(x, None, base))


@wrong("rt-positions-rebased", C_RT, "positions - positions[0]: the given positions shifted to start at 0",
       "or shifts them to start at 0")
def rt_rebased(x, positions=None, base=10000.0):
    return _turn(x, _angles(x, None if positions is None else positions - positions[0], base))


@wrong("rt-log10", C_RT, "inv_freq = exp(-arange(0, d, 2) / d * math.log10(base)): log10, not the natural log",
       "math.log10 where the natural log belongs")
def rt_log10(x, positions=None, base=10000.0):
    return _turn(x, _angles(x, positions, math.exp(math.log10(base))))


@wrong("rt-from-one", C_RT, "positions torch.arange(1, L + 1) by default", "off by one")
def rt_from_one(x, positions=None, base=10000.0):
    if positions is None:
        positions = torch.arange(1, x.shape[-2] + 1)
    return _turn(x, _angles(x, positions, base))


@wrong("rt-base-ignored", C_RT, "10000 written in, the base argument unused", "ignores the base argument")
def rt_base_ignored(x, positions=None, base=10000.0):
    return _turn(x, _angles(x, positions))


@wrong("rt-cos-sin-swapped", C_RT, "sin where cos belongs and cos where sin belongs", "cos and sin are swapped")
def rt_swapped(x, positions=None, base=10000.0):
    angles = _angles(x, positions, base)
    return _turn(x, math.pi / 2 - angles)  # cos(pi/2 - a) = sin(a)


@wrong("rt-odd-kept", C_RT, "out = x.clone(); only out[..., 0::2] is written", "only the even features are turned")
def rt_odd_kept(x, positions=None, base=10000.0):
    angles = _angles(x, positions, base)
    out = x.clone()
    out[..., 0::2] = x[..., 0::2] * angles.cos() - x[..., 1::2] * angles.sin()
    return out


@wrong("rt-degrees", C_RT, "torch.deg2rad on angles already in radians", "treated as degrees")
def rt_degrees(x, positions=None, base=10000.0):
    return _turn(x, torch.deg2rad(_angles(x, positions, base)))


@wrong("rt-wrong-axis", C_RT, "the pairs taken along the positions: x read as (..., d, L)",
       "turns along the wrong axis")
def rt_wrong_axis(x, positions=None, base=10000.0):
    xt = x.transpose(-2, -1)  # (..., d, L), taken for (..., L, d)
    return _turn(xt, _angles(xt, None, base)).transpose(-2, -1)


@wrong("rt-tiled", C_RT, "GPT-J's x * cos + rotate_every_two(x) * sin, with cat(freqs, freqs) not repeat_interleave",
       "frequencies are tiled")
def rt_tiled(x, positions=None, base=10000.0):
    freqs = _angles(x, positions, base)
    emb = torch.cat([freqs, freqs], dim=-1)  # should be freqs.repeat_interleave(2, dim=-1)
    every_two = torch.stack([-x[..., 1::2], x[..., 0::2]], dim=-1).flatten(-2)
    return x * emb.cos() + every_two * emb.sin()


@wrong("rt-float32-out", C_RT, "out = torch.zeros(x.shape): float32 for a float64 x", "should keep x's dtype")
def rt_float32(x, positions=None, base=10000.0):
    angles = _angles(x, positions, base)
    out = torch.zeros(x.shape)
    out[..., 0::2] = x[..., 0::2] * angles.cos() - x[..., 1::2] * angles.sin()
    out[..., 1::2] = x[..., 0::2] * angles.sin() + x[..., 1::2] * angles.cos()
    return out


@wrong("rt-in-place", C_RT, "x[..., 0::2], x[..., 1::2] = ...; return x", "changed its input `x` in place")
def rt_in_place(x, positions=None, base=10000.0):
    angles = _angles(x, positions, base)
    even, odd = x[..., 0::2].clone(), x[..., 1::2].clone()
    x[..., 0::2] = even * angles.cos() - odd * angles.sin()
    x[..., 1::2] = even * angles.sin() + odd * angles.cos()
    return x


@wrong("rt-one-per-pair", C_RT, "returns only the first feature of each pair, (..., L, d/2)", "one value per pair")
def rt_one_per_pair(x, positions=None, base=10000.0):
    angles = _angles(x, positions, base)
    return x[..., 0::2] * angles.cos() - x[..., 1::2] * angles.sin()


@wrong("rt-pairs-unflattened", C_RT, "torch.stack([first, second], dim=-1) without .flatten(-2)",
       "the pairs are still separate")
def rt_unflattened(x, positions=None, base=10000.0):
    angles = _angles(x, positions, base)
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack([even * angles.cos() - odd * angles.sin(), even * angles.sin() + odd * angles.cos()], dim=-1)


@wrong("rt-length-from-last-dim", C_RT, "length, d = x.shape[-1], x.shape[-2]: the angles (d, L/2)",
       "positions[:, None] * inv_freq are (L, d/2)")
def rt_dims_swapped(x, positions=None, base=10000.0):
    length, d = x.shape[-1], x.shape[-2]
    angles = torch.arange(length).float()[:, None] * base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    return _turn(x, angles)


@wrong("rt-detach", C_RT, "the result built from x.detach()", "cuts the gradient")
def rt_detach(x, positions=None, base=10000.0):
    return rt_right(x.detach(), positions, base)


# Mistakes unlike the listed slips: the probes (q . k against the offset, each pair's length and angle) name them.
@wrong("rt-probe-linspace-exponent", C_RT, "exponents torch.linspace(0, 1, d // 2): 2i/(d - 2)", "per position")
def rt_linspace(x, positions=None, base=10000.0):
    length, d = x.shape[-2:]
    positions = torch.arange(length) if positions is None else positions
    return _turn(x, positions.float()[:, None] * base ** -torch.linspace(0, 1, d // 2))


@wrong("rt-probe-squared-positions", C_RT, "angles positions ** 2 * inv_freq", "depend only on the offset")
def rt_squared(x, positions=None, base=10000.0):
    length, d = x.shape[-2:]
    positions = torch.arange(length) if positions is None else positions
    return _turn(x, positions.float()[:, None] ** 2 * base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d))


@wrong("rt-probe-overwritten", C_RT, "out = x.clone(); the odd features computed from the even ones already turned",
       "keeps the length of each pair")
def rt_overwritten(x, positions=None, base=10000.0):
    angles = _angles(x, positions, base)
    out = x.clone()
    out[..., 0::2] = out[..., 0::2] * angles.cos() - out[..., 1::2] * angles.sin()
    out[..., 1::2] = out[..., 0::2] * angles.sin() + out[..., 1::2] * angles.cos()
    return out


@wrong("rt-probe-positions-reversed", C_RT, "the given positions read back to front, positions.flip(0)",
       "turns by the angle of another position")
def rt_reversed(x, positions=None, base=10000.0):
    positions = torch.arange(x.shape[-2]) if positions is None else positions
    return _turn(x, _angles(x, positions.flip(0), base))


@wrong("rt-probe-doubled", C_RT, "x * 2 before turning (a scale slipped in)", "2 times as long")
def rt_doubled(x, positions=None, base=10000.0):
    return rt_right(2 * x, positions, base)


wrong("rt-package", C_RT, "the package's own function, passed as the answer", "calls the course's own")(ec.apply_rotary)


# Right answers, in many styles, each to pass

right("rt-empty-like", C_RT, "torch.empty_like, the even and odd features written in turn")(rt_right)


@right("rt-stack-flatten", C_RT, "torch.stack([first, second], dim=-1).flatten(-2)")
def rt_stack(x, positions=None, base=10000.0):
    angles = _angles(x, positions, base)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).flatten(-2)


@right("rt-complex", C_RT, "complex numbers: view_as_complex, times torch.polar(1, angles), view_as_real")
def rt_complex(x, positions=None, base=10000.0):
    angles = _angles(x, positions, base).double()
    z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], -1, 2).contiguous())  # (..., L, d/2)
    turned = z * torch.polar(torch.ones_like(angles), angles)
    return torch.view_as_real(turned).flatten(-2).to(x.dtype)


@right("rt-einsum-matrices", C_RT, "a 2 x 2 rotation matrix per (position, pair), applied with einsum")
def rt_einsum(x, positions=None, base=10000.0):
    angles = _angles(x, positions, base).to(x.dtype)
    cos, sin = angles.cos(), angles.sin()
    rot = torch.stack([torch.stack([cos, -sin], -1), torch.stack([sin, cos], -1)], -2)  # (L, d/2, 2, 2)
    pairs = x.unflatten(-1, (-1, 2))  # (..., L, d/2, 2)
    return torch.einsum("lpij,...lpj->...lpi", rot, pairs).flatten(-2)


@right("rt-every-two", C_RT, "GPT-J's x * cos + rotate_every_two(x) * sin, frequencies repeat_interleave(2)")
def rt_every_two(x, positions=None, base=10000.0):
    emb = _angles(x, positions, base).repeat_interleave(2, dim=-1).to(x.dtype)  # (L, d)
    every_two = torch.stack([-x[..., 1::2], x[..., 0::2]], dim=-1).flatten(-2)
    return x * emb.cos() + every_two * emb.sin()


@right("rt-float64-exp-log", C_RT, "frequencies exp(-2i/d * ln(base)) in float64, cast to x's dtype at the end")
def rt_float64(x, positions=None, base=10000.0):
    length, d = x.shape[-2:]
    pos = torch.arange(length, dtype=torch.float64) if positions is None else positions.double()
    inv = torch.exp(-torch.arange(0, d, 2, dtype=torch.float64) / d * math.log(base))
    angles = torch.outer(pos, inv)
    even, odd = x[..., 0::2].double(), x[..., 1::2].double()
    out = torch.cat([(even * angles.cos() - odd * angles.sin())[..., None],
                     (even * angles.sin() + odd * angles.cos())[..., None]], dim=-1)
    return out.reshape(x.shape).to(x.dtype)


# Numbers rounded on the way, tables kept between calls, and other slips added later.
@wrong("rt-probe-float16-angles", C_RT, "angles = positions[:, None].half() * inv_freq.half(), cos and sin in float",
       "the angles lose digits")
def rt_half_angles(x, positions=None, base=10000.0):
    positions = torch.arange(x.shape[-2]) if positions is None else positions
    inv_freq = base ** (-torch.arange(0, x.shape[-1], 2, dtype=torch.float32) / x.shape[-1])
    return _turn(x, (positions[:, None].half() * inv_freq.half()).float())


@wrong("rt-probe-bfloat16-angles", C_RT, "the angles made in bfloat16, .float() before cos and sin",
       "the angles lose digits")
def rt_bf16_angles(x, positions=None, base=10000.0):
    return _turn(x, _angles(x, positions, base).bfloat16().float())


@wrong("rt-probe-float16-cos-sin", C_RT, "cos and sin rounded to float16 (a half-precision table), then to x's dtype",
       "carries only 2 or 3 significant digits")
def rt_half_tables(x, positions=None, base=10000.0):
    angles = _angles(x, positions, base)
    cos, sin = angles.cos().half().to(x.dtype), angles.sin().half().to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).flatten(-2)


_BY_SHAPE: dict = {}


@wrong("rt-probe-tables-cached-by-shape", C_RT, "cos and sin kept in a module-level dict keyed by (L, d)",
       "reuses cos and sin (or the angles) from an earlier call with the same shape")
def rt_cached_by_shape(x, positions=None, base=10000.0):
    key = tuple(x.shape[-2:])
    if key not in _BY_SHAPE:
        _BY_SHAPE[key] = _angles(x, positions, base)
    return _turn(x, _BY_SHAPE[key])


_BY_POSITIONS: dict = {}


@wrong("rt-probe-tables-cached-without-base", C_RT, "angles cached by (L, d, positions), the base left out of the key",
       "reuses cos and sin (or the angles) from an earlier call with the same shape")
def rt_cached_without_base(x, positions=None, base=10000.0):
    key = (*x.shape[-2:], None if positions is None else tuple(positions.tolist()))
    if key not in _BY_POSITIONS:
        _BY_POSITIONS[key] = _angles(x, positions, base)
    return _turn(x, _BY_POSITIONS[key])


@wrong("rt-exponent-sign", C_RT, "inv_freq = base ** (torch.arange(0, d, 2) / d): the minus sign left out",
       "the exponent has the wrong sign")
def rt_exponent_sign(x, positions=None, base=10000.0):
    length, d = x.shape[-2:]
    positions = torch.arange(length) if positions is None else positions
    return _turn(x, positions.float()[:, None] * base ** (torch.arange(0, d, 2, dtype=torch.float32) / d))


@wrong("rt-probe-positions-scaled", C_RT, "positions divided by L (normalised positions)",
       "the same factor for each pair")
def rt_positions_by_length(x, positions=None, base=10000.0):
    positions = torch.arange(x.shape[-2]) if positions is None else positions
    return _turn(x, _angles(x, positions.float() / x.shape[-2], base))


_RIGHT_CACHE: dict = {}


@right("rt-cached-by-everything", C_RT, "cos and sin cached by (L, d, base, positions, dtype)")
def rt_cached_right(x, positions=None, base=10000.0):
    key = (*x.shape[-2:], base, None if positions is None else tuple(positions.tolist()), x.dtype)
    if key not in _RIGHT_CACHE:
        angles = _angles(x, positions, base)
        _RIGHT_CACHE[key] = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    cos, sin = _RIGHT_CACHE[key]
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).flatten(-2)


@right("rt-loops", C_RT, "plain loops over rows and pairs with math.cos and math.sin")
def rt_loops(x, positions=None, base=10000.0):
    length, d = x.shape[-2:]
    out = x.clone()
    for j, p in enumerate(range(length) if positions is None else positions.tolist()):
        for i in range(d // 2):
            c, s = math.cos(p * base ** (-2 * i / d)), math.sin(p * base ** (-2 * i / d))
            a, b = x[..., j, 2 * i], x[..., j, 2 * i + 1]
            out[..., j, 2 * i], out[..., j, 2 * i + 1] = a * c - b * s, a * s + b * c
    return out



test_catalogue_cases, test_wrong_answer_is_named, test_right_answer_passes = CATALOGUE.tests()
