"""Checkers of ``padding_mask``, ``causal_mask`` (notebook 03) and ``sliding_window_mask`` (notebook 13): shape, dtype,
and which positions are True."""

from __future__ import annotations

import torch

from ._compare import _spans, probe
from ._run import ExerciseError, _check_unchanged, _checker, _expect_tensor, _invoke, _shape, _snapshot
from .registry import exercise


def _check_mask_like(name, got, want, label, layout,
                     build="a comparison such as `token_ids != pad_id` already gives bools"):
    got = _expect_tensor(name, got, label, "a bool mask")
    if got.shape != want.shape:
        hint = f"\nHint: {layout}"
        raise ExerciseError(
            f"Your {name} returned shape {_shape(got)} {label}, but it should be {_shape(want)}.{hint}"
        )
    if got.dtype != torch.bool:
        raise ExerciseError(
            f"Your {name} returned dtype {got.dtype} {label}; a mask should be a bool tensor "
            f"(True = may attend).\nHint: {build}; do not convert it to numbers (no .float(), .int(), "
            ".long())."
        )
    return got


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


def _padding_mistake(got: torch.Tensor, ids: torch.Tensor, pad_id: int, again=None, unused=None) -> str:
    """Name the rule a wrong (B, L) padding mask follows, if it is a usual one ("" if none fits).

    ``again`` is the learner's mask for the same ids with ``unused``, a pad_id that appears nowhere: a
    rule is named only when it gives that one too (a rule can fit one input by chance).
    """
    there = _padding_rules(ids, unused) if again is not None else None
    for index, (rule, message) in enumerate(_padding_rules(ids, pad_id)):
        if torch.equal(got, rule) and (there is None or torch.equal(again, there[index][0])):
            return message
    return ""


@probe
def _padding_probe(name, fn, label, got: torch.Tensor, ids: torch.Tensor, pad_id: int, fresh, unused: int) -> str:
    """What a wrong (B, L) padding mask responds to: the ids themselves, or the positions, or neither.

    A mask that depends on each id alone marks every occurrence of an id alike: then the ids it
    drops are named. A pad_id that appears nowhere (``unused``; the learner's mask for it is ``fresh``)
    must give a mask of all True.
    """
    want = ids != pad_id
    by_id = {}
    for token, keep in zip(ids.reshape(-1).tolist(), got.reshape(-1).tolist()):
        by_id.setdefault(token, set()).add(keep)
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
    if all(len(v) == 1 for v in by_id.values()):
        dropped = sorted(t for t, v in by_id.items() if v == {False})
        return (f"your mask follows the ids, as it should, but marks the ids {dropped} as padding, and only "
                f"{pad_id} is: token_ids != pad_id.")
    real_dropped = [(b, j) for b, j in (want & ~got).nonzero().tolist()]
    pads_kept = [(b, j) for b, j in (~want & got).nonzero().tolist()]
    parts = []
    if real_dropped:
        b, j = real_dropped[0]
        parts.append(f"{len(real_dropped)} real token(s) marked as padding (the first: sequence {b}, position {j}, "
                     f"id {int(ids[b, j])})")
    if pads_kept:
        b, j = pads_kept[0]
        parts.append(f"{len(pads_kept)} pad(s) marked as real (the first: sequence {b}, position {j})")
    return ("the same id gets True in one place and False in another, so your mask depends on more than the id: "
            + " and ".join(parts) + ". Compare each id with pad_id, token_ids != pad_id, wherever it sits.")


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
    ]
    for ids, pad_id, label in cases:
        inputs = {"token_ids": ids}
        before = _snapshot(inputs)
        got = _invoke(name, label, fn, ids, pad_id)
        _check_unchanged(name, before, inputs)
        want = reference(ids, pad_id)
        b, length = ids.shape
        if isinstance(got, torch.Tensor) and got.shape != want.shape:
            if tuple(got.shape) == (b, length):
                layout = ("add the two middle dimensions so the mask broadcasts over heads and queries: "
                          "mask[:, None, None, :] gives (B, 1, 1, L).")
            elif tuple(got.shape) == (length, 1, 1, b):
                layout = ("the sequences and the positions are swapped: one row per sequence of token_ids as "
                          "given, (B, 1, 1, L), without transposing it (no .T).")
            elif sorted(got.shape) == sorted(want.shape) and got.shape[-1] == length:
                layout = "the batch axis comes first: (B, 1, 1, L), e.g. mask[:, None, None, :]."
            elif sorted(got.shape) == sorted(want.shape):
                layout = "the key axis L must be the last dimension: (B, 1, 1, L)."
            else:
                layout = "the shape should be (B, 1, 1, L), e.g. (token_ids != pad_id)[:, None, None, :]."
        else:
            layout = "the shape should be (B, 1, 1, L)."
        got = _check_mask_like(name, got, want, label, layout)
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
        named = ""
        if isinstance(again, torch.Tensor) and again.numel() == ids.numel():
            named = _padding_mistake(got[:, 0, 0, :], ids, pad_id, again.reshape(ids.shape).bool(), unused)
        if named:
            raise ExerciseError(f"Your {name} is not right yet {label}: {named}")
        found = _padding_probe(name, fn, label, got[:, 0, 0, :], ids, pad_id, again, unused)
        raise ExerciseError(
            f"Your {name} is not right yet {label}: {found}\nYou return {got[:, 0, 0, :].int().tolist()}, the right "
            f"mask is {want[:, 0, 0, :].int().tolist()} (1 = True = real token)."
        )


@probe
def _causal_probe(got: torch.Tensor) -> str:
    """Which keys each query of a wrong causal mask may attend to, against 0..i."""
    rows = []
    for i, row in enumerate(got.tolist()):
        allowed = [j for j, keep in enumerate(row) if keep]
        if allowed != list(range(i + 1)):
            rows.append((i, allowed))
    i, allowed = rows[0]
    seen = f"keys {_spans(allowed)}" if allowed else "no key at all"
    future = [j for j in allowed if j > i]
    missing = [j for j in range(i + 1) if j not in allowed]
    why = []
    if future:
        why.append(f"{_spans(future)} {'is' if len(future) == 1 else 'are'} in its future")
    if missing:
        why.append(f"{_spans(missing)} {'is' if len(missing) == 1 else 'are'} its past or itself and must be allowed")
    should = f"keys 0-{i}" if i else "key 0 alone (itself)"
    return (f"{len(rows)} of {got.shape[0]} rows are wrong; the first, query {i}, may attend to {seen}, but it should "
            f"be {should}: " + "; ".join(why) + ".")


@_checker("causal_mask")
def check_causal_mask(fn):
    """Check ``causal_mask(L) -> BoolTensor[L, L]``, True on and below the diagonal."""
    name = exercise("causal_mask").name
    for length in (5, 1, 2, 8):
        label = f"for L={length}"
        got = _invoke(name, label, fn, length)
        want = torch.ones(length, length, dtype=torch.bool).tril()
        got = _check_mask_like(name, got, want, label,
                               "return one row per query and one column per key: shape (L, L).",
                               "build it from bools, e.g. torch.ones(L, L, dtype=torch.bool).tril()")
        if torch.equal(got, want):
            continue
        ones = torch.ones(length, length, dtype=torch.bool)
        if torch.equal(got, ones.triu(1)):
            message = ("it is inverted: True marks the future positions. True means 'may attend', so "
                       "position i may attend to 0..i (the lower triangle, torch.tril).")
        elif torch.equal(got, ones.triu()):
            message = ("True sits on and above the diagonal, so each position sees the future. Query i "
                       "(row i) may attend to keys 0..i: the lower triangle, torch.tril.")
        elif torch.equal(got, ones.tril(-1)):
            message = ("the diagonal is False, so a position cannot attend to itself. Keep the diagonal: "
                       "torch.tril(..., diagonal=0).")
        elif torch.equal(got, ~ones.tril(-1)):
            message = "it is inverted. True means 'may attend': True on and below the diagonal (torch.tril)."
        elif torch.equal(got, torch.eye(length, dtype=torch.bool)):
            message = ("only the diagonal is True, so each position sees only itself. Position i may attend "
                       "to every key up to itself, 0..i: the lower triangle, torch.tril.")
        elif any(torch.equal(got, ones.tril(d)) for d in range(1, length)):
            d = next(d for d in range(1, length) if torch.equal(got, ones.tril(d)))
            message = (f"torch.tril(..., diagonal={d}) lets each position also see the next {d} key(s), the "
                       "future. Use diagonal=0 (the default): position i attends to keys 0..i.")
        elif any(torch.equal(got, ones.triu(d)) for d in range(-length + 1, 0)):
            d = next(d for d in range(-length + 1, 0) if torch.equal(got, ones.triu(d)))
            message = (f"torch.triu(..., diagonal={d}) keeps the upper triangle, the future keys. A causal mask "
                       "is the lower triangle: torch.tril(torch.ones(L, L, dtype=torch.bool)).")
        else:
            message = _causal_probe(got) + (
                f"\nYou return {got.int().tolist()}, the right mask is {want.int().tolist()} (1 = True = may "
                "attend; row = query, column = key).")
        raise ExerciseError(f"Your {name} is not right yet {label}: {message}")


def _offsets(length: int) -> torch.Tensor:
    i = torch.arange(length)  # (L,)
    return i[:, None] - i[None, :]  # (L, L): query minus key


def _window_rules(length: int, window: int, odd_passed: bool) -> list:
    """The usual wrong sliding windows for (length, window), each with its explanation.

    ``odd_passed``: the learner's mask was right for an odd window before, so one key too few on each side
    of an even window comes from (window - 1) // 2, which is window // 2 for odd windows alone.
    """
    off = _offsets(length)
    half = window // 2
    up = (window + 1) // 2  # -window // 2 is -up in Python
    both = f"with window={window}, query i sees keys i - {half} to i + {half}: |i - j| <= window // 2"
    if window % 2 == 0 and odd_passed:
        fewer = (f"it uses (window - 1) // 2 on each side, which is window // 2 for an odd window but one key too few "
                 f"for an even one ({(window - 1) // 2} instead of {half} here). ModernBERT's window of 128 sees 64 "
                 f"keys back and 64 ahead: {both}.")
    else:
        fewer = (f"one key too few on each side: a strict < (|i - j| < window // 2) or window // 2 - 1. The bound is "
                 f"included: {both}.")
    return [
        (off.abs() > half, "it is inverted: True marks the keys outside the window. True means 'may attend': True "
                           "where |i - j| <= window // 2."),
        (off.abs() < half, fewer),
        (off.abs() <= half + 1, "one key too many on each side: window // 2 + 1 (or (window + 1) // 2 for an odd "
                                f"window). {both[0].upper()}{both[1:]}."),
        (off.abs() <= window, "the whole window on either side (|i - j| <= window): the window is shared between "
                              f"the two sides, window // 2 each; {both}."),
        (off.abs() < window, "the whole window on either side (|i - j| < window): the window is shared between "
                             f"the two sides, window // 2 each; {both}."),
        ((off >= 0) & (off <= half), "one-sided, like a causal mask: each query sees only itself and the keys "
                                     f"before it (i - {half} to i). Local attention in an encoder looks both ways: "
                                     f"{both}."),
        ((off >= 0) & (off < window), "one-sided, like a causal mask of width window (the keys i - window + 1 to i, "
                                      f"Mistral's sliding window). Local attention in an encoder looks both ways: "
                                      f"{both}."),
        ((off >= 0) & (off <= window), "one-sided, like a causal mask: each query sees only itself and the keys "
                                       f"before it. Local attention in an encoder looks both ways: {both}."),
        ((off <= 0) & (off >= -half), "one-sided: each query sees only itself and the keys after it (i to "
                                      f"i + {half}). Local attention in an encoder looks both ways: {both}."),
        ((off.abs() <= half) & (off != 0), "the diagonal is False, so a query cannot attend to itself: |i - i| = 0 "
                                           "is inside every window."),
        ((off <= up) & (off >= -half), f"the band is lopsided: {up} keys back and {half} ahead. In Python "
                                       f"-window // 2 is (-window) // 2, which rounds down (-{window} // 2 = {-up}): "
                                       "write -(window // 2)."),
        ((off >= -up) & (off <= half), f"the band is lopsided: {half} keys back and {up} ahead. In Python "
                                       f"-window // 2 is (-window) // 2, which rounds down (-{window} // 2 = {-up}): "
                                       "write -(window // 2)."),
        (torch.ones(length, length, dtype=torch.bool),
         f"every query may attend to every key: the window is not applied ({both})."),
    ]


@probe
def _window_probe(got: torch.Tensor, length: int, window: int) -> str:
    """How far back and ahead each query of a wrong window mask sees, against window // 2 on each side."""
    half = window // 2
    rows = []
    for i, row in enumerate(got.tolist()):
        allowed = [j for j, keep in enumerate(row) if keep]
        if allowed != [j for j in range(length) if abs(i - j) <= half]:
            rows.append((i, allowed))
    if all(allowed and allowed == list(range(allowed[0], allowed[-1] + 1)) for _, allowed in rows):
        off = _offsets(length)
        back = max(i - min(j for j, keep in enumerate(row) if keep) for i, row in enumerate(got.tolist()) if any(row))
        ahead = max(max(j for j, keep in enumerate(row) if keep) - i for i, row in enumerate(got.tolist()) if any(row))
        if back >= 0 and ahead >= 0 and torch.equal(got, (off <= back) & (off >= -ahead)):
            return (f"your mask is a band: each query sees up to {back} key{'s' if back != 1 else ''} back and "
                    f"{ahead} ahead, but window={window} means window // 2 = {half} on each side, the same both ways.")
    i, allowed = rows[0]
    seen = f"keys {_spans(allowed)}" if allowed else "no key at all"
    outside = [j for j in allowed if abs(i - j) > half]
    missing = [j for j in range(length) if abs(i - j) <= half and j not in allowed]
    why = []
    if outside:
        why.append(f"{_spans(outside)} {'is' if len(outside) == 1 else 'are'} outside the window")
    if missing:
        why.append(f"{_spans(missing)} {'is' if len(missing) == 1 else 'are'} inside it and must be allowed")
    low, high = max(0, i - half), min(length - 1, i + half)
    should = f"keys {low}-{high}" if high > low else f"key {low} alone (itself)"
    return (f"{len(rows)} of {length} rows are wrong; the first, query {i}, may attend to {seen}, but it should be "
            f"{should} (|i - j| <= window // 2 = {half}): " + "; ".join(why) + ".")


@_checker("sliding_window_mask")
def check_sliding_window_mask(fn):
    """Check ``sliding_window_mask(length, window) -> BoolTensor[L, L]``, True where |i - j| <= window // 2."""
    from ..masks import sliding_window_mask as reference

    name = exercise("sliding_window_mask").name
    cases = [(7, 3), (9, 5), (6, 1), (8, 4), (10, 2), (6, 6), (5, 10), (1, 3)]
    odd_passed = False
    for length, window in cases:
        label = f"for length={length}, window={window}"
        if window >= 2 * (length - 1):
            label += " (a window that covers the whole sequence)"
        keyword = length == 6 and window == 6  # one call names the device, as a model does
        if keyword:
            label += ", device='cpu'"
            got = _invoke(name, label, fn, length, window, device="cpu")
        else:
            got = _invoke(name, label, fn, length, window)
        want = reference(length, window)
        if isinstance(got, torch.Tensor) and got.dim() > 2 and got.shape[-2:] == want.shape:
            layout = ("return (L, L), one row per query and one column per key, without batch or head dimensions: "
                      "the attention broadcasts an (L, L) mask over them.")
        else:
            layout = "return one row per query and one column per key: shape (L, L), L = length."
        got = _check_mask_like(name, got, want, label, layout, "a comparison such as (i[:, None] - i[None, :]).abs() "
                                                                "<= window // 2 already gives bools")
        if torch.equal(got, want):
            odd_passed = odd_passed or window % 2 == 1
            continue
        message = next((m for rule, m in _window_rules(length, window, odd_passed) if torch.equal(got, rule)), "")
        if not message:
            message = _window_probe(got, length, window) + (
                f"\nYou return {got.int().tolist()}, the right mask is {want.int().tolist()} (1 = True = may attend; "
                "row = query, column = key).")
        raise ExerciseError(f"Your {name} is not right yet {label}: {message}")
