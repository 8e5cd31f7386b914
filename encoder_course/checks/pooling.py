"""Checker of ``mean_pool(hidden, mask) -> (B, d)`` (notebook 10): the average over each sequence's real tokens.

Compared with the package's ``mean_pool`` on masks with padding at the end, at the start and in the
middle, sequences without padding, a batch of one, float64 and large values. A sequence with no real
token at all must give zeros, as the package's ``mean_pool`` (and sentence-transformers, which clamps
the count) does: 0 / 0 = NaN there is named, and so is any other value. That case comes last, so a
learner meets it only once everything else is right.
"""

from __future__ import annotations

import functools
import re

import torch

from ._compare import _check_gradients, _close, _described, _first_match, _shape_hint, probe
from ._modules import _call_inputs
from ._run import ExerciseError, _checker, _gen, _invoke, _randn, _shape
from .registry import exercise


def _slip(formula):
    """A usual slip of mean pooling, ``formula(hidden, mask[..., None])`` in float64, returned in hidden's dtype."""
    return lambda hidden, mask: {"out": formula(hidden.double(), mask.double()[..., None]).to(hidden.dtype)}


_POOL_MISTAKES = [
    ("it averages over every position, padding included: only the real tokens count, "
     "(hidden * mask[..., None]).sum(dim=1) / mask.sum(dim=1, keepdim=True).",
     _slip(lambda h, keep: h.mean(dim=1))),
    ("it divides by the length L, padding included, instead of each sequence's number of real tokens: "
     "divide by mask.sum(dim=1, keepdim=True).",
     _slip(lambda h, keep: (h * keep).sum(dim=1) / h.shape[1])),
    ("the mask is inverted: True marks the real tokens, so it averages over the padding. Keep the positions "
     "where the mask is True.",
     _slip(lambda h, keep: (h * (1.0 - keep)).sum(dim=1) / (1.0 - keep).sum(dim=1).clamp(min=1.0))),
    ("it returns the sum over the real tokens, not their mean: divide by each sequence's number of real "
     "tokens, mask.sum(dim=1, keepdim=True).",
     _slip(lambda h, keep: (h * keep).sum(dim=1))),
    ("it divides by the number of real tokens in the whole batch (mask.sum()), not in each sequence: "
     "mask.sum(dim=1, keepdim=True) gives one count per sequence, (B, 1).",
     _slip(lambda h, keep: (h * keep).sum(dim=1) / keep.sum())),
    ("it returns the first token's vector ([CLS] pooling); mean pooling averages every real token.",
     _slip(lambda h, keep: h[:, 0])),
    ("it returns each sequence's last real token (last-token pooling, as decoder models read a sequence); mean "
     "pooling averages every real token.",
     _slip(lambda h, keep: h[torch.arange(h.shape[0]), (keep[..., 0] * torch.arange(h.shape[1])).argmax(dim=1)])),
    ("it takes the maximum over the real tokens (max pooling); mean pooling averages them.",
     _slip(lambda h, keep: h.masked_fill(keep == 0, float("-inf")).amax(dim=1))),
    ("it counts the real tokens by their vectors (the rows of hidden * mask that are not all zero), so a real "
     "token whose vector is all zeros is left out of the count. A token is real because the mask says so: "
     "divide by mask.sum(dim=1, keepdim=True).",
     _slip(lambda h, keep: (h * keep).sum(dim=1)
           / ((h * keep) != 0).any(dim=-1, keepdim=True).sum(dim=1).clamp(min=1))),
]

_BY_LONGEST = ("it divides every sequence by the longest sequence's number of real tokens, mask.sum(dim=1).max(), "
               "not by its own: divide by mask.sum(dim=1, keepdim=True), one count per sequence.")


def _longest_or_length(name, fn, label, hidden, mask, mistake):
    """Dividing by L and by the longest sequence's count agree when one sequence has no padding: a pad column
    more tells them apart. Returns the message that fits."""
    if not mistake.startswith("it divides by the length L") or int(mask.sum(dim=1).max()) != mask.shape[1]:
        return mistake
    wider = _invoke(name, f"{label}, with one more pad at the end", fn,
                    torch.cat([hidden, hidden[:, :1]], dim=1), torch.cat([mask, mask[:, :1] & False], dim=1))
    longest = ((hidden.double() * mask[..., None]).sum(dim=1) / mask.sum(dim=1).max()).to(hidden.dtype)
    return _BY_LONGEST if isinstance(wider, torch.Tensor) and _close(wider, longest) else mistake


def _rehint(hidden, exc):
    """A broadcasting error between (B, L, d), (B, L) and (B,) gets its own hint; other errors stay as they are."""
    sizes = re.search(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)", str(exc.__cause__ or ""))
    b, length, d = hidden.shape
    pair = {int(sizes.group(1)), int(sizes.group(2))} if sizes else set()
    if pair == {d, length}:
        hint = ("the mask (B, L) does not line up with hidden (B, L, d): give it a trailing axis, "
                "mask[..., None] or mask.unsqueeze(-1), (B, L, 1).")
    elif pair == {d, b}:
        hint = ("the count of real tokens is (B,) and the sum (B, d): keep the count's axis, "
                "mask.sum(dim=1, keepdim=True), (B, 1), so each row is divided by its own count.")
    else:
        return exc
    return ExerciseError(str(exc).split("\nHint:")[0] + f"\nHint: {hint}")


@probe
def _probe(name, fn, label, hidden, mask) -> str:
    """Vary one thing at a time (the pad vectors, where the padding is, the scale) and name what the answer
    responds to wrongly; "" when every probe agrees with the mean."""
    from ..pooling import mean_pool as reference

    def pooled(h, m, what):
        out = _invoke(name, f"{label}, {what}", fn, h, m)
        return out if isinstance(out, torch.Tensor) and out.shape == reference(h, m).shape else None

    real = mask.any(dim=1)
    base = pooled(hidden, mask, "as given")
    if base is None:
        return ""
    n = mask.sum(dim=1)
    front = torch.arange(mask.shape[1])[None, :] < n[:, None]  # the same number of real tokens, at the start
    if not torch.equal(front, mask):
        first = pooled(hidden, front, "with the real tokens moved to the start")
        if first is not None and _close(first, reference(hidden, front)):
            return ("it is right when the real tokens come first and the padding at the end, and wrong when "
                    "the padding is at the start or in the middle: it takes the first mask.sum() tokens. Use the "
                    "mask itself, position by position (hidden * mask[..., None]), not the count alone.")
    if int(real.sum()) > 1 and bool((base[real] == base[real][:1]).all()):
        return ("every sequence gets the same vector from you, but each sequence has its own mean: the mean runs "
                "over the whole batch at once (hidden[mask].mean(0)?). Average each sequence over its own real "
                "tokens: sum over dim=1, divided by mask.sum(dim=1, keepdim=True).")
    noisy = hidden.masked_fill(~mask[..., None], 0.0) + (~mask[..., None]) * 1e3
    moved = pooled(noisy, mask, "with the vectors at the padding set to 1000")
    if moved is not None and not _close(moved[real], base[real]):
        return (f"changing only the vectors at the padding (to 1000) changes your result by up to "
                f"{float((moved - base).abs().max()):.4g}: the padding still counts. Multiply by the mask "
                "before summing, hidden * mask[..., None], so a pad adds 0 whatever its vector.")
    total = (hidden.double() * mask[..., None]).sum(dim=1)
    usable = real & (base.double().abs() > 1e-6).all(dim=-1) & (total.abs() > 1e-6).all(dim=-1)
    if usable.sum() > 1:
        divisor = (total[usable] / base[usable].double()).median(dim=-1).values  # what each sequence is divided by
        counts = n[usable].double()
        fits = (total[usable] / divisor[:, None] - base[usable].double()).abs().max() < 1e-4 * total.abs().max()
        offset = divisor - counts
        if fits and float((divisor - counts).abs().max()) > 1e-3:
            if float(offset.max() - offset.min()) < 1e-3:
                return (f"your result is each sequence's masked sum divided by its number of real tokens "
                        f"{float(offset[0]):+.4g}: divide by the count itself, mask.sum(dim=1, keepdim=True).")
            if float(divisor.max() - divisor.min()) < 1e-3:
                return (f"your result is each sequence's masked sum divided by {float(divisor[0]):.4g} for every "
                        "sequence, but each has its own number of real tokens: divide by mask.sum(dim=1, "
                        "keepdim=True).")
            if float((divisor - counts.sqrt()).abs().max()) < 1e-3:
                return ("your result is each sequence's masked sum divided by the square root of its number of real "
                        "tokens (sentence-transformers' mean_sqrt_len_tokens pooling): the mean divides by the count "
                        "itself, mask.sum(dim=1, keepdim=True).")
            ratio = divisor / counts
            if float((ratio - 1).abs().max()) < 1e-2:
                return ("your result is the mean of the real tokens to about 3 digits only: it is computed in a "
                        "lower precision (float16 or bfloat16) somewhere, or rounded. Keep hidden's dtype all the "
                        "way (mask.to(hidden.dtype), no .half()).")
            if float(ratio.max() - ratio.min()) < 1e-3:
                return (f"your result is each sequence's mean times {1 / float(ratio[0]):.4g}: the pattern is right, a "
                        "factor is wrong. Divide the masked sum by the count, nothing more.")
    double = pooled(2 * hidden, mask, "with hidden doubled")
    if double is not None and _close(double[real], base[real]) and not _close(base[real], 2 * base[real]):
        lengths = base[real].norm(dim=-1)
        unit = bool(torch.allclose(lengths, torch.ones_like(lengths), atol=1e-4))
        return ("doubling hidden leaves your result the same, but a mean doubles with its inputs"
                + (": your vectors all have length 1, so they are normalised after the mean. Return the mean "
                   "itself; normalising is a separate step (sentence-transformers' Normalize)." if unit else
                   ": something divides by the size of the vectors. Return the plain mean of the real tokens."))
    return ""


@_checker("mean_pool")
def check_mean_pool(fn):
    """Check ``mean_pool(hidden, mask) -> Tensor (B, d)`` (mask (B, L), True = real token)."""
    from ..pooling import mean_pool as reference

    name = exercise("mean_pool").name
    g = _gen(10)
    b, length, d = 3, 6, 4
    h = _randn(g, b, length, d)
    end = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 0]], dtype=torch.bool)
    places = torch.tensor([[0, 0, 1, 1, 1, 1], [1, 0, 1, 1, 0, 1], [1, 1, 1, 1, 0, 0]], dtype=torch.bool)
    cases = [
        ("for hidden (3, 6, 4) and a mask (3, 6) padded at the end (one sequence without padding)", h, end),
        ("for hidden (3, 6, 4) and a mask (3, 6) padded at the start, in the middle and at the end",
         _randn(g, b, length, d), places),
        ("for a batch of one, hidden (1, 5, 4), mask (1, 5) with two pads", _randn(g, 1, 5, d),
         torch.tensor([[1, 1, 1, 0, 0]], dtype=torch.bool)),
        ("for large values (about 1000), hidden (3, 6, 4)", h * 1e3, places),
        ("for float64 hidden (3, 6, 4)", _randn(g, b, length, d).double(), end),
        ("for hidden (3, 6, 4) in which two real tokens have vectors of all zeros (as after a ReLU)",
         h.index_put((torch.tensor([1, 2]), torch.tensor([1, 4])), torch.zeros(d)), end),
        ("for hidden (2, 3, 4) whose second sequence has no real token at all",
         _randn(g, 2, 3, d), torch.tensor([[1, 1, 0], [0, 0, 0]], dtype=torch.bool)),
    ]
    for label, hidden, mask in cases:
        got = _call_inputs(name, fn, label, {"hidden": hidden, "mask": mask}, "the pooled vectors",
                           functools.partial(_rehint, hidden))
        want = reference(hidden, mask)
        if got.shape != want.shape:
            b, length, d = hidden.shape
            hint = _shape_hint(got.shape, want.shape)
            if tuple(got.shape) == (b, length):
                hint = "you averaged over the features (the last dimension); average over the tokens, dim=1."
            elif tuple(got.shape) == (length, d):
                hint = "you averaged over the batch (dim=0); average over each sequence's tokens, dim=1."
            elif tuple(got.shape) == (b, b) or tuple(got.shape) == (b, 1, d) or tuple(got.shape) == (b, d, 1):
                hint = ("the count of real tokens must stay (B, 1) to divide (B, d) row by row: "
                        "mask.sum(dim=1, keepdim=True), and sum hidden with dim=1 without keepdim.")
            raise ExerciseError(f"Your {name} returned shape {_shape(got)} {label}, but it should be (B, d) = "
                                f"{_shape(want)}." + (f"\nHint: {hint}" if hint else ""))
        if got.dtype != want.dtype:
            raise ExerciseError(f"Your {name} returned dtype {got.dtype} {label}, but hidden is {want.dtype}. "
                                "Keep hidden's dtype: turn the mask into hidden's dtype, mask.to(hidden.dtype), "
                                "not .float().")
        if _close(got, want):
            continue
        empty = ~mask.any(dim=1)
        if empty.any() and _close(got[~empty], want[~empty]):
            if torch.isnan(got[empty]).any():
                raise ExerciseError(
                    f"Your {name} returns NaN {label}: 0 / 0 for the sequence with no real token. The package "
                    "gives zeros there (sentence-transformers does the same): clamp the count, "
                    "mask.sum(dim=1, keepdim=True).clamp(min=1), so such a row is 0 / 1 = 0."
                )
            raise ExerciseError(
                f"Your {name} gives {[round(x, 4) for x in got[empty][0, :3].tolist()]}... for the sequence with "
                f"no real token {label}; "
                "the package gives zeros there (there is nothing to average): divide the masked sum by the "
                "count clamped to at least 1."
            )
        mistake = _first_match({"out": got}, _POOL_MISTAKES, hidden, mask)
        mistake = (_longest_or_length(name, fn, label, hidden, mask, mistake) if mistake
                   else _probe(name, fn, label, hidden, mask))
        if mistake:
            raise ExerciseError(f"Your {name} is not right yet {label}: {mistake}")
        raise ExerciseError(
            f"Your {name} does not give the mean of the real tokens {label}: "
            f"{_described(got, want, ('sequence', 'feature'))}\nHint: "
            "sum hidden * mask[..., None] over dim=1 and divide by mask.sum(dim=1, keepdim=True)."
        )
    for label, hidden, mask in (cases[1], cases[-1]):  # the last: a sequence with no real token (NaN is named)
        _check_gradients(name, label, lambda hidden, label=label, mask=mask: _invoke(name, label, fn, hidden, mask),
                         lambda hidden, mask=mask: reference(hidden, mask), {"hidden": hidden})
