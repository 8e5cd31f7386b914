"""Checkers of ``padding_mask``, ``causal_mask`` (notebook 03) and ``sliding_window_mask`` (notebook 13): shape, dtype,
and which positions are True."""

from __future__ import annotations

import torch

from ._compare import _spans, probe
from ._modules import _call_inputs
from ._run import ExerciseError, _checker, _expect_tensor, _invoke, _shape
from .registry import exercise


def _check_mask_like(name, got, want, label, layout,
                     build="a comparison such as `token_ids != pad_id` already gives bools"):
    """``got`` as a bool tensor of ``want``'s shape; ``layout`` is the hint for a wrong shape (or makes it from
    the two shapes)."""
    got = _expect_tensor(name, got, label, "a bool mask")
    if got.shape != want.shape:
        hint = layout if isinstance(layout, str) else layout(tuple(got.shape), tuple(want.shape))
        raise ExerciseError(
            f"Your {name} returned shape {_shape(got)} {label}, but it should be {_shape(want)}.\nHint: {hint}"
        )
    if got.dtype != torch.bool and got.is_floating_point() and bool(((got == 0) | (got == float("-inf"))).all()) \
            and bool((got == 0).any()) and bool((got != 0).any()):
        raise ExerciseError(
            f"Your {name} returned an additive mask {label}: {got.dtype}, 0 where a key may be seen and -inf where "
            "not, as torch's float attn_mask is added to the scores. The course's masks are bool, True = may attend "
            f"(scores.masked_fill(~mask, float('-inf')) uses them).\nHint: {build}."
        )
    if got.dtype != torch.bool:
        raise ExerciseError(
            f"Your {name} returned dtype {got.dtype} {label}; a mask should be a bool tensor "
            f"(True = may attend).\nHint: {build}; do not convert it to numbers (no .float(), .int(), "
            ".long())."
        )
    return got


def _padding_layout(shape: tuple, want: tuple) -> str:
    """What a padding mask of the wrong shape most likely comes from (``want`` is (B, 1, 1, L))."""
    b, length = want[0], want[-1]
    if shape == (b, length):
        return ("add the two middle dimensions so the mask broadcasts over heads and queries: "
                "mask[:, None, None, :] gives (B, 1, 1, L).")
    if shape == (length, 1, 1, b):
        return ("the sequences and the positions are swapped: one row per sequence of token_ids as "
                "given, (B, 1, 1, L), without transposing it (no .T), and with B, L = token_ids.shape in that "
                "order.")
    if sorted(shape) == sorted(want) and shape[-1] == length:
        return "the batch axis comes first: (B, 1, 1, L), e.g. mask[:, None, None, :]."
    if sorted(shape) == sorted(want):
        return "the key axis L must be the last dimension: (B, 1, 1, L)."
    return "the shape should be (B, 1, 1, L), e.g. (token_ids != pad_id)[:, None, None, :]."


def _padding_rules(ids: torch.Tensor, pad_id: int) -> list:
    """The usual wrong rules for a padding mask, each with its explanation."""
    length = ids.shape[1]
    real = ids != pad_id
    positions = torch.arange(length)
    return [
        (ids > pad_id, "it keeps the ids greater than pad_id (token_ids > pad_id), which works only while "
                       "pad_id is the smallest id; here a real token has a smaller id. Compare for "
                       "inequality: token_ids != pad_id."),
        (positions[None, :] < real.sum(dim=1, keepdim=True),
         "it assumes the padding sits at the end (a mask built from each sequence's length), but padding "
         "may be anywhere (on the left, or in the middle): compare every id with pad_id, token_ids != pad_id."),
        (ids != ids[:, -1:], "it takes each sequence's last token as its padding, but a sequence without "
                             "padding ends in a real token: compare with the pad_id argument, token_ids != pad_id."),
        (positions[None, :] < (ids == pad_id).int().argmax(dim=1, keepdim=True),
         "it keeps the positions before the first pad (argmax of token_ids == pad_id), which marks a sequence "
         "without padding all False (argmax of all False is 0) and drops real tokens after a pad: compare "
         "every id with pad_id, token_ids != pad_id."),
        ((positions != pad_id)[None, :].expand(ids.shape[0], length),
         "it compares the positions (torch.arange(L)) with pad_id, not the token ids: token_ids != pad_id."),
    ]


@probe
def _padding_probe(name, fn, label, got: torch.Tensor, ids: torch.Tensor, pad_id: int, fresh, unused: int) -> str:
    """What a wrong (B, L) padding mask responds to: the ids themselves, or the positions, or neither.

    A mask that depends on each id alone marks every occurrence of an id alike: then the ids it
    drops are named. A pad_id that appears nowhere (``unused``; the learner's mask for it is ``fresh``)
    must give a mask of all True.
    """
    if isinstance(fresh, torch.Tensor) and fresh.dtype == torch.bool and fresh.numel() == ids.numel() \
            and not fresh.all():
        dropped = sorted({t for t, k in zip(ids.reshape(-1).tolist(), fresh.reshape(-1).tolist()) if not k})
        return (f"with pad_id={unused}, an id that appears nowhere, every token is real and the mask should be all "
                f"True, but yours marks the ids {dropped} as padding: the mask must come from comparing each id "
                "with the pad_id argument alone, token_ids != pad_id.")
    order = torch.arange(ids.shape[0] - 1, -1, -1)
    turned = _invoke(name, f"{label}, with the sequences in reverse order", fn, ids[order], pad_id)
    if ids.shape[0] > 1 and isinstance(turned, torch.Tensor) and turned.numel() == ids.numel() \
            and not torch.equal(turned.reshape(ids.shape).bool(), got[order]):
        return ("with the sequences in reverse order your mask's rows should simply swap places too, but they do "
                "not: each sequence's row must come from its own ids alone (token_ids != pad_id, row by row), "
                "not from another sequence or from the batch as a whole.")
    by_id = {}
    for token, keep in zip(ids.reshape(-1).tolist(), got.reshape(-1).tolist()):
        by_id.setdefault(token, set()).add(keep)
    flipped = _invoke(name, f"{label}, with each sequence's ids in reverse order", fn, ids.flip(-1), pad_id)
    follows = not (isinstance(flipped, torch.Tensor) and flipped.numel() == ids.numel()
                   and not torch.equal(flipped.reshape(ids.shape).bool(), got.flip(-1)))
    if all(len(v) == 1 for v in by_id.values()) and follows:
        dropped = sorted(t for t, v in by_id.items() if v == {False} and t != pad_id)
        pad_kept = by_id.get(pad_id) == {True}
        return ("your mask follows the ids, as it should, but "
                + (f"marks the ids {dropped} as padding" if dropped else "")
                + (" and " if dropped and pad_kept else "")
                + (f"marks pad_id={pad_id} itself as real" if pad_kept else "")
                + f": only {pad_id} is padding, token_ids != pad_id.")
    want = ids != pad_id
    real_dropped, pads_kept = (want & ~got).nonzero().tolist(), (~want & got).nonzero().tolist()
    parts = []
    if real_dropped:
        b, j = real_dropped[0]
        parts.append(f"{len(real_dropped)} real token(s) marked as padding (the first: sequence {b}, position {j}, "
                     f"id {int(ids[b, j])})")
    if pads_kept:
        b, j = pads_kept[0]
        parts.append(f"{len(pads_kept)} pad(s) marked as real (the first: sequence {b}, position {j})")
    how = ("the same id gets True in one place and False in another" if not all(len(v) == 1 for v in by_id.values())
           else "with each sequence's ids in reverse order your mask is not the same mask reversed")
    return (f"{how}, so your mask depends on where an id sits, not only on the id: " + " and ".join(parts)
            + ". Compare each id with pad_id, token_ids != pad_id, wherever it sits (padding may come at the end, "
            "at the start, or both).")


@_checker("padding_mask")
def check_padding_mask(fn):
    """Check ``padding_mask(token_ids, pad_id) -> BoolTensor[B, 1, 1, L]`` (True = real token)."""
    from ..masks import padding_mask as reference

    name = exercise("padding_mask").name
    cases = [
        (torch.tensor([[5, 7, 9, 0, 0], [3, 4, 0, 0, 0], [8, 6, 2, 4, 1]]), 0,
         "for token ids of shape (3, 5) with pad_id=0"),
        (torch.tensor([[0, 17, 4, 1, 1, 1], [0, 9, 9, 9, 12, 2]]), 1,
         "for token ids of shape (2, 6) with pad_id=1 (0 is a real token here)"),
        (torch.tensor([[2, 3]]), 0, "for token ids of shape (1, 2) without padding"),
        (torch.tensor([[0, 0, 4, 5], [6, 0, 7, 0]]), 0,
         "for token ids (2, 4) padded on the left and in the middle (pad_id=0)"),
        (torch.tensor([[6, 2, 0, 0, 0], [1, 1, 1, 1, 1], [4, 0, 9, 0, 3]]), 0,
         "for other token ids of shape (3, 5), the first case's shape (pad_id=0)"),
    ]
    for ids, pad_id, label in cases:
        got = _call_inputs(name, fn, label, {"token_ids": ids, "pad_id": pad_id}, None)
        want = reference(ids, pad_id)
        got = _check_mask_like(name, got, want, label, _padding_layout)
        if torch.equal(got, want):
            continue
        if torch.equal(got, ~want):
            raise ExerciseError(
                f"Your {name} is inverted {label}: it marks the padding with True. In this course True "
                "means 'may attend', so real tokens are True and padding is False (token_ids != pad_id)."
            )
        if pad_id != 0 and torch.equal(got, (ids != 0)[:, None, None, :]):
            raise ExerciseError(
                f"Your {name} compares with 0 instead of pad_id {label}. Use the pad_id argument: "
                "token_ids != pad_id."
            )
        # A rule that fits by chance here must also fit with a pad_id that appears nowhere.
        unused = int(ids.max()) + 7
        again = _invoke(name, f"for the same token ids with pad_id={unused} (an id that appears nowhere)",
                        fn, ids, unused)
        got = got[:, 0, 0, :]
        named = ""
        if isinstance(again, torch.Tensor) and again.numel() == ids.numel():
            there = again.reshape(ids.shape).bool()
            named = next((message for (rule, message), (other, _) in
                          zip(_padding_rules(ids, pad_id), _padding_rules(ids, unused))
                          if torch.equal(got, rule) and torch.equal(there, other)), "")
        message = named or (_padding_probe(name, fn, label, got, ids, pad_id, again, unused)
                            + f"\nYou return {got.int().tolist()}, the right mask is "
                            f"{want[:, 0, 0, :].int().tolist()} (1 = True = real token).")
        raise ExerciseError(f"Your {name} is not right yet {label}: {message}")


def _allowed(mask: torch.Tensor) -> list:
    """The keys each query (row) of a square mask may attend to."""
    return [[j for j, keep in enumerate(row) if keep] for row in mask.tolist()]


def _first_wrong_row(got: torch.Tensor, want: torch.Tensor, outside: str, inside: str, rule: str = "") -> str:
    """Which keys the first wrong query of a square mask may attend to, against ``want``'s (a run of keys):
    ``outside`` says why a key it should not see is wrong, ``inside`` why a missing one must be allowed."""
    rows = [(i, keys) for i, (keys, right) in enumerate(zip(_allowed(got), _allowed(want))) if keys != right]
    i, allowed = rows[0]
    right = _allowed(want)[i]
    seen = f"keys {_spans(allowed)}" if allowed else "no key at all"
    extra, missing = [j for j in allowed if j not in right], [j for j in right if j not in allowed]
    why = [f"{_spans(keys)} {'is' if len(keys) == 1 else 'are'} {what}"
           for keys, what in ((extra, outside), (missing, inside)) if keys]
    should = f"keys {right[0]}-{right[-1]}" if right[-1] > right[0] else f"key {right[0]} alone (itself)"
    return (f"{len(rows)} of {got.shape[0]} rows are wrong; the first, query {i}, may attend to {seen}, but it should "
            f"be {should}{rule}: " + "; ".join(why) + ".")


def _square_verdict(name, label, got, want, rules, found, *args):
    """Raise for ``got``, a wrong (L, L) mask: the first of ``rules`` (mask, explanation) it equals, or else the
    diagnosis of the probe ``found(got, want, *args)`` with both masks shown."""
    message = next((m for rule, m in rules if torch.equal(got, rule)), "") or (found(got, want, *args) + (
        f"\nYou return {got.int().tolist()}, the right mask is {want.int().tolist()} (1 = True = may attend; "
        "row = query, column = key)."))
    raise ExerciseError(f"Your {name} is not right yet {label}: {message}")


def _causal_rules(length: int) -> list:
    """The usual wrong causal masks of size ``length``, each with its explanation."""
    ones = torch.ones(length, length, dtype=torch.bool)
    return [
        (ones, "every position may attend to every key, the future included: the triangle is missing. Keep the "
               "lower one: torch.ones(L, L, dtype=torch.bool).tril()."),
        (ones.triu(1), "it is inverted: True marks the future positions. True means 'may attend', so "
                       "position i may attend to 0..i (the lower triangle, torch.tril)."),
        (ones.triu(), "True sits on and above the diagonal, so each position sees the future. Query i "
                      "(row i) may attend to keys 0..i: the lower triangle, torch.tril."),
        (ones.tril(-1), "the diagonal is False, so a position cannot attend to itself. Keep the diagonal: "
                        "torch.tril(..., diagonal=0)."),
        (~ones.tril(-1), "it is inverted. True means 'may attend': True on and below the diagonal (torch.tril)."),
        (torch.eye(length, dtype=torch.bool), "only the diagonal is True, so each position sees only itself. "
                                              "Position i may attend to every key up to itself, 0..i: the lower "
                                              "triangle, torch.tril."),
        *[(ones.tril(d), f"torch.tril(..., diagonal={d}) lets each position also see the next {d} key(s), the "
                         "future. Use diagonal=0 (the default): position i attends to keys 0..i.")
          for d in range(1, length)],
        *[(ones.triu(d), f"torch.triu(..., diagonal={d}) keeps the upper triangle, the future keys. A causal mask "
                         "is the lower triangle: torch.tril(torch.ones(L, L, dtype=torch.bool)).")
          for d in range(-length + 1, 0)],
    ]


@probe
def _causal_probe(got: torch.Tensor, want: torch.Tensor) -> str:
    """Which keys each query of a wrong causal mask may attend to, against 0..i."""
    return _first_wrong_row(got, want, "in its future", "its past or itself and must be allowed")


@_checker("causal_mask")
def check_causal_mask(fn):
    """Check ``causal_mask(L) -> BoolTensor[L, L]``, True on and below the diagonal."""
    name = exercise("causal_mask").name
    for length in (5, 1, 2, 8, 13):
        label = f"for L={length}"
        got = _invoke(name, label, fn, length)
        want = torch.ones(length, length, dtype=torch.bool).tril()
        short = isinstance(got, torch.Tensor) and got.dim() == 2 and got.shape[0] == got.shape[1] < length
        got = _check_mask_like(name, got, want, label,
                               f"{got.shape[0]} rows where L = {length}: one short (length - 1 somewhere?). The mask "
                               "has one row per position, torch.ones(length, length)."
                               if short and got.shape[0] == length - 1 and length != 2 else
                               f"{got.shape[0]} rows where L = {length}: is the mask's size fixed somewhere (a "
                               "constant, or a mask built once and sliced)? Build it for the length given." if short
                               else "return one row per query and one column per key: shape (L, L).",
                               "build it from bools, e.g. torch.ones(L, L, dtype=torch.bool).tril()")
        if not torch.equal(got, want):
            _square_verdict(name, label, got, want, _causal_rules(length), _causal_probe)


def _offsets(length: int) -> torch.Tensor:
    i = torch.arange(length)  # (L,)
    return i[:, None] - i[None, :]  # (L, L): query minus key


def _window_layout(shape: tuple, want: tuple) -> str:
    if len(shape) > 2 and shape[-2:] == want:
        return ("return (L, L), one row per query and one column per key, without batch or head dimensions: "
                "the attention broadcasts an (L, L) mask over them.")
    if len(shape) == 2 and shape[0] == shape[1] < want[0]:
        return (f"{shape[0]} rows where L = {want[0]}: is the mask's size fixed somewhere (a mask built once, or "
                "kept from an earlier call, and sliced)? Build it for the length given.")
    return "return one row per query and one column per key: shape (L, L), L = length."


def _window_rules(length: int, window: int, odd_passed: bool) -> list:
    """The usual wrong sliding windows for (length, window), each with its explanation.

    ``odd_passed``: the learner's mask was right for an odd window before, so one key too few on each side
    of an even window comes from (window - 1) // 2, which is window // 2 for odd windows alone.
    """
    off = _offsets(length)
    half = window // 2
    up = (window + 1) // 2  # -window // 2 is -up in Python
    both = f"with window={window}, query i sees keys i - {half} to i + {half}: |i - j| <= window // 2"
    ways = f"Local attention in an encoder looks both ways: {both}."
    if window % 2 == 0 and odd_passed:
        fewer = (f"it uses (window - 1) // 2 on each side (as |i - j| < window / 2 does), which is window // 2 for an "
                 f"odd window but one key too few for an even one ({(window - 1) // 2} instead of {half} here). "
                 "ModernBERT's window of 128 sees 64 "
                 f"keys back and 64 ahead: {both}.")
    else:
        fewer = (f"one key too few on each side: a strict < (|i - j| < window // 2) or window // 2 - 1. The bound is "
                 f"included: {both}.")
    whole = [(off.abs() <= window, "<="), (off.abs() < window, "<")]
    lopsided = [((off <= up) & (off >= -half), up, half), ((off >= -up) & (off <= half), half, up)]
    return [
        # First: a band of the same width would have failed the cases before, where it is not all True.
        (torch.ones(length, length, dtype=torch.bool),
         f"every query may attend to every key: the window is not applied ({both}). If it is a shortcut for windows "
         "that cover the sequence, its bound is window // 2 >= length - 1, not window >= length."),
        (off.abs() > half, "it is inverted: True marks the keys outside the window. True means 'may attend': True "
                           "where |i - j| <= window // 2."),
        (off.abs() < half, fewer),
        (off.abs() <= half + 1, "one key too many on each side: window // 2 + 1 (or (window + 1) // 2 for an odd "
                                f"window). {both[0].upper()}{both[1:]}."),
        *[(rule, f"the whole window on either side (|i - j| {op} window): the window is shared between the two "
                 f"sides, window // 2 each; {both}.") for rule, op in whole],
        ((off >= 0) & (off <= half), "one-sided, like a causal mask: each query sees only itself and the keys "
                                     f"before it (i - {half} to i). {ways} (A slice mask[i, i - {half}:i + {half}] "
                                     f"stops before its end: i + {half} + 1.)"),
        ((off >= 0) & (off < window), "one-sided, like a causal mask of width window (the keys i - window + 1 to i, "
                                      f"Mistral's sliding window). {ways}"),
        ((off >= 0) & (off <= window), "one-sided, like a causal mask: each query sees only itself and the keys "
                                       f"before it. {ways}"),
        ((off <= 0) & (off >= -half), "one-sided: each query sees only itself and the keys after it (i to "
                                      f"i + {half}). {ways}"),
        ((off.abs() <= half) & (off != 0), "the diagonal is False, so a query cannot attend to itself: |i - i| = 0 "
                                           "is inside every window."),
        *[(rule, f"the band is lopsided: {back} keys back and {ahead} ahead. In Python -window // 2 is (-window) "
                 f"// 2, which rounds down (-{window} // 2 = {-up}): write -(window // 2).")
          for rule, back, ahead in lopsided],
    ]


def _band(mask: torch.Tensor) -> tuple[int, int] | None:
    """``(back, ahead)`` when a square mask is a band, each query seeing the keys i - back to i + ahead (cut
    at the ends); else None."""
    keys = _allowed(mask)
    # The right rows are runs of keys already: a band needs every row to be one.
    if not all(allowed and allowed == list(range(allowed[0], allowed[-1] + 1)) for allowed in keys):
        return None
    back = max(i - allowed[0] for i, allowed in enumerate(keys))
    ahead = max(allowed[-1] - i for i, allowed in enumerate(keys))
    off = _offsets(len(keys))
    return (back, ahead) if back >= 0 and ahead >= 0 and torch.equal(mask, (off <= back) & (off >= -ahead)) else None


@probe
def _window_probe(got: torch.Tensor, want: torch.Tensor, window: int) -> str:
    """How far back and ahead each query of a wrong window mask sees, against window // 2 on each side."""
    half = window // 2
    sides = _band(got)
    if sides is not None:
        back, ahead = sides
        return (f"your mask is a band: each query sees up to {back} key{'s' if back != 1 else ''} back and "
                f"{ahead} ahead, but window={window} means window // 2 = {half} on each side, the same both ways.")
    return _first_wrong_row(got, want, "outside the window", "inside it and must be allowed",
                            f" (|i - j| <= window // 2 = {half})")


@probe
def _length_probe(name: str, fn, got: torch.Tensor, length: int, window: int) -> str:
    """A wrong band whose width changes with the length at the same window: named, "" otherwise. The band the
    first case gives can match a rule of the window by chance (length // 2 = 3 = window for length=7). A band
    that a rule of the window alone draws, and that the ends do not cut, is the same at any longer length."""
    sides = _band(got)
    if sides is None or max(sides) >= length - 1:
        return ""
    longer = length + 4
    try:
        other = _invoke(name, f"for length={longer}, window={window}", fn, longer, window)
    except ExerciseError:
        return ""
    if not isinstance(other, torch.Tensor) or other.shape != (longer, longer):
        return ""
    wider = _band(other.bool())
    if wider is None or wider == sides:
        return ""
    from_length = " (length // 2?)" if sides == (length // 2,) * 2 and wider == (longer // 2,) * 2 else ""
    return (f"your band's width follows the length, not the window: with window={window}, each query sees "
            f"{sides[0]} keys back and {sides[1]} ahead at length={length}, and {wider[0]} back and {wider[1]} "
            f"ahead at length={longer}{from_length}. The width comes from the window alone: |i - j| <= window // 2 = "
            f"{window // 2} at every length.")


@_checker("sliding_window_mask")
def check_sliding_window_mask(fn):
    """Check ``sliding_window_mask(length, window) -> BoolTensor[L, L]``, True where |i - j| <= window // 2."""
    from ..masks import sliding_window_mask as reference

    name = exercise("sliding_window_mask").name
    cases = [(7, 3), (9, 5), (6, 1), (8, 4), (10, 2), (6, 6), (5, 10), (1, 3), (9, 3)]
    odd_passed = False
    for length, window in cases:
        label = f"for length={length}, window={window}"
        if window >= 2 * (length - 1):
            label += " (a window that covers the whole sequence)"
        keywords = {"device": "cpu"} if (length, window) == (6, 6) else {}  # one call names the device, as a model does
        label += "".join(f", {k}={v!r}" for k, v in keywords.items())
        got = _invoke(name, label, fn, length, window, **keywords)
        want = reference(length, window)
        got = _check_mask_like(name, got, want, label, _window_layout, "a comparison such as (i[:, None] - i[None, :])"
                                                                       ".abs() <= window // 2 already gives bools")
        if not torch.equal(got, want):
            follows_length = _length_probe(name, fn, got, length, window)
            if follows_length:
                raise ExerciseError(f"Your {name} is not right yet {label}: {follows_length}")
            _square_verdict(name, label, got, want, _window_rules(length, window, odd_passed), _window_probe, window)
        odd_passed = odd_passed or window % 2 == 1
