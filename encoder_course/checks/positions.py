"""Checker of ``sinusoidal_positions`` (notebook 01): the table, and the usual slips in the formula."""

from __future__ import annotations

import math

import torch

from ._compare import _close, _described, _elementwise_bad, _first_match, _spans, probe
from ._run import ExerciseError, _checker, _expect_tensor, _invoke, _shape
from .registry import exercise


def _positions(seq_len, d_model, *, swap=False, halves=False, exponent="2i", start=0, multiply=False,
               base=10000.0, odd="cos", tiled=False):
    pos = torch.arange(start, start + seq_len, dtype=torch.float64).unsqueeze(1)
    i = torch.arange(d_model // 2, dtype=torch.float64)
    cols = torch.arange(d_model, dtype=torch.float64)
    if exponent == "2i":
        e_even = e_odd = 2 * i / d_model
    elif exponent == "i":
        e_even = e_odd = i / d_model
    elif exponent == "4i":
        e_even = e_odd = 4 * i / d_model
    elif exponent == "zero":  # integer division: 2i // d_model is 0 for every pair
        e_even = e_odd = torch.zeros_like(i)
    else:  # each column its own exponent j/d_model
        e_even, e_odd = cols[0::2] / d_model, cols[1::2] / d_model
    f_even, f_odd = (base ** e_even), (base ** e_odd)
    if tiled:  # the frequencies tiled (freq.repeat(2)): column j uses frequency j % (d_model / 2)
        freq = base ** e_even
        f_even, f_odd = freq[cols[0::2].long() % (d_model // 2)], freq[cols[1::2].long() % (d_model // 2)]
    a_even = pos * f_even if multiply else pos / f_even
    a_odd = pos * f_odd if multiply else pos / f_odd
    first, second = (torch.cos, torch.sin) if swap else (torch.sin, torch.cos)
    if odd != "cos":  # the same function in both columns (a copy-paste slip)
        first = second = {"sin": torch.sin, "cos_both": torch.cos}[odd]
    pe = torch.empty(seq_len, d_model, dtype=torch.float64)
    if halves:
        pe[:, : d_model // 2], pe[:, d_model // 2:] = first(a_even), second(a_odd)
    else:
        pe[:, 0::2], pe[:, 1::2] = first(a_even), second(a_odd)
    return pe.float()


_POSITION_MISTAKES = [
    ("sin and cos are swapped. Column 2i (even) holds the sine and column 2i+1 (odd) the cosine.",
     lambda L, d: {"pe": _positions(L, d, swap=True)}),
    ("the sines and cosines sit in two halves (all sines, then all cosines). In the original "
     "paper they are interleaved: column 2i is sin and column 2i+1 is cos of the same frequency.\n"
     "Hint: fill pe[:, 0::2] with the sines and pe[:, 1::2] with the cosines.",
     lambda L, d: {"pe": _positions(L, d, halves=True)}),
    ("the sines and cosines sit in two halves (and in the wrong order). They should be "
     "interleaved: column 2i is sin, column 2i+1 is cos of the same frequency (pe[:, 0::2], pe[:, 1::2]).",
     lambda L, d: {"pe": _positions(L, d, halves=True, swap=True)}),
    ("the exponent is wrong: you used 10000^(i/d_model) with i the pair index, but the exponent is "
     "2i/d_model (the even column number 2i divided by d_model).",
     lambda L, d: {"pe": _positions(L, d, exponent="i")}),
    ("the exponent is wrong: you doubled 2i a second time (10000^(4i/d_model)). If you take the even "
     "column numbers with torch.arange(0, d_model, 2), they already are 2i.",
     lambda L, d: {"pe": _positions(L, d, exponent="4i")}),
    ("the exponent is wrong for the odd columns: column 2i+1 should use the same frequency as column "
     "2i (exponent 2i/d_model), not its own column number (2i+1)/d_model.",
     lambda L, d: {"pe": _positions(L, d, exponent="j")}),
    ("you multiply the position by 10000^(2i/d_model) instead of dividing by it: the angle is "
     "pos / 10000^(2i/d_model).",
     lambda L, d: {"pe": _positions(L, d, multiply=True)}),
    ("positions start at 1, but they count from 0 (the first row is sin(0) = 0, cos(0) = 1).",
     lambda L, d: {"pe": _positions(L, d, start=1)}),
    ("the odd columns hold sines too. Column 2i is sin and column 2i+1 is cos of the same angle.",
     lambda L, d: {"pe": _positions(L, d, odd="sin")}),
    ("the even columns hold cosines too. Column 2i is sin and column 2i+1 is cos of the same angle.",
     lambda L, d: {"pe": _positions(L, d, odd="cos_both")}),
    ("every pair of columns has the same frequency, as if the exponent 2i/d_model were always 0. "
     "That happens with integer division (2 * i // d_model) or integer tensors: make the exponent a "
     "float, e.g. torch.arange(0, d_model, 2, dtype=torch.float32) / d_model.",
     lambda L, d: {"pe": _positions(L, d, exponent="zero")}),
    ("the frequencies use log10(10000) = 4 where the natural logarithm belongs: 1 / 10000^(2i/d_model) = "
     "exp(-(2i/d_model) * ln(10000)), with math.log(10000), not math.log10.",
     lambda L, d: {"pe": _positions(L, d, base=math.exp(4.0))}),
    ("the frequencies are tiled (freq.repeat(2): f0, f1, ..., f0, f1, ...) where each is needed twice in a "
     "row (f0, f0, f1, f1, ...): columns 2i and 2i+1 share frequency i, e.g. freq.repeat_interleave(2), or "
     "fill pe[:, 0::2] and pe[:, 1::2] from the same angles.",
     lambda L, d: {"pe": _positions(L, d, tiled=True)}),
] + [
    (f"the base of the frequencies is {other:g}; the paper uses 10000: pos / 10000^(2i/d_model).",
     lambda L, d, other=other: {"pe": _positions(L, d, base=other)})
    for other in (1000.0, 100.0, 100000.0, 10.0)
] + [
    (f"two slips: the sines and cosines sit in two halves (they are interleaved: column 2i is sin and column "
     f"2i+1 is cos of the same frequency), and the base of the frequencies is {other:g} (the paper uses 10000).",
     lambda L, d, other=other: {"pe": _positions(L, d, halves=True, base=other)})
    for other in (1000.0, 100.0, 100000.0, 10.0)
]


@probe
def _wrong_frequency(got: torch.Tensor, want: torch.Tensor, d_model: int) -> str:
    """If each column pair of ``got`` is (sin, cos) of pos * w for some w, name the first wrong w."""
    g = got.detach().double()
    if g.shape[0] < 3:
        return ""
    pos = torch.arange(g.shape[0], dtype=torch.float64)[:, None]
    w_got = torch.atan2(g[1, 0::2], g[1, 1::2])  # the angle at position 1, in (-pi, pi]
    if not torch.allclose(g[:, 0::2], torch.sin(pos * w_got), atol=1e-4) or not torch.allclose(
            g[:, 1::2], torch.cos(pos * w_got), atol=1e-4):
        return ""  # not a clean sin/cos pair with one frequency per pair
    w_want = 1.0 / 10000.0 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    wrong = (w_got - w_want).abs() > 1e-4 * w_want.abs().clamp_min(1e-3)
    if not wrong.any():
        return ""
    i = int(wrong.nonzero()[0])
    return (f"each column pair is a sine and a cosine, as it should be, but with the wrong frequency: pair "
            f"{i} (columns {2 * i} and {2 * i + 1}) turns by {float(w_got[i]):.6g} per position, and "
            f"1 / 10000^({2 * i}/{d_model}) = {float(w_want[i]):.6g} is right. Check the exponent "
            "2i/d_model (i counts pairs from 0, and d_model is the width asked for, not a fixed number) and "
            "that the positions are 0, 1, 2, ... as they are.")


@probe
def _rows_and_columns(got: torch.Tensor, seq_len: int, d_model: int) -> str:
    """Which position each row of ``got`` holds, and which columns have their sign flipped.

    Every row is looked up among the table's rows for positions -seq_len-4 ... 3 * seq_len + 4: a table
    whose rows are right rows in the wrong places says how the positions were counted.
    """
    first = -seq_len - 4
    table = _positions(4 * seq_len + 9, d_model, start=first).double()
    g = got.detach().double()
    held = []
    for row in g:
        found = ((table - row).abs().amax(dim=1) < 1e-4).nonzero()
        if not len(found):
            held = None
            break
        held.append(int(found[0]) + first)
    if held is not None and held != list(range(seq_len)):
        shown = ", ".join(map(str, held[:6])) + (", ..." if seq_len > 6 else "")
        steps = {b - a for a, b in zip(held, held[1:])}
        if steps == {1}:
            how = f"positions start at {held[0]}, but they count from 0"
        elif steps == {-1}:
            how = "positions count down, but row p is position p (0, 1, 2, ...)"
        elif len(steps) == 1:
            how = f"positions go in steps of {steps.pop()}, but row p is position p (0, 1, 2, ...)"
        else:
            how = "row p should hold position p (0, 1, 2, ...)"
        return (f"each row of yours is a right row of the table, but for another position: your rows hold positions "
                f"{shown}. So the formula is right and the positions are not: {how}.")
    want = _positions(seq_len, d_model).double()
    wrong = [j for j in range(d_model) if _elementwise_bad(g[:, j], want[:, j], 5.0).any()]
    flipped = [j for j in wrong if not _elementwise_bad(g[:, j], -want[:, j], 5.0).any()]
    if flipped and flipped == wrong:
        return (f"column{'s' if len(flipped) > 1 else ''} {_spans(flipped)} of yours hold "
                "the right values with the sign flipped (-sin or -cos); every other column is right: column 2i is "
                "+sin and column 2i+1 is +cos of pos / 10000^(2i/d_model).")
    return ""


@_checker("sinusoidal_positions")
def check_sinusoidal_positions(fn):
    """Check ``sinusoidal_positions(seq_len, d_model) -> Tensor[seq_len, d_model]`` (float32)."""
    from ..positions import sinusoidal_positions as reference

    name = exercise("sinusoidal_positions").name
    for seq_len, d_model in [(6, 8), (1, 2), (50, 16), (9, 64)]:
        what = f"for seq_len={seq_len}, d_model={d_model}"
        got = _invoke(name, what, fn, seq_len, d_model)
        got = _expect_tensor(name, got, what, "the position table")
        want = reference(seq_len, d_model)
        if got.shape != want.shape:
            hint = ""
            if tuple(got.shape) == (d_model, seq_len):
                hint = "\nHint: rows and columns are swapped: one row per position, one column per feature."
            raise ExerciseError(
                f"Your {name} returned shape {_shape(got)} {what}, but it should be "
                f"(seq_len, d_model) = {_shape(want)}.{hint}"
            )
        if got.dtype != torch.float32:
            if got.is_floating_point():
                hint = "compute in float32 (the default), or convert the finished table with .float()."
            else:
                hint = ("an integer table cannot hold sines and cosines (they are cut to -1, 0 or 1). "
                        "Create the table and the position and index tensors as floats: "
                        "torch.zeros(seq_len, d_model) and torch.arange(..., dtype=torch.float32) "
                        "(torch.arange gives integers by default).")
            raise ExerciseError(
                f"Your {name} returned dtype {got.dtype} {what}; it should be "
                f"torch.float32.\nHint: {hint}"
            )
        if torch.isnan(got).any():
            raise ExerciseError(
                f"Your {name} returned NaN values {what}. Look for a division by zero "
                "or a power of a negative number."
            )
        if not _close(got, want, factor=5.0):
            mistake = _first_match({"pe": got}, _POSITION_MISTAKES, seq_len, d_model)
            if not mistake:  # large angles (pos * 10000^(2i/d_model), say) lose digits in float32
                mistake = _first_match({"pe": got}, _POSITION_MISTAKES, seq_len, d_model, factor=100.0)
            if mistake:
                raise ExerciseError(f"Your {name} is not right yet {what}: {mistake}")
            found = _rows_and_columns(got, seq_len, d_model) or _wrong_frequency(got, want, d_model) or _described(
                got, want, ("position", "column"), factor=5.0)
            raise ExerciseError(
                f"Your {name} is not right yet {what}: {found}\nHint: PE[pos, 2i] = sin(pos / 10000^(2i/d_model)) "
                "and PE[pos, 2i+1] = cos(pos / 10000^(2i/d_model)), positions from 0."
            )
