"""Checkers of ``sinusoidal_positions`` (notebook 01) and ``apply_rotary`` (notebook 13): the usual slips in each
formula."""

from __future__ import annotations

import functools
import math

import torch

from ._compare import _check_gradients, _close, _compare_output, _described, _first_match, _shape_hint, _spans, probe
from ._modules import _call_inputs
from ._run import ExerciseError, _check_unchanged, _checker, _expect_tensor, _gen, _invoke, _randn, _shape, _snapshot
from .registry import exercise


def _positions(seq_len, d_model, *, swap=False, halves=False, exponent="2i", start=0, multiply=False,
               base=10000.0, odd="cos", tiled=False):
    """The table and its usual slips, each column computed in float64 from the frequency of its pair."""
    pos = torch.arange(start, start + seq_len, dtype=torch.float64).unsqueeze(1)
    cols = torch.arange(d_model, dtype=torch.float64)
    # Column j's pair: j // 2, or j % (d_model / 2) with the frequencies tiled (freq.repeat(2)).
    i = cols % (d_model // 2) if tiled else cols // 2
    # "zero": integer division (2i // d_model is 0 for every pair); "j": each column its own exponent j/d_model.
    e = {"2i": 2 * i, "i": i, "4i": 4 * i, "zero": 0 * i, "j": cols}[exponent] / d_model
    angle = pos * base ** e if multiply else pos / base ** e  # (L, d_model)
    first, second = (torch.cos, torch.sin) if swap else (torch.sin, torch.cos)
    if odd != "cos":  # the same function in both columns (a copy-paste slip)
        first = second = {"sin": torch.sin, "cos_both": torch.cos}[odd]
    pe = torch.where(cols % 2 == 0, first(angle), second(angle))
    if halves:  # the even columns' values first, then the odd columns'
        pe = torch.cat([pe[:, 0::2], pe[:, 1::2]], dim=1)
    return pe.float()


def _pe_slip(**settings):
    return lambda L, d: {"pe": _positions(L, d, **settings)}


def _reshaped(seq_len, d_model, layout):
    """The right sines and cosines stacked and reshaped: along dim 0 ("dim0"), or from angles (d/2, L) ("T")."""
    pe = _positions(seq_len, d_model).double()
    sin, cos = pe[:, 0::2], pe[:, 1::2]
    if layout == "dim0":  # torch.stack([sin, cos]) is (2, L, d/2); torch.cat([sin, cos]) (2L, d/2): the same memory
        return torch.stack([sin, cos]).reshape(seq_len, d_model).float()
    return torch.stack([sin.T, cos.T], dim=-1).reshape(seq_len, d_model).float()


_POSITION_MISTAKES = [
    ("sin and cos are swapped. Column 2i (even) holds the sine and column 2i+1 (odd) the cosine.", _pe_slip(swap=True)),
    ("the sines and cosines sit in two halves (all sines, then all cosines). In the original "
     "paper they are interleaved: column 2i is sin and column 2i+1 is cos of the same frequency.\n"
     "Hint: fill pe[:, 0::2] with the sines and pe[:, 1::2] with the cosines. (torch.cat([sin, cos], dim=-1) and "
     "torch.stack([sin, cos], dim=1).reshape(seq_len, d_model) give halves; torch.stack([sin, cos], "
     "dim=-1).reshape(seq_len, d_model) interleaves.)", _pe_slip(halves=True)),
    ("the sines and cosines sit in two halves (and in the wrong order). They should be "
     "interleaved: column 2i is sin, column 2i+1 is cos of the same frequency (pe[:, 0::2], pe[:, 1::2]).",
     _pe_slip(halves=True, swap=True)),
    ("the exponent is wrong: you used 10000^(i/d_model) with i the pair index, but the exponent is "
     "2i/d_model (the even column number 2i divided by d_model).", _pe_slip(exponent="i")),
    ("the exponent is wrong: you doubled 2i a second time (10000^(4i/d_model)). If you take the even "
     "column numbers with torch.arange(0, d_model, 2), they already are 2i.", _pe_slip(exponent="4i")),
    ("the exponent is wrong for the odd columns: column 2i+1 should use the same frequency as column "
     "2i (exponent 2i/d_model), not its own column number (2i+1)/d_model.", _pe_slip(exponent="j")),
    ("you multiply the position by 10000^(2i/d_model) instead of dividing by it: the angle is "
     "pos / 10000^(2i/d_model).", _pe_slip(multiply=True)),
    ("positions start at 1, but they count from 0 (the first row is sin(0) = 0, cos(0) = 1).", _pe_slip(start=1)),
    ("the odd columns hold sines too. Column 2i is sin and column 2i+1 is cos of the same angle.", _pe_slip(odd="sin")),
    ("the even columns hold cosines too. Column 2i is sin and column 2i+1 is cos of the same angle.",
     _pe_slip(odd="cos_both")),
    ("every pair of columns has the same frequency, as if the exponent 2i/d_model were always 0. "
     "That happens with integer division (2 * i // d_model) or integer tensors: make the exponent a "
     "float, e.g. torch.arange(0, d_model, 2, dtype=torch.float32) / d_model.", _pe_slip(exponent="zero")),
    ("the frequencies use log10(10000) = 4 where the natural logarithm belongs: 1 / 10000^(2i/d_model) = "
     "exp(-(2i/d_model) * ln(10000)), with math.log(10000), not math.log10.", _pe_slip(base=math.exp(4.0))),
    ("the frequencies are tiled (freq.repeat(2): f0, f1, ..., f0, f1, ...) where each is needed twice in a "
     "row (f0, f0, f1, f1, ...): columns 2i and 2i+1 share frequency i, e.g. freq.repeat_interleave(2), or "
     "fill pe[:, 0::2] and pe[:, 1::2] from the same angles.", _pe_slip(tiled=True)),
] + [
    (f"the base of the frequencies is {other:g}; the paper uses 10000: pos / 10000^(2i/d_model).",
     _pe_slip(base=other))
    for other in (1000.0, 100.0, 100000.0, 10.0)
] + [
    (f"two slips: the sines and cosines sit in two halves (they are interleaved: column 2i is sin and column "
     f"2i+1 is cos of the same frequency), and the base of the frequencies is {other:g} (the paper uses 10000).",
     _pe_slip(halves=True, base=other))
    for other in (1000.0, 100.0, 100000.0, 10.0)
] + [
    ("every value is a right sine or cosine, but most sit in the wrong row: torch.stack([sin, cos]) (dim=0) is "
     "(2, seq_len, d_model/2), and torch.cat([sin, cos]) (dim=0) is (2 * seq_len, d_model/2); reshaped to (seq_len, "
     "d_model), each row takes the sines of two positions, and the cosines land in the lower half.\nHint: stack "
     "on the last dimension, torch.stack([sin, cos], dim=-1) (seq_len, d_model/2, 2), then .reshape(seq_len, "
     "d_model): column 2i is sin and column 2i+1 is cos of the same position.",
     lambda L, d: {"pe": _reshaped(L, d, "dim0")}),
    ("every value is a right sine or cosine, but most sit in the wrong row: the table was read frequency by "
     "frequency, as when the angles are (d_model/2, seq_len), one row per frequency (inv_freq[:, None] * pos), or "
     "the stacked sines and cosines are turned to (d_model/2, seq_len, 2) (.T or .permute) before the reshape to "
     "(seq_len, d_model).\nHint: make the angles (seq_len, d_model/2), one row per position, pos[:, None] * "
     "inv_freq[None, :]; then torch.stack([sin, cos], dim=-1).reshape(seq_len, d_model).",
     lambda L, d: {"pe": _reshaped(L, d, "T")}),
]


def _lookup(rows, table, accepts, first: int) -> list | None:
    """The position of each row: that of the first row of ``table`` (whose rows are positions first, first + 1,
    ...) for which ``accepts(table - row)``; None when some row is not there."""
    found = [accepts(table - row).nonzero() for row in rows]
    return None if any(not len(f) for f in found) else [int(f[0]) + first for f in found]


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
    ratio = w_got / w_want  # the same for every pair when the positions, not the frequencies, are off
    if float(ratio.max() - ratio.min()) < 1e-4 * float(ratio.abs().max()):
        c, length = float(ratio.mean()), g.shape[0]
        shift = math.log(c) / -math.log(10000.0) * d_model  # c = 10000^(-k/d_model): every exponent off by k
        if abs(shift - round(shift)) < 1e-3 and round(shift) != 0:
            k = round(shift)
            return (f"every column pair turns 10000^({-k}/{d_model}) = {c:.6g} times as fast as it should: each "
                    f"exponent is off by {k}/d_model, as with torch.arange({k}, d_model, 2) where 2i needs "
                    "torch.arange(0, d_model, 2) (the pair's index i counts from 0).")
        if abs(c - math.pi / 180) < 1e-6:
            return ("every column pair turns pi / 180 = 0.0174533 times as fast as it should: the angles are "
                    "taken as degrees (torch.deg2rad or math.radians). They are radians already: torch.sin(angles).")
        known = {length / (length - 1): "torch.linspace(0, 1, seq_len) * seq_len?",
                 1 / (length - 1): "torch.linspace(0, 1, seq_len)?", 1 / length: "positions divided by seq_len?"}
        how = next((what for value, what in known.items() if abs(c - value) < 1e-4 * value), "")
        return (f"every column pair turns {c:.6g} times as fast as it should (pair 0 by {float(w_got[0]):.6g} per "
                "position, where 1 is right), so the frequencies are right and the positions are scaled "
                + (f"({how}). " if how else ". ")
                + "The positions are the row numbers themselves, 0, 1, 2, ..., seq_len - 1 "
                "(torch.arange(seq_len)).")
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
    held = _lookup(g, table, lambda diff: diff.abs().amax(dim=1) < 1e-4, first)
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
    wrong = [j for j in range(d_model) if not _close(g[:, j], want[:, j], 5.0)]
    flipped = [j for j in wrong if _close(g[:, j], -want[:, j], 5.0)]
    if flipped and flipped == wrong:
        return (f"column{'s' if len(flipped) > 1 else ''} {_spans(flipped)} of yours hold "
                "the right values with the sign flipped (-sin or -cos); every other column is right: column 2i is "
                "+sin and column 2i+1 is +cos of pos / 10000^(2i/d_model).")
    return ""


@probe
def _moved_values(got: torch.Tensor, want: torch.Tensor) -> str:
    """If ``got`` holds exactly ``want``'s values, rearranged other than by rows or by columns, say where some went."""
    g, w = got.detach().double(), want.detach().double()
    if g.shape != w.shape or not _close(g.flatten().sort().values, w.flatten().sort().values, 5.0):
        return ""
    if all(any(_close(g[:, j], w[:, k], 5.0) for k in range(w.shape[1])) for j in range(g.shape[1])):
        return ""  # whole columns moved: said column by column elsewhere
    seq_len, d_model = w.shape
    shown = []
    for r, c in ((r, c) for r in range(seq_len) for c in range(d_model)):
        if len(shown) == 3:
            break
        near = ((w - g[r, c]).abs() < 1e-5).nonzero().tolist()
        if len(near) == 1 and near[0] != [r, c]:  # a value found in one place only: it came from there
            p, j = near[0]
            shown.append(f"row {r}, column {c} holds the {'sin' if j % 2 == 0 else 'cos'} of position {p} "
                         f"(column {j})")
    where = f" ({'; '.join(shown)})" if shown else ""
    return (f"every value of yours is a right value of the table, but many sit in the wrong places{where}: the sines "
            "and cosines were put together in the wrong order (a stack, cat or reshape along the "
            "wrong dimension?). Row p holds position p, with sin in column 2i and cos in column 2i+1: "
            "torch.stack([sin, cos], dim=-1).reshape(seq_len, d_model) with sin and cos (seq_len, d_model/2), or "
            "pe[:, 0::2] = sin; pe[:, 1::2] = cos.")


@_checker("sinusoidal_positions")
def check_sinusoidal_positions(fn):
    """Check ``sinusoidal_positions(seq_len, d_model) -> Tensor[seq_len, d_model]`` (float32)."""
    from ..positions import sinusoidal_positions as reference

    name = exercise("sinusoidal_positions").name
    # Notebook 01 asks for 200 rows. The last two repeat a width with more rows and a length with another width:
    # a table kept from an earlier call, by width or by length, comes back the wrong size.
    for seq_len, d_model in [(6, 8), (1, 2), (50, 16), (9, 64), (200, 32), (12, 8), (50, 64)]:
        what = f"for seq_len={seq_len}, d_model={d_model}"
        got = _call_inputs(name, fn, what, {"seq_len": seq_len, "d_model": d_model}, "the position table")
        want = reference(seq_len, d_model)
        if got.shape != want.shape:
            hint = ("\nHint: rows and columns are swapped: one row per position, one column per feature."
                    if tuple(got.shape) == (d_model, seq_len) else
                    f"\nHint: {got.shape[0]} rows where {seq_len} are asked for: is the table's length fixed "
                    "somewhere (a constant, or a table built once and sliced)? Build it for the seq_len given."
                    if got.dim() == 2 and got.shape[1] == d_model and 1 < got.shape[0] < seq_len else
                    f"\nHint: {got.shape[1]} columns where d_model={d_model} asks for {d_model}: is this a table kept "
                    "from an earlier call of the same length? Build it for the d_model given."
                    if got.dim() == 2 and got.shape[0] == seq_len and got.shape[1] != d_model else "")
            raise ExerciseError(
                f"Your {name} returned shape {_shape(got)} {what}, but it should be "
                f"(seq_len, d_model) = {_shape(want)}.{hint}"
            )
        if got.dtype != torch.float32:
            hint = "compute in float32 (the default), or convert the finished table with .float()."
            if not got.is_floating_point():
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
            found = (_rows_and_columns(got, seq_len, d_model) or _wrong_frequency(got, want, d_model)
                     or _moved_values(got, want) or _described(got, want, ("position", "column"), factor=5.0))
            raise ExerciseError(
                f"Your {name} is not right yet {what}: {found}\nHint: PE[pos, 2i] = sin(pos / 10000^(2i/d_model)) "
                "and PE[pos, 2i+1] = cos(pos / 10000^(2i/d_model)), positions from 0."
            )
    # A table is the caller's: a later call (another width) must not change one returned before.
    first = _call_inputs(name, fn, "for seq_len=6, d_model=8", {"seq_len": 6, "d_model": 8}, "the position table")
    kept = first.clone()
    _call_inputs(name, fn, "for seq_len=9, d_model=16", {"seq_len": 9, "d_model": 16}, "the position table")
    if not torch.equal(first, kept):
        raise ExerciseError(
            f"The table your {name} returned for seq_len=6, d_model=8 changed when it was called again (seq_len=9, "
            "d_model=16): it is a view of a tensor your function keeps between calls and writes into.\nHint: build "
            "a new table in each call (torch.zeros(seq_len, d_model), then fill it), or return a .clone().")


# ----------------------------------------------------------------------------------------------
# apply_rotary (notebook 13): rotary positions, each pair of features turned by position * frequency


def _rotary(x, positions=None, base=10000.0, *, sign=1.0, layout="pairs", exponent="2i", shift=0, own_positions=True,
            own_base=True, swap=False, odd="turned", unit=1.0, tiled=False, axis=-2):
    """Rotary positions and their usual slips, computed in float64 and returned in x's dtype."""
    if axis == -1:  # the pairs taken along the positions: x read as (..., d, L)
        if positions is not None and not torch.equal(positions, torch.arange(len(positions))):
            raise ValueError("this slip is named only where the positions are 0, 1, 2, ...")
        return _rotary(x.transpose(-2, -1), None, base).transpose(-2, -1)
    h = x.double()
    length, d = h.shape[-2], h.shape[-1]
    pos = torch.arange(length) if positions is None or not own_positions else positions
    pos = pos.double() + shift  # (L,)
    i = torch.arange(d // 2, dtype=torch.float64)  # the pair index
    e = {"2i": 2 * i / d, "i": i / d, "half": 2 * i / (d // 2), "zero": 0 * i, "plus": -2 * i / d}[exponent]
    inv_freq = (base if own_base else 10000.0) ** -e  # (d/2,)
    # Feature j turns with the frequency of its pair, j // 2, or of j % (d/2) with the frequencies tiled
    # (torch.cat([inv_freq, inv_freq])).
    angles = pos[:, None] * (inv_freq.repeat(2) if tiled else inv_freq.repeat_interleave(2)) * unit  # (L, d)
    cos, sin = angles.cos(), sign * angles.sin()
    if swap:
        cos, sin = sin, cos
    # The features paired: 2i with 2i+1, or i with i + d/2 (the halves, rotate_half).
    one, two = (slice(0, None, 2), slice(1, None, 2)) if layout == "pairs" else (slice(d // 2), slice(d // 2, None))
    a, b = h[..., one], h[..., two]  # (..., L, d/2) each
    out = torch.empty_like(h)
    out[..., one] = a * cos[:, 0::2] - b * sin[:, 0::2]
    out[..., two] = b if odd == "kept" else a * sin[:, 1::2] + b * cos[:, 1::2]
    return out.to(x.dtype)  # (..., L, d)


_FORMULA = ("feature 2i gets x[2i] * cos - x[2i+1] * sin and feature 2i+1 gets x[2i] * sin + x[2i+1] * cos, "
            "with the angle positions * base^(-2i/d)")


def _rt_slip(**settings):
    return lambda x, p, b: {"out": _rotary(x, p, b, **settings)}


_ROTARY_MISTAKES = [
    ("it returns x as it came in: nothing is turned. Each pair of features (x[2i], x[2i+1]) must be rotated by "
     f"its row's angle: {_FORMULA}.", lambda x, p, b: {"out": x.clone()}),
    ("it turns each pair the wrong way (by minus the angle): the signs of the sine terms are swapped. "
     f"Rotary positions turn counter-clockwise: {_FORMULA}.", _rt_slip(sign=-1.0)),
    ("it pairs feature i with feature i + d/2 (the two halves, rotate_half in Hugging Face's code). That is a "
     "valid RoPE layout, but not the one this exercise asks for: here the pairs are interleaved, features 2i "
     "and 2i+1, x[..., 0::2] and x[..., 1::2].", _rt_slip(layout="halves")),
    ("each pair is turned right, but the results are laid out as two halves (torch.cat([first, second], dim=-1): "
     "every turned even feature, then every turned odd one). Each goes back to its own place: out[..., 0::2] = "
     "first and out[..., 1::2] = second, or torch.stack([first, second], dim=-1).flatten(-2).",
     lambda x, p, b: {"out": (lambda r: torch.cat([r[..., 0::2], r[..., 1::2]], dim=-1))(_rotary(x, p, b))}),
    ("the frequencies are base^(-i/d) with i the pair index: the exponent is 2i/d (torch.arange(0, d, 2) / d "
     "already gives 2i/d).", _rt_slip(exponent="i")),
    ("the exponent divides by d/2 instead of d: base^(-2i/(d/2)) turns the slow pairs far too slowly. The "
     "frequencies are base^(-2i/d), torch.arange(0, d, 2) / d with d = x.shape[-1].", _rt_slip(exponent="half")),
    ("every pair turns at the same frequency, 1 per position, as if the exponent 2i/d were always 0. That "
     "happens with integer division (torch.arange(0, d, 2) // d): make the exponent a float, "
     "torch.arange(0, d, 2) / d.", _rt_slip(exponent="zero")),
    ("the frequencies are tiled (torch.cat([freq, freq]): f0, f1, ..., f0, f1, ...) where each is needed twice in "
     "a row (f0, f0, f1, f1, ...): features 2i and 2i+1 share frequency i, e.g. freq.repeat_interleave(2), or work "
     "on x[..., 0::2] and x[..., 1::2] with the (L, d/2) angles.", _rt_slip(tiled=True)),
    ("it ignores the positions it is given and uses 0, 1, 2, ... always (or shifts them to start at 0): row j "
     "turns by positions[j] * base^(-2i/d), the positions as given; torch.arange(L) is only for when positions is "
     "None.", _rt_slip(own_positions=False)),
    ("the frequencies are e^(-2i/d * log10(base)): math.log10 where the natural log belongs, so the base is "
     "e^log10(base) (e^4 = 54.6 for 10000). base^(-2i/d) = exp(-2i/d * math.log(base)).",
     lambda x, p, b: {"out": _rotary(x, p, math.exp(math.log10(b)))}),
    ("the positions are off by one (counted from 1): the first row is position 0, turned by angle 0 (left as "
     "it is); torch.arange(L) counts 0, 1, 2, ... and given positions are used as they are.", _rt_slip(shift=1)),
    ("it ignores the base argument and always uses 10000: the frequencies are base^(-2i/d) with the base "
     "it is given.", _rt_slip(own_base=False)),
    ("cos and sin are swapped: the angle's cosine multiplies the feature itself and its sine the other "
     f"feature of the pair: {_FORMULA}.", _rt_slip(swap=True)),
    ("only the even features are turned and the odd ones are left as they are: both features of a pair "
     "change, feature 2i+1 gets x[2i] * sin + x[2i+1] * cos (computed from x's values, before any are "
     "overwritten).", _rt_slip(odd="kept")),
    ("the angles are treated as degrees (times pi / 180, torch.deg2rad or math.radians): "
     "positions * base^(-2i/d) is already in radians, which torch.cos and torch.sin take.",
     _rt_slip(unit=math.pi / 180)),
    ("the angles are turned into degrees (times 180 / pi, torch.rad2deg or math.degrees): "
     "positions * base^(-2i/d) is already in radians, which torch.cos and torch.sin take.",
     _rt_slip(unit=180 / math.pi)),
    ("it turns along the wrong axis: it pairs rows (positions 2j and 2j+1) and gives each feature an angle, "
     "as if x were (..., d, L). The positions run along dimension -2 and the features along the last one: "
     "pair the features x[..., 0::2] and x[..., 1::2], and turn row j by its position.", _rt_slip(axis=-1)),
    ("the exponent has the wrong sign: the frequencies are base^(+2i/d), growing with i, so the pairs after the "
     "first turn many times too fast. They are base^(-2i/d) = 1 / base^(2i/d): the first pair turns by 1 "
     "per position and each later one more slowly.", _rt_slip(exponent="plus")),
]


def _rotated(name, label, fn, x, positions, base):
    """The learner's call, with positions and base as keywords only when the case gives them."""
    given = {} if positions is None else {"positions": positions}
    if base != 10000.0:
        given["base"] = base
    return _invoke(name, label, fn, x, **given)


def _wrapped(angle: torch.Tensor) -> torch.Tensor:
    """Angles brought into [-pi, pi)."""
    return torch.remainder(angle + math.pi, 2 * math.pi) - math.pi


def _pos_and_freq(x, positions, base):
    """The positions of x's rows (L,) and the frequencies of its pairs (d/2,), in float64."""
    length, d = x.shape[-2], x.shape[-1]
    pos = (torch.arange(length) if positions is None else positions).double()  # (L,)
    return pos, base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)


def _turned(got: torch.Tensor, x: torch.Tensor):
    """Each pair (x[2i], x[2i+1]) against (got[2i], got[2i+1]): its length before and after, and the angle it
    turned, each (N, L, d/2) with the leading dimensions flattened into N."""
    a, b, c, s = x.double()[..., 0::2], x.double()[..., 1::2], got.double()[..., 0::2], got.double()[..., 1::2]
    return tuple(t.reshape(-1, *t.shape[-2:]) for t in (
        torch.hypot(a, b), torch.hypot(c, s), torch.atan2(a * s - b * c, a * c + b * s)))


_ROUNDING = 2.0 ** -7  # a few roundings to float16 (each up to 2^-11 of the value) or bfloat16 (2^-8) stay below


@probe
def _rounded_probe(got: torch.Tensor, x: torch.Tensor, positions, base: float) -> str:
    """Numbers rounded to a low precision on the way: every pair turned by nearly its angle (off by a few parts in
    a thousand of it, at most), its length nearly kept, and the errors unlike one factor (that is no rounding)."""
    pos, inv_freq = _pos_and_freq(x, positions, base)
    before, after, turned = _turned(got, x)
    usable = before > 0.05 * float(before.max())  # short pairs give their angle less exactly
    want = (pos[:, None] * inv_freq).expand_as(turned)  # (N, L, d/2)
    err = _wrapped(turned - want).abs()
    stretch = ((after - before).abs() / before.clamp_min(1e-30))[usable]
    kept = float(stretch.max()) <= 1e-5  # no length changed: only the angles are off
    allowed = _ROUNDING * want.abs() + (2e-5 if kept else _ROUNDING / 2)  # rounding x moves angle 0 too
    if not usable.any() or not (err[usable] <= allowed[usable]).all() or float(stretch.max()) > _ROUNDING:
        return ""
    moved = want.abs() > 1e-2
    ratio = (want + _wrapped(turned - want))[moved & usable] / want[moved & usable]
    if not ratio.numel() or float(ratio.max() - ratio.min()) < 1e-5 or (
            not kept and float(stretch.max() - stretch.min()) < 1e-5):
        return ""  # one factor for every angle (or every length): a slip, not rounding
    where = err.masked_fill(~usable, -1.0)  # the largest angle error
    n, j, i = (int(v) for v in torch.unravel_index(where.argmax(), where.shape))
    at = (f"at row {j} (position {int(pos[j])}), pair {i} (features {2 * i} and {2 * i + 1}) turns by "
          f"{float(want[n, j, i] + _wrapped(turned - want)[n, j, i]):.6g} rad, where {int(pos[j])} * "
          f"base^(-{2 * i}/{x.shape[-1]}) = {float(want[n, j, i]):.6g}")
    if kept:
        return ("the angles lose digits: each pair keeps its length and turns by nearly its angle, but the angles "
                f"are rounded to 2 or 3 significant digits: {at}. That is the precision of float16 or bfloat16 "
                "(positions.half() * inv_freq.half(), say), and the error grows with the angle, so the far "
                "positions of a long sequence lose the most. Compute the angles positions * base^(-2i/d) in "
                "float32 or float64, and cast only their cos and sin to x's dtype.")
    return ("your result carries only 2 or 3 significant digits: the pairs change their lengths by up to "
            f"{float(stretch.max()):.2g} of them (a rotation keeps them exactly) and turn by nearly their angles "
            f"({at}), as when cos and sin, or x itself, are rounded to float16 or bfloat16 on the way. Compute "
            "the angles and their cos and sin in float32 or float64, then cast with .to(x.dtype): the result "
            "keeps x's precision.")


@probe
def _kept_probe(name, fn, label) -> str:
    """cos and sin kept between calls, looked up by the shape alone. A shape no case uses is called with some
    positions (it must be right), then with others; another new shape with base=500 (right), then with 10000."""
    from ..positions import apply_rotary as reference

    first, second = torch.tensor([5, 9, 2]), torch.tensor([1, 7, 4])
    cause = "it reuses cos and sin (or the angles) from an earlier call with the same shape: for a new x "
    fix = ("Compute them from this call's positions and base (it is cheap), or key a cache by everything they "
           "depend on (the positions, the base), not by the shape (L, d) alone.")
    for shape, (p1, b1), (p2, b2) in (((3, 14), (first, 10000.0), (second, 10000.0)),
                                        ((4, 12), (torch.arange(4), 500.0), (torch.arange(4), 10000.0))):
        x = _randn(_gen(31), *shape)
        outs = []
        for p, base in ((p1, b1), (p2, b2)):
            try:
                out = _rotated(name, f"{label} (and then for x {shape} with positions {p.tolist()}, base={base:g})",
                               fn, x.clone(), p.clone(), base)
            except ExerciseError:  # (a function that fails on this shape: no verdict from it)
                return ""
            if not isinstance(out, torch.Tensor) or out.shape != x.shape:
                return ""
            outs.append(out)
        if not _close(outs[0], reference(x, p1, b1)) or _close(outs[1], reference(x, p2, b2)):
            continue
        if _close(outs[1], reference(x, p1, b1)):
            shown = (f"with positions {p1.tolist()} it is right, but called again with positions {p2.tolist()} it "
                     f"turns the rows by the angles of {p1.tolist()}, the first call's" if b1 == b2 else
                     f"with base={b1:g} it is right, but called again with base={b2:g} (and the same positions) it "
                     f"gives the result of base={b1:g}, the first call's")
            return f"{cause}{shape} {shown}. {fix}"
    return ""


def _pairs_probe(got: torch.Tensor, x: torch.Tensor, positions, base: float) -> str:
    """Localise a wrong rotation pair by pair and row by row: a length that changes, a row turned as another
    position, a pair turning at another frequency, or which pairs and rows are turned by the wrong angle."""
    length, d = x.shape[-2], x.shape[-1]
    pos, inv_freq = _pos_and_freq(x, positions, base)
    before, after, turned = _turned(got, x)
    scale = float(before.max())
    stretched = (after - before).abs() > 1e-4 * scale + 1e-4 * before
    if stretched.any():
        usable = before > 1e-2 * scale
        ratio = after[usable] / before[usable]
        if float(ratio.max() - ratio.min()) < 1e-3 * float(ratio.abs().mean()):
            return (f"every pair (x[2i], x[2i+1]) comes out {float(ratio.mean()):.4g} times as long as it went in: a "
                    "rotation turns a pair without stretching it (the cos and sin of one angle, and no other factor).")
        n, j, i = (int(v) for v in stretched.nonzero()[0])
        return (f"a rotation keeps the length of each pair (x[2i], x[2i+1]), but yours changes it: at row {j} "
                f"(position {int(pos[j])}), pair {i} (features {2 * i} and {2 * i + 1}) is "
                f"{float(before[n, j, i]):.4g} long in x and {float(after[n, j, i]):.4g} in your result. Both features "
                "of a pair come from that same pair of x, mixed by the cos and sin of one angle: x[2i] * cos - x[2i+1] "
                "* sin and x[2i] * sin + x[2i+1] * cos.")
    want = pos[:, None] * inv_freq  # (L, d/2)
    if not (_wrapped(turned - want).abs() > 1e-3).any():
        return ""
    apart = _wrapped(turned - turned[:1]).abs() > 1e-3
    if apart.any():
        n, j, i = (int(v) for v in apart.nonzero()[0])
        return (f"the same row is turned differently in different sequences or heads: at row {j}, pair {i} turns by "
                f"{float(turned[0, j, i]):.4g} rad in the first and by {float(turned[n, j, i]):.4g} in another. The "
                "angles depend on the position and the pair alone, (L, d/2), and broadcast over the leading "
                "dimensions.")
    angle = turned[0]  # (L, d/2): the same for every sequence and head
    miss = _wrapped(angle - want).abs() > 1e-3
    rows = [j for j in range(length) if miss[j].any()]
    pairs = [i for i in range(d // 2) if miss[:, i].any()]
    reach = int(pos.abs().max()) + length + 4
    table = torch.arange(-3 * reach, 3 * reach + 1, dtype=torch.float64)[:, None] * inv_freq  # each position's angles
    held = _lookup(angle[rows], table, lambda diff: (_wrapped(diff).abs() < 1e-3).all(dim=1), -3 * reach)
    if held:
        shown = "; ".join(f"row {j} (position {int(pos[j])}) is turned as position {p}"
                          for j, p in list(zip(rows, held))[:3])
        offsets = {p - int(pos[j]) for j, p in zip(rows, held)}
        how = (f"every position is off by {offsets.pop():+d}" if len(offsets) == 1 else
               "row j turns by positions[j] * base^(-2i/d), positions[j] as given (j when positions is None)")
        return (f"each pair turns by the angle of another position: {shown}. The formula is right and the "
                f"positions are not: {how}.")
    small = (want.abs() > 1e-3) & (want.abs() < 1.0) & (angle.abs() < 3.0)
    ratio = angle[small] / want[small]
    if len(pairs) == d // 2 > 1 and len(set(torch.nonzero(small)[:, 1].tolist())) > 1 and float(
            ratio.max() - ratio.min()) < 1e-3 * abs(float(ratio.mean())):  # one factor, whatever the pair
        return (f"every pair turns {float(ratio.mean()):.6g} times as fast as it should, the same factor for each "
                "pair: the frequencies base^(-2i/d) are right and the positions are scaled (divided by L or by "
                "the largest position, say). Row j turns by positions[j] * base^(-2i/d), positions[j] as given "
                "(j when positions is None).")
    for i in pairs:
        usable = small[:, i]
        if usable.any():
            ratio = angle[usable, i] / want[usable, i]
            if float(ratio.max() - ratio.min()) < 1e-3 * abs(float(ratio.mean())):
                right = [k for k in range(d // 2) if k not in pairs]
                many = len(right) > 1
                fine = f" (pair{'s' if many else ''} {_spans(right)} {'are' if many else 'is'} right)" if right else ""
                return (f"each pair turns in proportion to the position, as it should, but pair {i} (features {2 * i} "
                        f"and {2 * i + 1}) turns by {float(ratio.mean() * inv_freq[i]):.6g} per position, and "
                        f"base^(-{2 * i}/{d}) = {float(inv_freq[i]):.6g} is right{fine}. Check the exponent 2i/d: i "
                        "counts pairs from 0, and d is x's last dimension.")
    j = rows[0]
    i = int(miss[j].nonzero()[0])
    return (f"pair{'s' if len(pairs) > 1 else ''} {_spans(pairs)} of {d // 2} turn by the wrong angle, at row"
            f"{'s' if len(rows) > 1 else ''} {_spans(rows)} of {length}: at row {j} (position {int(pos[j])}), pair "
            f"{i} (features {2 * i} and {2 * i + 1}) turns by {float(angle[j, i]):.4g} rad, and "
            f"{int(pos[j])} * base^(-{2 * i}/{d}) = {float(_wrapped(want[j, i])):.4g} (up to whole turns).")


def _offset_probe(name, fn, label, got, x, positions, base) -> str:
    """Rotary's promise, tested on the learner's function: q . k depends only on the offset n - m.

    The same query at every position 0..L-1 and the same key at every position are turned; then
    scores[m, n] (query at m, key at n) must be the same along each diagonal (n - m fixed). When it is
    not, the difference on the case's own input is localised pair by pair.
    """
    length, d = 6, x.shape[-1]
    g = _gen(29)
    q, k = _randn(g, d), _randn(g, d)
    both = torch.stack([q.expand(length, d), k.expand(length, d)])  # (2, L, d): q at every position, then k
    out = _rotated(name, f"{label}, with the same query and key at positions 0-{length - 1}", fn, both, None, base)
    if not isinstance(out, torch.Tensor) or out.shape != both.shape:
        return ""
    scores = out[0].double() @ out[1].double().T  # (L, L): query at m, key at n
    tol = 1e-4 * float(scores.abs().max()) + 1e-6
    worst = None
    for offset in range(-(length - 1), length):
        along = torch.diagonal(scores, offset)  # scores[m, m + offset], m from max(0, -offset) up
        spread = float(along.max() - along.min())
        if spread > tol and (worst is None or spread > worst[0]):
            low, high = (int(m) + max(0, -offset) for m in (along.argmin(), along.argmax()))
            worst = (spread, offset, (low, low + offset), float(along.min()), (high, high + offset), float(along.max()))
    if worst is None:
        return ""
    _, offset, (m1, n1), v1, (m2, n2), v2 = worst
    where = _pairs_probe(got, x, positions, base)
    return (f"rotary positions make q · k depend only on the offset between the two positions, but yours does "
            f"not: with the same q and k, q · k is {v1:.4g} for the query at position {m1} and the key at {n1}, and "
            f"{v2:.4g} at positions {m2} and {n2}, the same offset {offset}. Turning each pair (x[2i], x[2i+1]) by "
            "position * base^(-2i/d) keeps that promise." + (f" Where yours differs: {where}" if where else ""))


def _rotary_shape(got: torch.Tensor, x: torch.Tensor) -> str:
    """What a wrong shape of apply_rotary's result most likely comes from."""
    d = x.shape[-1]
    if tuple(got.shape) == tuple(x.shape[:-1]) + (d // 2,):
        return ("it holds one value per pair: both turned features go back into the result, out[..., 0::2] and "
                "out[..., 1::2] (or torch.stack([first, second], dim=-1).flatten(-2)).")
    if tuple(got.shape) == tuple(x.shape[:-1]) + (d // 2, 2):
        return "the pairs are still separate: join the last two dimensions, .flatten(-2), back to (..., L, d)."
    if got.dim() == 2 and x.dim() > 2:
        return ("the batch and head dimensions were lost: work on x[..., 0::2] and x[..., 1::2] (the ... keeps "
                "every leading dimension) and return a tensor shaped like x.")
    return _shape_hint(got.shape, x.shape) or "return a tensor shaped like x: (..., L, d)."


@_checker("apply_rotary")
def check_apply_rotary(fn):
    """Check ``apply_rotary(x, positions=None, base=10000.0) -> Tensor`` shaped like x, in x's dtype."""
    from ..positions import apply_rotary as reference

    name = exercise("apply_rotary").name
    g = _gen(13)
    given = ("Row j turns by positions[j] * base^(-2i/d): use the positions given as they are, and "
             "torch.arange(L) only when positions is None.")
    cases = [  # (label, x, positions, base, hint for that case)
        ("for x (6, 8), positions not given", _randn(g, 6, 8), None, 10000.0, ""),
        ("for multi-head x (2, 3, 5, 8) (B, H, L, d_head), positions not given", _randn(g, 2, 3, 5, 8), None, 10000.0,
         "It works for (L, d) but not with batch and head dimensions: take the features with x[..., 0::2] and "
         "x[..., 1::2] (the ... keeps every leading dimension), and let the (L, d/2) angles broadcast."),
        ("for x (2, 2, 7, 6) (d_head = 6: three pairs) with positions torch.arange(7)", _randn(g, 2, 2, 7, 6),
         torch.arange(7), 10000.0, ""),
        ("for x (2, 5, 8) with positions [3, 4, 5, 6, 7] (not starting at 0)", _randn(g, 2, 5, 8),
         torch.arange(3, 8), 10000.0, given),
        ("for x (1, 2, 6, 8) with positions [0, 2, 3, 7, 11, 20] (not consecutive)", _randn(g, 1, 2, 6, 8),
         torch.tensor([0, 2, 3, 7, 11, 20]), 10000.0, given),
        ("for x (2, 5, 8) with base=500", _randn(g, 2, 5, 8), None, 500.0,
         "The frequencies are base^(-2i/d) with the base given."),
        ("for float64 x (2, 3, 5, 8) with positions [1, 4, 6, 9, 12]", _randn(g, 2, 3, 5, 8).double(),
         torch.tensor([1, 4, 6, 9, 12]), 10000.0, ""),
        ("for tiny x (about 1e-3), (2, 5, 8)", _randn(g, 2, 5, 8, scale=1e-3), None, 10000.0, ""),
        ("for large x (about 1000), (2, 3, 5, 8), with positions [2, 3, 4, 5, 6]", _randn(g, 2, 3, 5, 8, scale=1e3),
         torch.arange(2, 7), 10000.0, ""),
    ]
    for label, x, positions, base, case_hint in cases:
        before = _snapshot({"x": x, "positions": positions})
        got = _rotated(name, label, fn, x, positions, base)
        _check_unchanged(name, before, {"x": x, "positions": positions})
        got = _expect_tensor(name, got, label, "the turned x")
        want = reference(x, positions, base)
        if got.shape != want.shape:
            raise ExerciseError(f"Your {name} returned shape {_shape(got)} {label}, but it should be x's shape, "
                                f"{_shape(want)}.\nHint: {_rotary_shape(got, x)}")
        if got.dtype != want.dtype:
            raise ExerciseError(
                f"Your {name} returned dtype {got.dtype} {label}; it should keep x's dtype ({want.dtype}).\nHint: make "
                "the result from x itself (torch.empty_like(x), x.clone(), or arithmetic on x's features); "
                "torch.empty(x.shape) or torch.zeros(...) without dtype= is float32, and so is x.float().")
        if (positions is not None or base != 10000.0) and not _close(got, want):
            kept = _kept_probe(name, fn, label)  # told apart from ignoring the positions (or the base)
            if kept:
                raise ExerciseError(f"Your {name} is not right yet {label}: {kept}\nHint: {case_hint or given}")
        _compare_output(
            name, got, want, label, _ROTARY_MISTAKES, (x, positions, base),
            f"turn each pair of features (x[2i], x[2i+1]) by the angle of its row: {_FORMULA}.", case_hint,
            rerun=functools.partial(_rotated, name, label, fn, x, positions, base),
            random_hint="nothing in rotary positions is random: the angles come from the positions and the base alone.",
            probes=[functools.partial(_rounded_probe, got, x, positions, base),
                    functools.partial(_offset_probe, name, fn, label, got, x, positions, base),
                    functools.partial(_pairs_probe, got, x, positions, base)],
            axes=("sequence",) * (x.dim() - 2) + ("position", "feature"))
    label, x, positions, base, _ = cases[4]
    _check_gradients(name, label, lambda x: _rotated(name, label, fn, x, positions, base),
                     lambda x: reference(x, positions, base), {"x": x})
