"""Checker of ``contrastive_loss(queries, passages, scale=20.0) -> 0-d tensor`` (notebook 12): in-batch negatives.

queries ``(B, d)``, passages ``(P, d)`` with ``P >= B``: ``passages[i]`` is query i's positive for ``i < B``
and the rows from B on are extra negatives for every query. The loss is the cross-entropy of the rows of
``cos_sim(queries, passages) * scale`` with target column i for row i, the mean over the queries
(sentence-transformers' ``MultipleNegativesRankingLoss`` with its defaults).

Compared with that loss (computed in float64) with the scale left at its default and passed as 20, 1 and
50 (a fixed 20 is named), without and with extra negatives, a batch of one query, vectors of very
different lengths (10^2 to 10^4) and tiny ones (about 0.001) (the cosine ignores lengths, so plain dot
products are caught), float64 (its dtype kept), and last a batch whose positives point away from their
queries at scale 150 (above CLIP's cap of 100, which the exercise does not have), where
``log(softmax(...))`` underflows to ``-inf`` in float32. The gradients must
reach both inputs, and neither input may change in place.

A wrong loss is compared with the usual slips (``_MISTAKES``); when none fits, probes
(``_contrastive_probes``) vary one thing at a time and name what the answer responds to wrongly, with the
measured difference.
"""

from __future__ import annotations

import functools
import math
import re

import torch
import torch.nn.functional as F

from ._compare import _check_gradients, _close, _first_match
from ._contrastive_probes import (
    _DEFAULT_SCALE,
    _asker,
    _ce,
    _cos,
    _effective_scale,
    _in_float64,
    _lengths,
    _loss,
    _probe,
    _same,
)
from ._modules import _call_inputs
from ._run import ExerciseError, _checker, _expect_tensor, _gen, _randn, _shape
from .registry import exercise

_HINT = ("scores = F.normalize(queries, dim=-1) @ F.normalize(passages, dim=-1).T * scale is (B, P), one row per "
         "query; the loss is F.cross_entropy(scores, torch.arange(B)), query i's positive in column i.")


# ----------------------------------------------------------------------------------------------
# The loss's usual slips, each computed in float64 from the right scores (cosines times scale, (B, P))


def _diagonal(scores):
    """Where each query meets its positive in the (B, P) scores."""
    return torch.eye(*scores.shape, dtype=torch.bool)


_MISTAKES = [
    ("the scores are plain dot products, queries @ passages.T, without normalising: they grow with the "
     "vectors' lengths, and they are not cosine similarities. Normalise both first, F.normalize(queries, "
     "dim=-1) and F.normalize(passages, dim=-1) (each vector divided by its own length), then multiply.",
     _in_float64(lambda q, p, s, scores: _ce(q @ p.T * s))),
    ("the vectors are normalised over dim=0, across the batch, instead of each vector over its own features: "
     "F.normalize(x, dim=-1), or x / x.norm(dim=-1, keepdim=True).",
     _in_float64(lambda q, p, s, scores: _ce(_cos(q, p, dim=0) * s))),
    ("only the queries are normalised: normalise the passages too, F.normalize(passages, dim=-1), so that every "
     "score is a cosine similarity.",
     _in_float64(lambda q, p, s, scores: _ce(F.normalize(q, dim=-1) @ p.T * s))),
    ("only the passages are normalised: normalise the queries too, F.normalize(queries, dim=-1), so that every "
     "score is a cosine similarity.",
     _in_float64(lambda q, p, s, scores: _ce(q @ F.normalize(p, dim=-1).T * s))),
    ("the cosines are not multiplied by scale: between -1 and 1 the softmax can hardly prefer the positive. "
     "The scores are the cosines times scale (20 by default: a temperature of 1 / 20).",
     _in_float64(lambda q, p, s, scores: _ce(scores / s))),
    ("the cosines are divided by scale: multiply them by it, cos * scale (scale is 1 / temperature).",
     _in_float64(lambda q, p, s, scores: _ce(scores / s / s))),
    ("the scale is always 20, whatever `scale` is passed: multiply by the argument, `* scale`, not by a "
     "fixed 20 (20 is only its default).",
     _in_float64(lambda q, p, s, scores: _ce(scores / s * _DEFAULT_SCALE))),
    ("the loss is multiplied by scale instead of the scores: the scale belongs inside, on the cosines before "
     "the cross-entropy, F.cross_entropy(cos * scale, labels).",
     _in_float64(lambda q, p, s, scores: _ce(scores / s) * s)),
    ("every query's label is 0, as if passages[0] were everyone's positive: query i's positive is "
     "passages[i], column i of its row of scores, so the labels are torch.arange(B).",
     _in_float64(lambda q, p, s, scores: _ce(scores, torch.zeros(len(q), dtype=torch.long)))),
    ("the cross-entropy runs over the columns: your scores are (passages, queries), passages @ queries.T "
     "(or transposed), so each passage picks among the queries. Each query picks among the passages: "
     "scores = queries @ passages.T, (B, P), one row per query.",
     _in_float64(lambda q, p, s, scores: _ce(scores.T))),  # P == B only: else a label is out of bounds
    ("it averages both directions, queries picking passages and passages picking queries (a symmetric loss, "
     "as in CLIP): this loss has one direction only, each query's softmax over the P passages.",
     _in_float64(lambda q, p, s, scores: (_ce(scores) + _ce(scores[:, :len(q)].T)) / 2)),
    ("it adds both directions, queries picking passages and passages picking queries (a symmetric loss): "
     "this loss has one direction only, each query's softmax over the P passages.",
     _in_float64(lambda q, p, s, scores: _ce(scores) + _ce(scores[:, :len(q)].T))),
    ("the scores go through a softmax before cross_entropy, which applies log_softmax itself: pass the scaled "
     "cosines as they are (cross_entropy = log_softmax + nll_loss).",
     _in_float64(lambda q, p, s, scores: _ce(scores.softmax(dim=-1)))),
    ("it returns the sum over the queries, not their mean: F.cross_entropy's default reduction='mean' divides "
     "by B.",
     _in_float64(lambda q, p, s, scores: F.cross_entropy(scores, torch.arange(len(q)), reduction="sum"))),
    ("the diagonal of the scores is set to 0, masked as if it were each query's similarity with itself; but "
     "passages[i] is query i's positive, not query i: the diagonal holds the scores that must win. Leave it "
     "as it is.",
     _in_float64(lambda q, p, s, scores: _ce(scores.masked_fill(_diagonal(scores), 0.0)))),
    ("the positive is left out of the softmax's denominator (only the negatives are summed there): the "
     "cross-entropy's denominator sums over every passage, the positive included, F.cross_entropy(scores, "
     "labels).",
     _in_float64(lambda q, p, s, scores: (torch.logsumexp(scores.masked_fill(_diagonal(scores), -math.inf), -1)
                                          - scores[_diagonal(scores)]).mean())),  # logsumexp of the negatives only
    ("the scores are Euclidean distances (torch.cdist) instead of cosine similarities: a distance is small "
     "where a similarity is large, and it depends on the vectors' lengths. Use the cosines, "
     "F.normalize(queries, dim=-1) @ F.normalize(passages, dim=-1).T.",
     # (-|a - b|² of unit vectors is 2 cos - 2: twice the right scores, which the scale probe names)
     _in_float64(lambda q, p, s, scores: [_ce(sign * dist ** power * s) for dist, powers in (
         (torch.cdist(q, p), (1, 2)), (torch.cdist(F.normalize(q, dim=-1), F.normalize(p, dim=-1)), (1,)))
         for power in powers for sign in (-1, 1)])),
    ("the extra negatives are left out: only passages[:B] are scored. The rows from B on are negatives for "
     "every query: score each query against all P passages, (B, P).",
     _in_float64(lambda q, p, s, scores: _ce(scores[:, :len(q)]))),  # (with P == B: the right loss, never a match)
    ("the sign is flipped: your loss is minus the cross-entropy, so training would push each query away from "
     "its positive. The loss is the cross-entropy itself, -log p(positive).",
     _in_float64(lambda q, p, s, scores: -_ce(scores))),
    ("F.nll_loss gets the raw scores, so it returns minus the positive's score: nll_loss expects "
     "log-probabilities (log_softmax first); F.cross_entropy takes the scores as they are.",
     _in_float64(lambda q, p, s, scores: F.nll_loss(scores, torch.arange(len(q))))),  # minus the positive's score
    ("the scores are minus the cosines times scale (as with a cosine distance, (1 - cos) * scale, which the softmax "
     "reads as -cos * scale): the passage furthest from the query gets the highest score. The scores are the "
     "similarities themselves, cos * scale, highest for the closest passage.",
     _in_float64(lambda q, p, s, scores: _ce(-scores))),  # a constant added to every score changes no softmax
]


# ----------------------------------------------------------------------------------------------
# The inputs


def _pairs(g, b, d, extra, noise):
    """Queries (b, d) and passages (b + extra, d): each positive a noisy copy of its query, then random negatives."""
    q = _randn(g, b, d)
    return q, torch.cat([q + _randn(g, b, d, scale=noise), _randn(g, extra, d)])


def _cases():
    """``(label, queries, passages, scale)``; scale None: left at its default. Each batch's loss is between 0.3
    and 2 (the last one's excepted), large enough for float32 to compute it to the tolerance."""
    g = _gen(12)
    long = [x * _lengths(g, len(x), 1e2, 1e4) for x in _pairs(_gen(42), 4, 8, 2, 1.5)]
    away = _randn(g, 3, 8)
    return [
        ("for queries (4, 8) and passages (4, 8) (each query's positive, no extra negative), scale left at its "
         "default", *_pairs(_gen(41), 4, 8, 0, 1.5), None),
        ("for queries (3, 6) and passages (7, 6) (the 3 positives, then 4 extra negatives), scale=20.0",
         *_pairs(_gen(41), 3, 6, 4, 1.0), 20.0),
        ("for queries (5, 16) and passages (5, 16), scale=1.0", *_pairs(_gen(40), 5, 16, 0, 1.0), 1.0),
        ("for queries (4, 8) and passages (10, 8) (the 4 positives, then 6 extra negatives), scale=50.0",
         *_pairs(_gen(42), 4, 8, 6, 1.0), 50.0),
        ("for a batch of one query, queries (1, 8) and passages (3, 8) (its positive, then 2 extra negatives), "
         "scale=20.0", *_pairs(_gen(42), 1, 8, 2, 2.0), 20.0),
        ("for long vectors (lengths from 100 to 10000), queries (4, 8) and passages (6, 8), scale=20.0", *long, 20.0),
        ("for tiny vectors (about 0.001), queries (3, 8) and passages (5, 8), scale=20.0",
         *[x * 1e-3 for x in _pairs(_gen(43), 3, 8, 2, 1.0)], 20.0),
        ("for float64 queries (3, 8) and passages (5, 8), scale=20.0",
         *[x.double() for x in _pairs(_gen(42), 3, 8, 2, 1.5)], 20.0),
        ("for positives that point away from their queries (cosine -1), queries (3, 8) and passages (5, 8), "
         "scale=150.0 (a large loss, about 2 * scale)", away, torch.cat([-0.5 * away, _randn(g, 2, 8)]), 150.0),
    ]


# ----------------------------------------------------------------------------------------------
# Calling the learner's function


def _rehint(exc, q, p):
    """An error of the labels or of the scores' layout with its own hint (``exc`` as it is otherwise)."""
    cause = exc.__cause__
    if cause is None:  # the checker's own verdict (time limit, the reference used): it stands
        return exc
    text, (b, n) = str(cause), (q.shape[0], p.shape[0])
    hint = ""
    sizes = re.search(r"Expected input batch_size \((\d+)\) to match target batch_size \((\d+)\)", text)
    if sizes and (int(sizes.group(1)), int(sizes.group(2))) == (b, n):
        hint = ("your scores have B rows but your labels P entries: there is one label per query, "
                "torch.arange(B) with B = queries.shape[0], not one per passage (the extra negatives, rows "
                "B.. of passages, are nobody's positive).")
    elif sizes and (int(sizes.group(1)), int(sizes.group(2))) == (n, b):
        hint = ("your scores have one row per passage, (P, B): the cross-entropy runs over the rows, so each "
                "query needs its own row, scores = queries @ passages.T, (B, P).")
    elif re.search(r"Target -?\d+ is out of bounds", text):
        hint = ("a label is a column of the scores: with scores = queries @ passages.T, (B, P), query i's "
                "label is column i, torch.arange(B), one label per query.")
    elif "required positional argument: 'scale'" in text:
        hint = ("scale needs its default: def contrastive_loss(queries, passages, scale=20.0). Training calls "
                "the loss with the queries and the passages alone, loss_fn(queries, passages).")
    elif "target dtype" in text or "class probabilities" in text:
        hint = ("the labels are class indices, integers: torch.arange(B) as it is (long), without "
                "dtype=queries.dtype or .float().")
    return ExerciseError(str(exc).split("\nHint:")[0] + f"\nHint: {hint}") if hint else exc


def _call(name, label, fn, queries, passages, scale):
    """The learner's call (scale as a keyword, or left out), the inputs left unchanged."""
    given = fn if scale is None else functools.partial(fn, scale=scale)
    return _call_inputs(name, given, label, {"queries": queries, "passages": passages}, None,
                        lambda exc: _rehint(exc, queries, passages))


def _as_loss(name, label, got, q, want):
    """The learner's result as a 0-d tensor of the queries' dtype, or the verdict on what it is instead."""
    if isinstance(got, (float, int)) and not isinstance(got, bool):
        raise ExerciseError(
            f"Your {name} returned a Python number ({got!r}) {label}; it should return the loss as a tensor, "
            "which training calls .backward() on.\nHint: no .item() or float(...) at the end."
        )
    got = _expect_tensor(name, got, label, "the loss (a 0-d tensor)")
    if got.shape != want.shape:
        b = q.shape[0]
        if got.dim() == 1 and got.numel() == b and b > 1:
            hint = ("that is one loss per query; the loss is their mean, one number (F.cross_entropy's default "
                    "reduction='mean', not reduction='none').")
        elif got.dim() == 2 and got.shape[0] == b and b > 1:
            hint = ("that is a matrix, one row per query (the scores?); the loss is one number: the cross-entropy "
                    "of the scores with the labels torch.arange(B), averaged over the queries.")
        elif got.numel() == 1:
            hint = "keep the loss a 0-d tensor: no [None], .reshape(1) or keepdim=True."
        else:
            hint = "the loss is one number: the mean over the queries of each one's cross-entropy."
        raise ExerciseError(f"Your {name} returned shape {_shape(got)} {label}, but the loss is a 0-d tensor, "
                            f"shape ().\nHint: {hint}")
    if got.dtype != want.dtype:
        raise ExerciseError(f"Your {name} returned dtype {got.dtype} {label}, but the queries are {want.dtype}. "
                            "Keep the inputs' dtype (no .float() or .double() inside).")
    return got


# ----------------------------------------------------------------------------------------------
# The check


def _not_finite(name, ask, label, q, p, got, want) -> str:
    """The verdict on a NaN or infinite loss where the right one is finite."""
    kind = "NaN" if torch.isnan(got).any() else "infinite"
    if ask(q, p, 1.0, "with scale=1.0") is not None:
        what = "NaN" if kind == "NaN" else "an infinite loss"
        return (f"Your {name} returns {what} {label}, where the right loss is finite ({float(want):.6g}), but "
                "a finite one with scale=1.0: scores far apart (or large) make exp underflow to 0 (or overflow "
                "to inf) in float32, so log(softmax(scores)) underflows to log(0) = -inf, and an exp written out "
                "gives inf / inf = NaN.\nHint: F.cross_entropy(scores, labels) (or F.log_softmax) computes the log "
                "of the softmax stably; don't take torch.log of a softmax, nor exp of the scores by hand.")
    if kind == "infinite":
        return (f"Your {name} returns an infinite loss {label}, where the right loss is finite ({float(want):.6g}): "
                "a positive's score is -inf, as when the diagonal of the scores is masked with -inf as if it were "
                "each query's similarity with itself. But passages[i] is query i's positive, not query i: the "
                f"diagonal holds the scores that must win; leave it as it is.\nHint: {_HINT}")
    return (f"Your {name} returns NaN {label}, where the right loss is finite ({float(want):.6g}).\nHint: look for a "
            f"0 / 0 (a length of 0 divided by itself) or inf - inf (a whole row of -inf scores). {_HINT}")


def _verdict(name, fn, label, q, p, scale, got, want) -> str:
    """The learner-facing message for a loss that differs from the right one (``scale``: None when left out)."""
    ask = _asker(name, fn, label)
    if scale is None:
        explicit = ask(q, p, _DEFAULT_SCALE, "with scale=20.0 passed")
        if explicit is not None and _same(explicit, float(want)):
            return (f"Your {name} is not right yet {label}: called without scale, your loss is {float(got):.6g}, "
                    f"but with scale=20.0 passed it is the right {float(want):.6g}: the default scale must be 20.0, "
                    "as in sentence-transformers' MultipleNegativesRankingLoss.\nHint: def contrastive_loss(queries, "
                    "passages, scale=20.0).")
    if not torch.isfinite(got).all():
        return _not_finite(name, ask, label, q, p, got, want)
    used = _DEFAULT_SCALE if scale is None else scale
    measured = f"your loss is {float(got):.6g}, the right one {float(want):.6g}"
    mistake = _first_match({"out": got}, _MISTAKES, q, p, used)
    if mistake:
        return f"Your {name} is not right yet {label} ({measured}): {mistake}"
    found = _probe(ask, q, p, used, float(got), float(want))
    if found:
        return f"Your {name} is not right yet {label}: {found}\nHint: {_HINT}"
    other = _effective_scale(q, p, float(got))
    if other is not None:  # one number fits some scale: the same scale must fit other vectors too
        q2, p2 = q + 0.5 * _randn(_gen(44), *q.shape).to(q.dtype), p + 0.5 * _randn(_gen(45), *p.shape).to(p.dtype)
        again = ask(q2, p2, used, "with other vectors")
        second = None if again is None else _effective_scale(q2, p2, again)
        other = other if second is not None and abs(second - other) < 1e-3 * other else None
    if other is not None and abs(other - used) > 1e-3 * used:
        return (f"Your {name} is not right yet {label} ({measured}): yours is the right loss at scale={other:.4g}, "
                f"not at the scale={used:g} it is given: is the scale capped, rounded or changed somewhere? The "
                f"cosines are multiplied by scale as it is.\nHint: {_HINT}")
    return (f"Your {name} is not the in-batch cross-entropy {label}: {measured}, and no usual slip explains the "
            f"difference.\nHint: {_HINT}")


@_checker("contrastive_loss")
def check_contrastive_loss(fn):
    """Check ``contrastive_loss(queries, passages, scale=20.0) -> 0-d Tensor`` (in-batch negatives, cosine scores)."""
    name = exercise("contrastive_loss").name
    cases = _cases()
    for label, q, p, scale in cases:
        got = _call(name, label, fn, q, p, scale)
        want = _loss(q, p, _DEFAULT_SCALE if scale is None else scale)["out"]
        got = _as_loss(name, label, got, q, want)
        if not _close(got, want):
            raise ExerciseError(_verdict(name, fn, label, q, p, scale, got, want))
    for label, q, p, scale in (cases[3], cases[0]):
        used = _DEFAULT_SCALE if scale is None else scale
        _check_gradients(name, label, functools.partial(_call, name, label, fn, scale=scale),
                         lambda queries, passages, used=used: _loss(queries, passages, used)["out"],
                         {"queries": q, "passages": p})
