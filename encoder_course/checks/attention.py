"""Checker of ``scaled_dot_product_attention`` (notebook 02), and the attention the other checkers reuse.

:func:`_attention` computes the reference and each usual mistake in float64; the multi-head checker
builds its heads' mistakes on it.
"""

from __future__ import annotations

import math

import torch

from .._validate import scores_shape
from ._compare import (
    _check_gradients,
    _close,
    _describe,
    _described,
    _first_match,
    _random_inside,
    _shape_hint,
    probe,
)
from ._modules import _call_inputs
from ._run import ExerciseError, _checker, _expect_tensor, _gen, _invoke, _randn, _shape
from .registry import exercise


def _attention(q, k, v, mask=None, *, scale="sqrt", softmax_dim=-1, mask_mode="fill", fill="zero",
               weights_are="softmax"):
    """Reference attention and its usual mistakes (computed in float64, returned as q's dtype)."""
    dtype = q.dtype
    q, k, v = q.double(), k.double(), v.double()
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1)
    # What each scale divides the scores by ("half": d_k ** 1/2 reads as (d_k ** 1) / 2); "none" leaves them.
    divisors = {"sqrt": math.sqrt(d_k), "d": d_k, "sqrt_dv": math.sqrt(v.shape[-1]), "sqrt_lk": math.sqrt(k.shape[-2]),
                "sqrt_lq": math.sqrt(q.shape[-2]), "half": d_k / 2}
    if scale == "times":
        scores = scores * math.sqrt(d_k)
    elif scale in divisors:
        scores = scores / divisors[scale]
    raw = scores
    if mask is not None:
        mask = torch.broadcast_to(mask, scores.shape)
        use = ~mask if mask_mode == "inverted" else mask
        if mask_mode in ("fill", "inverted"):
            scores = scores.masked_fill(~use, float("-inf") if fill != "min" else torch.finfo(dtype).min)
        elif mask_mode == "zero":
            scores = scores.masked_fill(~use, 0.0)
        elif mask_mode == "finite":  # the old BERT convention, -10000: lost among scores larger than that
            scores = scores.masked_fill(~use, -1e4)
        elif mask_mode == "inverted_zero":  # masked_fill(mask, 0.0): both slips at once
            scores = scores.masked_fill(mask, 0.0)
        elif mask_mode == "add":  # scores + mask: True counts as 1, False as 0
            scores = scores + mask.to(scores.dtype)
        elif mask_mode == "smallest":  # masked_fill(~mask, scores.min()): the smallest score, not -inf
            scores = scores.masked_fill(~mask, float(scores.min()))
    weights = torch.softmax(scores, dim=softmax_dim)
    if mask is not None and mask_mode == "after":
        weights = weights.masked_fill(~mask, 0.0)
    if mask is not None and mask_mode in ("fill", "inverted") and fill == "zero":
        weights = weights.masked_fill(~use.any(dim=-1, keepdim=True), 0.0)
    if weights_are == "scaled_after":  # softmax of the unscaled scores, then divided by sqrt(d_k)
        weights = weights / math.sqrt(d_k)
    elif weights_are == "log_softmax":
        weights = torch.log_softmax(scores, dim=softmax_dim)
    out = weights @ v
    if weights_are == "scores":
        weights = raw
    return {"out": out.to(dtype), "weights": weights.to(dtype)}


def _fragile(q, k, v, mask, kind):
    """Softmaxes that are right on paper but break on large scores, computed in the inputs' dtype.

    ``"naive"``: exp() of the scores without subtracting the row maximum (masked keys dropped by a
    product, or filled with -inf first); ``"renormalise"``: softmax, masked weights set to 0, the rest
    divided by their sum.
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if kind == "naive":
        e = torch.exp(scores)
        kept = [e] if mask is None else [e * mask, torch.exp(scores.masked_fill(~mask, float("-inf")))]
    elif mask is None:
        return []
    else:
        kept = [torch.softmax(scores, dim=-1) * mask]
    return [{"out": w @ v, "weights": w} for w in (e / e.sum(dim=-1, keepdim=True) for e in kept)]


def _slip(**kwargs):
    return lambda q, k, v, m: _attention(q, k, v, m, **kwargs)


_ATTENTION_MISTAKES = [
    ("the softmax runs over the wrong axis. Each query's row of weights (over the keys, the last "
     "dimension) must sum to 1.\nHint: torch.softmax(scores, dim=-1).",
     lambda q, k, v, m: [_attention(q, k, v, m, softmax_dim=d) for d in range(-q.dim(), -1)]),
    ("the scores are not scaled. Divide q @ k^T by sqrt(d_k), the size of the queries' last dimension.",
     _slip(scale="none")),
    ("the scores are divided by d_k; divide them by the square root of d_k: math.sqrt(d_k).",
     _slip(scale="d")),
    ("the scores are multiplied by sqrt(d_k); divide them by it instead.",
     _slip(scale="times")),
    ("the scores are scaled with the size of v (d_v); use the size of q and k (d_k = q.shape[-1]).",
     _slip(scale="sqrt_dv")),
    ("the mask is inverted. True means 'may attend', so fill the scores where the mask is False "
     "(use ~mask or mask == False).",
     lambda q, k, v, m: [_attention(q, k, v, m, mask_mode="inverted", fill=f) for f in ("zero", "nan", "min")]),
    ("masked scores are set to 0, but exp(0) = 1, so masked keys still get weight. Fill them with "
     "float('-inf') (or torch.finfo(scores.dtype).min) before the softmax.",
     _slip(mask_mode="zero")),
    ("the mask is applied after the softmax, so the remaining weights no longer sum to 1. Fill the "
     "masked scores with float('-inf') before the softmax instead.",
     _slip(mask_mode="after")),
    ("the mask has no effect: masked keys still get weight. Fill the scores where mask is False with "
     "float('-inf') before the softmax, e.g. scores.masked_fill(~mask, float('-inf')).",
     _slip(mask_mode="ignore")),
    ("the mask is inverted and the masked scores are set to 0: masked_fill(mask, 0.0) fills the keys that "
     "may be attended, and exp(0) = 1 still gives them weight. Fill where the mask is False, with "
     "float('-inf'): scores.masked_fill(~mask, float('-inf')).",
     _slip(mask_mode="inverted_zero")),
    ("the bool mask is added to the scores: True counts as 1 and False as 0, so the masked keys only lose "
     "1 and keep most of their weight. A bool mask selects: scores.masked_fill(~mask, float('-inf')) "
     "(an additive mask would hold 0 and -inf).",
     _slip(mask_mode="add")),
    ("masked scores are filled with the smallest score (scores.min()), which still gets weight after the "
     "softmax. Fill them with float('-inf') (or torch.finfo(scores.dtype).min), which gets none.",
     _slip(mask_mode="smallest")),
    ("the weights are log-probabilities (log_softmax): they are negative and do not sum to 1. Use "
     "torch.softmax(scores, dim=-1).",
     _slip(weights_are="log_softmax")),
    ("exp() overflows: your softmax does not subtract each row's maximum before exp(), and exp(89) is "
     "already infinite in float32, so large scores give inf / inf = NaN. Subtract "
     "scores.amax(dim=-1, keepdim=True) first, or use torch.softmax.",
     lambda q, k, v, m: _fragile(q, k, v, m, "naive")),
    ("the mask is applied after the softmax and the kept weights renormalised: the same on paper, but "
     "mask before the softmax; renormalising divides 0 by 0 when every kept weight underflows (large "
     "scores whose maximum sits on a masked key), which gives NaN. Fill the masked scores with "
     "float('-inf'), then take the softmax.",
     lambda q, k, v, m: _fragile(q, k, v, m, "renormalise")),
    ("the scores are divided by the square root of the number of keys (L_k = k.shape[-2]); divide by "
     "sqrt(d_k), the size of the last dimension of q and k: q.shape[-1].",
     _slip(scale="sqrt_lk")),
    ("the scores are divided by the square root of the number of queries (L_q). d_k is the last "
     "dimension of q, q.shape[-1]; q.shape[2] is d_k only for 3-D inputs, and L_q once there is a heads "
     "dimension.",
     _slip(scale="sqrt_lq")),
    ("the scores are divided by d_k / 2. In Python `d_k ** 1/2` means (d_k ** 1) / 2, because ** binds "
     "tighter than /: write d_k ** 0.5 or math.sqrt(d_k).",
     _slip(scale="half")),
    ("the scaling comes after the softmax: the weights are divided by sqrt(d_k), so rows no longer sum "
     "to 1. Scale the scores before the softmax: softmax(q @ k^T / sqrt(d_k)).",
     _slip(scale="none", weights_are="scaled_after")),
    ("the weights you return are the raw scores from before the softmax. Return the weights after "
     "the softmax (the ones you multiply v with).",
     _slip(weights_are="scores")),
]


def _given(q, k, v, mask) -> dict:
    """The inputs by name, the mask left out when there is none (the learner's default)."""
    return {"q": q, "k": k, "v": v} | ({} if mask is None else {"mask": mask})


@probe
def _attention_probe(name, fn, label, q, k, v, mask, out, weights) -> str:
    """Localise an attention mistake no listed slip explains, by what the answer responds to.

    In turn: whether out is the learner's own weights @ v; whether
    each row of the weights sums to 1; weight on keys the mask forbids; and whether the weights stay
    put when the same vector is added to every key (each query's scores then shift by one constant,
    which a softmax over the keys ignores).
    """
    w64 = weights.detach().double()
    own = w64 @ v.double()
    if torch.isfinite(own).all() and not _close(out, own.to(out.dtype), 2.0):
        return ("your out is not your own weights @ v, so something happens to out besides weighting the values: "
                f"{_describe(out, own.to(out.dtype), ('sequence',))} The output is exactly weights @ v, "
                "nothing added or changed after it.")
    sums = w64.sum(dim=-1)
    if torch.isfinite(sums).all() and not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
        if torch.allclose(sums, torch.ones_like(sums), atol=3e-3):
            return (f"the rows of your weights sum to {float(sums.min()):.4g} to {float(sums.max()):.4g}, 1 to about "
                    "3 digits only: the softmax is computed in a lower precision (float16 or bfloat16) somewhere, "
                    "or rounded. Keep the inputs' dtype all the way (no .half()).")
        return (f"the rows of your weights sum to {float(sums.min()):.4g} to {float(sums.max()):.4g}, not 1: each "
                "query's weights over the keys are a softmax, exp(s) / exp(s).sum(dim=-1, keepdim=True), with "
                "nothing else added to the denominator.")
    if mask is not None:
        forbidden = w64.masked_fill(torch.broadcast_to(mask, w64.shape), 0.0).abs()
        if float(forbidden.max()) > 1e-6 and mask.dim() >= 2 and mask.shape[-1] == mask.shape[-2] > 1:
            flipped = torch.broadcast_to(mask.transpose(-2, -1), w64.shape)
            if float(w64.masked_fill(flipped, 0.0).abs().max()) == 0.0:
                return ("your weights are zero where the mask transposed is False, not where the mask is: row i "
                        "follows column i of the mask. mask[..., i, j] says whether query i may see key j, which is "
                        "the layout of the scores (..., L_q, L_k): use the mask as it is, without transposing it.")
        if float(forbidden.max()) > 1e-6:
            return (f"your weights give up to {float(forbidden.max()):.3g} to keys the mask forbids (mask False), "
                    "which should get exactly 0: fill their scores with float('-inf') (a finite number such as "
                    "-5 or -100 still leaves them weight, more as scores grow), then take the softmax.")
    shift = _randn(_gen(7), k.shape[-1]).to(k.dtype)
    moved = _invoke(name, label, fn, *_given(q, k + shift, v, mask).values())
    if isinstance(moved, (tuple, list)) and len(moved) == 2 and isinstance(moved[1], torch.Tensor) \
            and moved[1].shape == weights.shape and not _close(moved[1], weights, 10.0):
        return ("adding the same vector to every key changes your weights, but it should not: each query's scores "
                "all shift by one constant, which a softmax over the keys (dim=-1) ignores. Something in your "
                "weights depends on the scores' level, not only their differences.")
    return ""


@probe
def _values_probe(name, fn, label, q, k, v, mask, weights) -> str:
    """With the right weights, what does out do to the values? Give v = the identity (one value per key,
    d_v = L_k): out is then the matrix the values are weighted with, to compare with the weights."""
    def out_for(values):
        got = _invoke(name, label, fn, *_given(q, k, values, mask).values())
        return got[0] if isinstance(got, (tuple, list)) and got else got

    zero = out_for(torch.zeros_like(v))
    if isinstance(zero, torch.Tensor) and torch.isfinite(zero).all() and float(zero.abs().max()) > 1e-6:
        return ("with v all zeros your out should be all zeros (weights @ 0), but it is not (up to "
                f"{float(zero.abs().max()):.4g}): something besides weights @ v is added to out.")
    used = out_for(torch.eye(k.shape[-2], dtype=v.dtype).expand(*v.shape[:-1], k.shape[-2]))
    if not isinstance(used, torch.Tensor) or used.shape != weights.shape:
        return ""
    w = weights.detach().double().reshape(-1, weights.shape[-1])
    u = used.detach().double().reshape(-1, weights.shape[-1])
    if _close(u, w, 2.0):
        return ""
    row = int((u - w).abs().amax(dim=-1).argmax())
    shown, right = (", ".join(f"{float(a):.3g}" for a in t[row]) for t in (u, w))
    return ("your out weights the values with a matrix other than your weights (found by giving v = the identity, "
            f"one value per key): for one query out uses [{shown}] (summing to {float(u.sum(dim=-1)[row]):.4g}), "
            f"your weights are [{right}].")


@probe
def _scale_probe(q, k, weights, mask=None) -> str:
    """One wrong constant c in the scale: the weights are softmax(q k^T / c) over the allowed keys, c fitted from
    them (each row's logs and scores centred over its allowed keys)."""
    shape = scores_shape(q, k)
    if tuple(weights.shape) != shape or not torch.isfinite(weights).all():
        return ""
    allowed = torch.ones(shape, dtype=torch.bool) if mask is None else torch.broadcast_to(mask, shape)
    if (weights[allowed] <= 0).any() or (weights[~allowed] != 0).any():
        return ""
    keep = allowed.double()
    count = keep.sum(-1, keepdim=True).clamp(min=1)
    raw = (q.double() @ k.double().transpose(-2, -1))
    logs = torch.log(weights.double().where(allowed, torch.ones((), dtype=torch.float64)))
    raw_c = (raw - (raw * keep).sum(-1, keepdim=True) / count) * keep
    logs_c = (logs - (logs * keep).sum(-1, keepdim=True) / count) * keep
    slope = float((raw_c * logs_c).sum() / (raw_c * raw_c).sum())  # 1 / c
    if slope <= 0 or float((logs_c - slope * raw_c).abs().max()) > 1e-4 * max(1.0, float(logs_c.abs().max())):
        return ""
    scale, d_k = 1.0 / slope, q.shape[-1]
    if abs(scale - math.sqrt(d_k)) < 1e-3 * scale:
        return ""
    return (f"your weights are softmax(q @ k^T / c) with c = {scale:.4g}, but c should be sqrt(d_k) = "
            f"sqrt({d_k}) = {math.sqrt(d_k):.4g}. Look at how you compute the scale (d_k = q.shape[-1]; "
            "math.sqrt(d_k) or d_k ** 0.5).")


@probe
def _rows_probe(name, fn, label, q, k, v, mask) -> str:
    """A mask with one row per query, used as if it had one row for all (reduced over the queries, or one row
    taken): the answer is then right for a mask whose rows are all the same. Tried with the mask's row that
    allows the fewest keys (two at least, so that the softmax and the scale still show), spread over every
    query."""
    if mask is None or mask.dim() < 2 or mask.shape[-2] == 1:
        return ""
    rows = torch.broadcast_to(mask, scores_shape(q, k))
    if bool((rows == rows[..., :1, :]).all()):
        return ""
    counts = rows.sum(dim=-1).flatten()
    usable = (counts >= 2) & (counts < rows.shape[-1])  # a softmax over 2 or more keys, and a key masked
    if not bool(usable.any()):
        return ""
    row = rows.reshape(-1, rows.shape[-1])[counts.masked_fill(~usable, rows.shape[-1]).argmin()]
    same = torch.broadcast_to(row, mask.shape).clone()
    got = _invoke(name, f"{label}, every row of the mask made the same", fn, *_given(q, k, v, same).values())
    want = _attention(q, k, v, same)
    if not (isinstance(got, (tuple, list)) and len(got) == 2 and all(isinstance(t, torch.Tensor) for t in got)
            and got[0].shape == want["out"].shape and got[1].shape == want["weights"].shape
            and _close(got[0], want["out"]) and _close(got[1], want["weights"])):
        return ""
    return ("every query gets the same row of the mask: your answer is right when all the mask's rows are the same "
            "(a padding mask spread over the queries), and wrong for this one, where each query has a row of its "
            "own. Is the mask reduced over its queries (mask.any(dim=-2)) or one row taken (mask[..., -1:, :])? "
            "Row i says which keys query i may see: use the mask as given, scores.masked_fill(~mask, "
            "float('-inf')), which lines it up with the scores row by row.")


def _attention_cases():
    """(label, q, k, v, mask, hint), drawn in this order from one generator."""
    g = _gen(1)

    # d_k = 8 here: with d_k = 4, sqrt(d_k) = d_k / 2 and two slips would pass unseen.
    def qkv(*lead, l_q=4, d_v=6):
        return _randn(g, *lead, l_q, 8), _randn(g, *lead, 5, 8), _randn(g, *lead, 5, d_v)

    pad = torch.tensor([[True] * 5, [True, True, True, False, False]])
    pad4 = pad[:, None, None, :]
    cases = [
        ("on batched inputs q (2, 3, 8), k (2, 5, 8), v (2, 5, 6) without a mask", *qkv(2, l_q=3), None, ""),
        ("on multi-head inputs q (2, 3, 4, 8), k (2, 3, 5, 8), v (2, 3, 5, 6) without a mask", *qkv(2, 3), None,
         "It works for 3-D inputs but not with a heads dimension: transpose only the last two "
         "dimensions (k.transpose(-2, -1)) and use dim=-1."),
        ("with a padding mask of shape (2, 1, 1, 5) (True = may attend), q (2, 3, 4, 8)", *qkv(2, 3), pad4,
         "Without a mask your code is right, so look at how you use the mask: fill the scores "
         "where mask is False with float('-inf') before the softmax."),
        ("with a padding mask of shape (2, 1, 5) on 3-D inputs", *qkv(2, d_v=3), pad[:, None, :], ""),
    ]
    x = _randn(g, 1, 2, 5, 4)
    cases.append(("with a causal mask of shape (5, 5) (self-attention)", x, x.clone() * 0.5 + 0.1,
                  _randn(g, 1, 2, 5, 6), torch.ones(5, 5, dtype=torch.bool).tril(), ""))
    rnd = torch.rand(2, 2, 4, 5, generator=g) > 0.5
    rnd[..., 0] = True  # every query keeps at least one key (fully masked rows are not tested)
    return cases + [
        ("with a full (2, 2, 4, 5) mask", *qkv(2, 2), rnd, ""),
        ("with tiny inputs (about 1e-3)", *(t * 1e-3 for t in qkv(2, 3)), pad4, ""),
        ("with large inputs (q, k about 10, v about 1000)", *(t * s for t, s in zip(qkv(2, 3), (10, 10, 1e3))), pad4,
         "It works on ordinary inputs but not on large ones. If you wrote the softmax yourself, "
         "subtract each row's maximum before exp() (or use torch.softmax)."),
        ("with scores far below zero (q about 10, k about -10: every allowed score about -200) and a padding mask "
         "(2, 1, 1, 5)", *(t * s for t, s in zip((t.abs() for t in qkv(2, 3)), (10, -10, 1))), pad4,
         "It works until every allowed score is far below zero: a masked key must lose to every allowed one, "
         "whatever their scores. Fill with float('-inf'): a number such as -100 can beat real scores."),
        ("on float64 inputs with a padding mask (2, 1, 1, 5)", *(t.double() for t in qkv(2, 3)), pad4,
         "Keep the inputs' dtype: no .float() and no float32 tensors inside."),
        ("on a batch of one: q (1, 3, 8), k (1, 5, 8), v (1, 5, 6) without a mask", *qkv(1, l_q=3), None,
         "It works on batches of two but not of one: a .squeeze() without a dimension removes every dimension of "
         "size 1, the batch's too (squeeze only the one you added: .squeeze(1))."),
    ]


@_checker("scaled_dot_product_attention")
def check_scaled_dot_product_attention(fn):
    """Check ``scaled_dot_product_attention(q, k, v, mask=None) -> (out, weights)``."""
    name = exercise("scaled_dot_product_attention").name
    for label, q, k, v, mask, case_hint in _attention_cases():
        result = _call_inputs(name, fn, label, _given(q, k, v, mask), None)
        want = _attention(q, k, v, mask)
        want_out, want_w = want["out"], want["weights"]
        if isinstance(result, torch.Tensor):
            raise ExerciseError(
                f"Your {name} returned a single tensor {label}; it should return two: (out, weights).\n"
                "Hint: end with `return out, weights`."
            )
        if isinstance(result, (tuple, list)) and len(result) != 2:
            raise ExerciseError(
                f"Your {name} returned {len(result)} values {label}; it should return two: (out, weights)."
            )
        if not isinstance(result, (tuple, list)):
            _expect_tensor(name, result, label, "the pair (out, weights)")
        for position, what in ((0, "first value (out)"), (1, "second value (the weights)")):
            if result[position] is None:
                raise ExerciseError(
                    f"Your {name} returned None as its {what} {label}.\nHint: return both tensors, "
                    "`return out, weights` (F.scaled_dot_product_attention gives only out: compute the "
                    "weights yourself)."
                )
        out = _expect_tensor(name, result[0], label, "out as its first value")
        weights = _expect_tensor(name, result[1], label, "the weights as its second value")
        if out.shape == want_w.shape and weights.shape == want_out.shape and out.shape != weights.shape:
            raise ExerciseError(
                f"Your {name} returned (weights, out) {label}; the order is (out, weights)."
            )
        for what, got, ref, desc in (("out", out, want_out, "(..., L_q, d_v)"),
                                     ("weights", weights, want_w, "(..., L_q, L_k)")):
            if got.shape != ref.shape:
                hint = _shape_hint(got.shape, ref.shape, mask is not None)
                hint = f"\nHint: {hint}" if hint else ""
                if what == "out" and got.shape[-1] == q.shape[-1] != v.shape[-1]:
                    hint = "\nHint: out's last dimension comes from v (d_v), not from q: out = weights @ v."
                raise ExerciseError(
                    f"Your {name} returned {what} of shape {_shape(got)} {label}, but it should be "
                    f"{desc} = {_shape(ref)}.{hint}"
                )
            if got.dtype != ref.dtype:
                raise ExerciseError(
                    f"Your {name} returned {what} with dtype {got.dtype} {label}, but the inputs are "
                    f"{ref.dtype}. Keep the inputs' dtype (no .double(), no float64 constants as tensors)."
                )
        bad = {key: t for key, t, ref in (("out", out, want_out), ("weights", weights, want_w))
               if not _close(t, ref)}
        if not bad:
            continue

        def rerun(q=q, k=k, v=v, mask=mask, label=label):
            again = _invoke(name, label, fn, *_given(q, k, v, mask).values())
            return again[0] if isinstance(again, (tuple, list)) and len(again) == 2 else None

        randomness = _random_inside(rerun, out)
        if randomness:
            raise ExerciseError(
                f"Your {name} is random {label}: {randomness}. Something random is inside, such as dropout "
                "(F.dropout(x, p) is active unless you pass training=False).\nHint: this function has no "
                "dropout; leave it out (and no torch.manual_seed inside it)."
            )
        if list(bad) == ["weights"] and mask is not None and _close(weights, _attention(q, k, v)["weights"]):
            raise ExerciseError(
                f"Your {name}'s out is right but the weights you return are from before the mask was "
                f"applied {label}.\nHint: return the weights after the softmax of the masked scores, the "
                "same ones you multiply v with."
            )
        found = (_rows_probe(name, fn, label, q, k, v, mask) or _first_match(bad, _ATTENTION_MISTAKES, q, k, v, mask)
                 or _scale_probe(q, k, weights, mask))
        if found:
            raise ExerciseError(f"Your {name} is not right yet {label}: {found}")
        if any(torch.isnan(t).any() for t in bad.values()):
            hint = case_hint or (
                "NaN comes from exp() overflowing or from a row where every score is -inf. "
                + ("Check that the mask is not inverted." if mask is not None else
                   "If you wrote the softmax yourself, subtract each row's maximum before exp().")
            )
            raise ExerciseError(f"Your {name} returned NaN values {label}.\nHint: {hint}")
        lead = ("sequence",) * (out.dim() - 2)
        if "out" in bad and "weights" not in bad:
            found = _values_probe(name, fn, label, q, k, v, mask, weights) or _described(
                out, want_out, lead + ("query", "feature"))
            raise ExerciseError(f"Your {name}'s weights are right but out is not {label}: {found}\n"
                                "Hint: out = weights @ v.")
        if "weights" in bad and "out" not in bad:
            raise ExerciseError(
                f"Your {name}'s out is right but the weights you return are not {label}: "
                f"{_described(weights, want_w, lead + ('query', 'key'))}\nHint: return "
                "the weights after the softmax, the "
                "same ones you multiply v with."
            )
        hint = case_hint or "softmax(q @ k^T / sqrt(d_k)) @ v, with masked scores set to -inf before the softmax."
        found = _attention_probe(name, fn, label, q, k, v, mask, out, weights) or _described(
            weights, want_w, lead + ("query", "key"))
        raise ExerciseError(f"Your {name} is not right yet {label}: {found}\nHint: {hint}")
    # Gradients, on the multi-head case with a padding mask (the numbers are right by now).
    from ..attention import scaled_dot_product_attention as reference

    label, q, k, v, mask, _ = _attention_cases()[2]
    _check_gradients(name, label, lambda q, k, v: _invoke(name, label, fn, q, k, v, mask),
                     lambda q, k, v: reference(q, k, v, mask), {"q": q, "k": k, "v": v})
