"""Helpers of the ``contrastive_loss`` checker (``contrastive.py``): the right loss in float64 (and the wrapper the
checker's table of usual slips is computed with), and the probes that name a mistake nobody listed by varying one
thing at a time (each vector's length, one rotation, each query turned towards each passage, the extra negatives,
the pairs' order, the scale the answer acts as, a factor common to every batch, every cosine 0 and a batch the
right loss is sure of), with their comparisons. Only ``contrastive.py`` uses it.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ._compare import _close, probe
from ._run import ExerciseError, _gen, _invoke, _randn, _shape

_DEFAULT_SCALE = 20.0  # sentence-transformers' MultipleNegativesRankingLoss: a temperature of 0.05


# ----------------------------------------------------------------------------------------------
# The loss and its usual slips, in float64


def _cos(q, p, dim=-1):
    return F.normalize(q, dim=dim) @ F.normalize(p, dim=dim).T  # (B, P)


def _ce(scores, labels=None):
    return F.cross_entropy(scores, torch.arange(scores.shape[0]) if labels is None else labels)


def _in_float64(loss):
    """``loss(q, p, scale, scores)`` (``scores``: the right cosines times scale, (B, P)) computed in float64, as the
    checker compares it: ``{"out": ...}`` in the queries' dtype (a list of them for a list of losses)."""
    def compute(q, p, scale):
        dtype, q, p = q.dtype, q.double(), p.double()
        out = loss(q, p, scale, _cos(q, p) * scale)
        return [{"out": o.to(dtype)} for o in out] if isinstance(out, list) else {"out": out.to(dtype)}
    return compute


_loss = _in_float64(lambda q, p, s, scores: _ce(scores))  # the in-batch cross-entropy


def _lengths(g, n, low, high):
    """A column (n, 1) of lengths between ``low`` and ``high``, spread on a log scale."""
    return torch.exp(torch.empty(n, 1).uniform_(math.log(low), math.log(high), generator=g))


# ----------------------------------------------------------------------------------------------
# Probes: what a mistake nobody listed is, found by varying one thing at a time


def _same(a: float, b: float) -> bool:
    return _close(torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64))


def _near(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-3 * abs(b)


def _asker(name, fn, label):
    """``ask(queries, passages, scale, what)``: the learner's loss as a float (None when it is no finite number)."""
    def ask(q, p, scale, what):
        try:
            out = _invoke(name, f"{label}, {what}", fn, q, p, scale=scale)
        except ExerciseError as exc:
            if exc.__cause__ is None:  # the time limit, the reference used: the verdict stands
                raise
            return None  # the learner's error on a probe's input: the listed cases say more
        if not isinstance(out, torch.Tensor) or out.numel() != 1 or not torch.is_floating_point(out):
            return None
        value = float(out.detach().reshape(()))
        return value if math.isfinite(value) else None
    return ask


def _ref(q, p, scale) -> float:
    return float(_loss(q, p, scale)["out"].double())


def _probe_inputs(dtype):
    """Two batches whose cosines are set (then all vectors turned by one random rotation): 4 queries and 6 passages
    in 10 dimensions, 0.3 between each query and its positive and 0.15 to 0.28 with every other passage, where the
    right loss falls steadily as the scale grows, from log P at 0, slowly enough to read the scale back from it;
    and 3 queries and 5 passages in 8 dimensions, about 0.6 with the positive and -0.6 to 0.5 with the others."""
    g = _gen(31)
    batches = []
    for b, n, positive, low, high in ((4, 6, 0.3, 0.15, 0.28), (3, 5, 0.6, -0.6, 0.5)):
        d = b + n
        cos = low + (high - low) * torch.rand(b, n, generator=g, dtype=torch.float64)
        cos[torch.arange(b), torch.arange(b)] = positive
        shrink = max(1.0, float((cos ** 2).sum(dim=0).max()) ** 0.5 / 0.95)
        cos = cos / shrink  # every passage's cosines fit in a unit vector, with room for an axis of its own
        q = torch.eye(d, dtype=torch.float64)[:b]
        p = torch.zeros(n, d, dtype=torch.float64)
        p[:, :b] = cos.T  # passage j: cos[i, j] along query i, the rest of its unit length on an axis of its own
        p[torch.arange(n), b + torch.arange(n)] = (1 - (cos ** 2).sum(dim=0)).sqrt()
        rotation = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))[0]
        batches.append(((q @ rotation).to(dtype), (p @ rotation).to(dtype)))
    return batches


def _pulled(ask, b, n, scale, dtype) -> str:
    """Which passage turning each query towards lowers the loss most, and whether the negatives count at all.

    Queries and passages are B + P orthonormal vectors, every cosine 0; then, one pair at a time, query i is
    turned towards passage j (a cosine of 0.45 with it, still 0 with every other passage). The right loss falls
    for query i's positive alone, and rises for every negative.
    """
    eye = torch.eye(b + n, dtype=dtype)
    q, p = eye[:b], eye[b:]

    def turned(i, j, sign, what):  # query i turned towards passage j (sign 1) or away from it (sign -1)
        moved = q.clone()
        moved[i] = F.normalize(q[i] + sign * 0.5 * p[j], dim=-1)
        return ask(moved, p, scale, what)

    base = ask(q, p, scale, "with every query and passage at right angles to all the others")
    if base is None:
        return ""
    change = torch.zeros(b, n, dtype=torch.float64)  # (B, P): the loss's change when query i turns towards passage j
    for i in range(b):
        for j in range(n):
            value = turned(i, j, 1, f"with query {i} turned a little towards passage {j}")
            if value is None:
                return ""
            change[i, j] = value - base
    size = float(change.abs().max())
    if size <= 1e-6 * max(1.0, abs(base)):
        return ("turning a query towards any passage, its positive or another, does not change your loss at all: "
                "nothing in it pulls a query towards its positive or pushes it from the negatives. Each query's "
                "softmax runs over its whole row of scores against all P passages: its positive, and every other "
                "passage (the other queries' positives included) as a negative.")
    if n > 1 and bool((change < 0).all()):
        spread = change.amax(dim=1) - change.amin(dim=1)
        if bool((spread <= 0.25 * change.abs().amin(dim=1)).all()):
            return (f"your loss falls by about as much ({float(change[0].mean()):.4g}) whichever passage a query turns "
                    "towards, its positive or another: it does not tell the positive from the negatives, as if each "
                    "query's label were whichever passage is nearest (labels from the scores themselves, argmax?). "
                    "The labels are fixed by position, torch.arange(B): query i's positive is passages[i].")
    if n > 1:
        low = change.sort(dim=1).values
        clear = bool(((low[:, 0] < 0) & (low[:, 1] - low[:, 0] > 0.25 * low[:, 0].abs())).all())
    else:
        clear = bool((change[:, 0] < 0).all())
    if not clear:
        return ""
    target = change.argmin(dim=1).tolist()
    if target != list(range(b)):
        wrong = [i for i in range(b) if target[i] != i]
        shown = ", ".join(f"query {i} moves towards passage {target[i]}" for i in wrong[:3])
        patterns = [(b > 1 and set(target) == {target[0]}, f" (passage {target[0]} for every query)"),
                    ({target[i] - i for i in range(b)} == {n - b}, " (the last B passages)"),
                    (target == list(range(b))[::-1], " (the positives in reverse order)")]
        pattern = next((text for fits, text in patterns if fits), "")
        return (f"your loss falls most when {shown}{pattern}, each not towards its own positive: your "
                "labels point at the wrong columns. Query i's positive is passages[i], column i of the scores "
                "(B, P), so the labels are torch.arange(B); the extra negatives come after the positives.")
    flat = 1e-4 * size
    in_batch = ~torch.eye(b, dtype=torch.bool)  # query i against the other queries' positives
    if b > 1 and bool((change[:, :b][in_batch].abs() <= flat).all()):
        return ("turning a query towards another query's positive does not change your loss: the in-batch "
                "negatives do not count. Every passage that is not query i's positive is a negative for it, the "
                "other queries' positives included: the softmax runs over the whole row of scores (B, P).")
    if n > b and bool((change[:, b:].abs() <= flat).all()):
        return ("turning a query towards an extra negative (passages[B:]) does not change your loss: the extra "
                "negatives do not count. They are negatives for every query: score each query against all P "
                "passages, (B, P).")
    if n > 1:  # query 0 turned away from a negative (a cosine of -0.45): the right loss falls
        away = turned(0, 1, -1, "with query 0 turned a little away from passage 1")
        towards = float(change[0, 1])
        if away is not None and towards > 0 and abs(away - base) <= flat:
            return (f"turning query 0 a little away from passage 1, a negative for it, leaves your loss where it was, "
                    f"and turning it towards that passage changes it by {towards:+.4g}: your loss does not read every "
                    "negative, only some (the hardest one, a max over the row?). The cross-entropy weighs every "
                    "passage of the row through its softmax, each negative a little.")
        if away is not None and towards > 0 and away - base >= -flat:
            return (f"turning query 0 away from passage 1, a negative for it (a cosine of -0.45), changes your loss "
                    f"by {away - base:+.4g}, and turning it towards that passage (a cosine of +0.45) by "
                    f"{towards:+.4g}: "
                    "a passage that points away from the query should count as a worse match, and lower the loss. "
                    "Your scores do not grow with the cosine itself (a square or an absolute value of it?): the "
                    "score is the signed cosine times scale.")
    return ""


def _effective_scale(q, p, value: float):
    """The scale at which the right loss on (q, p) is ``value`` (None when none is). The loss moves steadily with
    the scale from log P at scale 0: down towards 0 when each query's positive is its best match, up when a
    negative beats it."""
    q, p = q.double(), p.double()
    low, high = math.log(1e-4), math.log(1e5)
    falls = _ref(q, p, math.exp(high)) < _ref(q, p, math.exp(low))
    ends = sorted((_ref(q, p, math.exp(high)), _ref(q, p, math.exp(low))))
    if not ends[0] < value < ends[1]:
        return None
    for _ in range(80):
        mid = (low + high) / 2
        low, high = (mid, high) if (_ref(q, p, math.exp(mid)) > value) == falls else (low, mid)
    return math.exp((low + high) / 2)


def _scale_finding(ask, scale, dtype) -> str:
    """Which scale the answer acts as, for 2, 5 and the case's scale, each confirmed on a second batch; "" when no
    scale explains it."""
    (qa, pa), (qb, pb) = _probe_inputs(dtype)
    scales = sorted({2.0, 5.0, float(scale)})
    acts = []
    for s in scales:
        first = ask(qa, pa, s, f"on a batch {_shape(qa)} with {pa.shape[0]} passages, scale={s:g}")
        second = ask(qb, pb, s, f"on a batch {_shape(qb)} with {pb.shape[0]} passages, scale={s:g}")
        found = _effective_scale(qa, pa, first) if first is not None else None
        if found is None or second is None or not _close(torch.tensor(second, dtype=torch.float64),
                                                        torch.tensor(_ref(qb, pb, found)), factor=2):
            return ""
        acts.append(found)
    if all(_near(e, s) for e, s in zip(acts, scales)):
        return ""
    pairs = list(zip(acts, scales))
    if all(_near(e, 1.0) for e, _ in pairs):
        why = "the cosines are not multiplied by scale"
    elif all(_near(e, 1 / s) for e, s in pairs):
        why = "the cosines are divided by scale"
    elif all(_near(e, s ** 2) for e, s in pairs):
        why = "scale is applied twice (scale ** 2): to both vectors, or to the scores and again"
    elif all(_near(e, math.log(s)) for e, s in pairs):
        why = "the cosines are multiplied by log(scale), not by scale: no log, scale is the multiplier itself"
    elif all(_near(e, math.sqrt(s)) for e, s in pairs):
        why = "the cosines are multiplied by sqrt(scale) (scale ** 0.5), not by scale"
    elif all(_near(e, acts[0]) for e in acts):
        why = f"your loss ignores the scale it is given and acts as {acts[0]:.4g} whatever is passed"
    elif all(_near(e / s, acts[0] / scales[0]) for e, s in pairs):
        k = acts[0] / scales[0]
        why = (f"the cosines are multiplied by {k:.4g} * scale, not by scale: a factor of {k:.4g} is wrong"
               + (" (as with -|a - b|² of unit vectors, which is 2 cos - 2: twice the cosine)"
                  if _near(k, 2.0) else ""))
    else:
        right = [f"{s:g}" for e, s in pairs if _near(e, s)]
        why = (f"right with scale={' and '.join(right)}, not with the others: your code changes the scale it is "
               "given in some cases (a limit, a condition)" if right else "")
    shown = ", ".join(f"with scale={s:g} it is the right loss for scale {e:.4g}" for e, s in pairs)
    return (f"your loss behaves as the right loss at another scale: {shown}" + (f": {why}" if why else "")
            + ". Multiply the cosine similarities by scale, once: F.normalize(queries, dim=-1) @ "
            "F.normalize(passages, dim=-1).T * scale.")


def _factor_finding(ask, q, p, scale, got, want) -> str:
    """One factor between the answer and the right loss on three batches of different sizes ("" when none)."""
    batches = [(q, p)] + _probe_inputs(q.dtype)
    sizes = [(x.shape[0], y.shape[0]) for x, y in batches]
    ratios = [got / want] if abs(want) > 1e-8 else []
    for x, y in batches[1:]:
        mine, right = ask(x, y, scale, f"on a batch {_shape(x)} with {y.shape[0]} passages"), _ref(x, y, scale)
        if mine is None or abs(right) < 1e-8:
            return ""
        ratios.append(mine / right)
    if len(ratios) < 3 or any(abs(r) < 1e-6 for r in ratios):
        return ""
    if all(_near(r, ratios[0]) for r in ratios):
        c = ratios[0]
        return (f"your loss is {c:.4g} times the right one on every batch tried"
                + (" (the sign flipped)" if c < 0 else "") + ": the pattern is right, a factor is wrong. The loss "
                "is the plain mean over the queries of each one's cross-entropy.")
    if all(_near(r, b) for r, (b, _) in zip(ratios, sizes)):
        return ("your loss is B times the right one on every batch tried: the sum over the queries, where the "
                "mean belongs.")
    if all(_near(r, b / n) for r, (b, n) in zip(ratios, sizes)):
        return ("your loss is B / P times the right one on every batch tried: the sum over the queries is divided "
                "by the number of passages P, where the mean over the B queries belongs.")
    if all(_near(r, 1 / b) for r, (b, _) in zip(ratios, sizes)):
        return ("your loss is the right one divided by B again on every batch tried: the mean over the queries is "
                "divided by B once more.")
    if all(_near(r, 1 / n) for r, (_, n) in zip(ratios, sizes)):
        return ("your loss is the right one divided by P, the number of passages, on every batch tried: the queries' "
                "losses are summed and divided by B * P (every score, as scores.numel() or a mean over the whole "
                "matrix), where their mean, the sum divided by B, belongs.")
    return ""


def _exp_finding(ask, q, p, scale, want: float) -> str:
    """Whether the answer multiplies the cosines by exp(scale) (a learned log-temperature, as CLIP's): given
    log(scale), and then log(5), it returns the right loss at scale, and at 5 ("" when not)."""
    if scale <= 0:
        return ""
    first = ask(q, p, math.log(scale), f"with scale=log({scale:g}) = {math.log(scale):.4g}")
    if first is None or not _same(first, want):
        return ""
    second = ask(q, p, math.log(5.0), f"with scale=log(5) = {math.log(5.0):.4g}")
    if second is None or not _same(second, _ref(q, p, 5.0)):
        return ""
    return (f"given scale=log({scale:g}) = {math.log(scale):.4g}, your loss is the right loss for scale={scale:g} "
            f"({want:.6g}), and given log(5) the right one for 5: the similarities are multiplied by exp(scale) "
            "instead of scale. CLIP learns the log of its scale and exponentiates it; here scale is the multiplier "
            "itself (20 by default, a temperature of 1 / 20): cos * scale, with no exp.")


@probe
def _probe(ask, q, p, scale, got: float, want: float) -> str:
    """Vary one thing at a time (``ask``: the learner's loss, ``_asker``'s) and name what the answer responds to
    wrongly; "" when every probe agrees."""
    b, n, d = q.shape[0], p.shape[0], q.shape[1]

    def changed(queries, passages, what):
        """The answer's loss on inputs whose right loss is this one, when it changes (None when not)."""
        value = ask(queries, passages, scale, what)
        return None if value is None or _same(value, got) else value

    if got < 0:
        return (f"your loss is negative ({got:.4g}), but a cross-entropy, -log of the positive's probability, is "
                f"never below 0 (the right loss here is {want:.4g}): check the sign, and what the log is taken of "
                "(F.nll_loss expects log-probabilities, from log_softmax; F.cross_entropy takes the scores as "
                "they are).")
    g = _gen(32)
    for role, roles, size in (("query", "queries", b), ("passage", "passages", n)):
        factors = _lengths(g, size, 0.05, 20.0).to(q.dtype)
        shown = ", ".join(f"{float(f):.2g}" for f in factors[:3, 0])
        other = changed(*((q * factors, p) if role == "query" else (q, p * factors)),
                        f"with each {role} multiplied by a positive number")
        if other is not None:
            return (f"multiplying each {role} by a positive number ({shown}, ...; its direction unchanged) changes "
                    f"your loss from {got:.6g} to {other:.6g}, but a cosine similarity depends on directions only: "
                    f"the {roles} are not normalised, each exactly by its own length (an eps added to the length "
                    "counts for short vectors). Divide each vector by its own length, F.normalize(x, dim=-1) or "
                    "x / x.norm(dim=-1, keepdim=True), queries and passages.")
    rotation = torch.linalg.qr(_randn(_gen(33), d, d).double())[0].to(q.dtype)
    turned = changed(q @ rotation, p @ rotation, "with every query and passage turned by one rotation")
    if turned is not None:
        return (f"turning every query and passage by the same rotation, which changes no angle between them and so "
                f"no cosine, changes your loss from {got:.6g} to {turned:.6g}: your scores are not the cosines. A "
                "cosine similarity divides each vector by its Euclidean length (F.normalize's default p=2) before "
                "the dot products.")
    found = _exp_finding(ask, q, p, scale, want) or _pulled(ask, b, n, scale, q.dtype)
    if found:
        return found
    if n > b:
        fewer = ask(q, p[:b], scale, "with the extra negatives removed (passages[:B] only)")
        if fewer is not None and _same(fewer, got) and not _same(_ref(q, p[:b], scale), want):
            return (f"removing the extra negatives (passages[B:]) leaves your loss as it was ({got:.6g}): they do not "
                    "count. They are negatives for every query: score each query against all P passages, (B, P).")
        flipped = changed(q, p[torch.cat([torch.arange(b), b + torch.arange(n - b).flip(0)])],
                          "with the extra negatives in reverse order")
        if flipped is not None:
            return (f"reversing the order of the extra negatives (passages[B:]) changes your loss from {got:.6g} to "
                    f"{flipped:.6g}, but they are negatives for every query and their order cannot matter: only "
                    "passages[:B] are matched with the queries, passages[i] with query i.")
    if b > 1:
        turn = torch.roll(torch.arange(b), 1)
        moved = changed(q[turn], p[torch.cat([turn, torch.arange(b, n)])],
                        "with the pairs in another order (each query with its positive)")
        if moved is not None:
            return (f"putting the pairs in another order (each query moved together with its positive) changes your "
                    f"loss from {got:.6g} to {moved:.6g}: the loss is a mean over the queries, which their order "
                    "cannot change, and query i's positive is the passage at its own position, passages[i].")
    found = _scale_finding(ask, scale, q.dtype) or _factor_finding(ask, q, p, scale, got, want)
    if found:
        return found
    eye = torch.eye(b + n, dtype=q.dtype)
    flat = ask(eye[:b], eye[b:], scale, "with every query and passage at right angles to all the others")
    if flat is not None and b > 1 and _same(flat, math.log(b * n)):
        return (f"with every query at right angles to every passage (every cosine 0) the right loss is log P = log {n} "
                f"= {math.log(n):.5g}; yours gives log(B * P) = log {b * n} = {flat:.5g}: your softmax runs over all "
                "B * P scores at once. The softmax runs over one query's row of P scores at a time: "
                "F.cross_entropy(scores, labels) on the (B, P) scores.")
    if flat is not None and not _same(flat, math.log(n)):
        return (f"with every query at right angles to every passage (every cosine 0), each query's {n} passages are "
                f"equally likely and the right loss is log P = log {n} = {math.log(n):.5g}, whatever the scale; yours "
                f"gives {flat:.5g}. Your loss is not -log of the positive's softmax probability over the query's "
                "row of scores: nothing is added to the scores (a margin on the positive?) or to the loss, and no "
                "sigmoid or hinge takes the softmax's place; the scores are the cosines times scale, nothing else.")
    sure = "with each query equal to its positive and at right angles to every other passage"
    value = ask(torch.eye(n, dtype=q.dtype)[:b], torch.eye(n, dtype=q.dtype), 50.0, f"{sure}, scale=50.0")
    right = _ref(torch.eye(n)[:b], torch.eye(n), 50.0)
    if value is not None and value > 1e-3:
        return (f"{sure}, at scale=50.0 each positive wins by far and the right loss is almost 0 ({right:.1g}); "
                f"yours gives {value:.4g}. Your loss is not each query's cross-entropy of its own row of scores "
                "against its positive: the softmax runs over one query's row (B, P) at a time, and nothing is added "
                "to -log p(positive) (no label smoothing, margin or penalty).")
    return ""
