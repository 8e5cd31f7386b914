"""Checker of ``online_softmax_attention`` (notebook 09): attention over blocks of keys, exact to full softmax.

The learner's output is compared with full attention (``scaled_dot_product_attention(q, k, v, mask)[0]``)
on batched multi-head and 3-D inputs, block sizes that divide ``L_k`` and that do not, a block larger
than ``L_k`` and a block of one key, padding masks (at the end, and at the start so that a row's first
block is all masked), a random mask with a whole block masked and fully masked rows (which must give
zeros, as the package's attention does), scores large enough to overflow ``exp`` in float32 and scores
all far below zero, tiny inputs, float64, the gradients, and last float16 (compared loosely; skipped
where this torch lacks float16 attention on the CPU), where a constant beyond its range (``-1e30``,
``torch.finfo(torch.float32).min``) is -inf or cannot be stored. Where the numbers differ, the usual
slips are recomputed on the same inputs and named: no rescale of the running sum or of the output when
the maximum grows, the maximum not carried across blocks, ``exp(-inf - -inf)`` on a masked block, 0 / 0
on a fully masked row, a division per block, the scale forgotten or applied at every block, the last
short block skipped or padded with unmasked zero keys, the mask added or multiplied, ... A probe names
the rest: the first block's share lost (a rescale after the add), the divisor alone wrong (the output
right up to one factor per row), weights that do not add up to 1 (v all ones), ``torch.chunk``.

**Block by block, really.** The numbers alone cannot tell an online softmax from full attention, so
while the learner's function runs, the checker records every torch call it makes, with the shapes
that come back, through a ``torch.overrides.TorchFunctionMode``. That mode sees every function of
torch and every tensor method, however the code is written: ``@`` (``Tensor.__matmul__``),
``torch.matmul``, ``einsum``, ``bmm``, ``baddbmm``, ``F.linear``, ``F.scaled_dot_product_attention``,
elementwise products, and the per-sample calls inside ``torch.vmap``. (Wrapping a few torch
functions would miss ``@`` and methods; a ``TorchDispatchMode`` would see the same operations one
level lower, but its first use imports ``torch._dynamo``, about two seconds per grading process.)
Sizes are chosen so that ``L_q``, ``L_k``, ``d_k`` and ``d_v`` all differ. With ``L_k > block_size``
the check fails when

* ``scaled_dot_product_attention`` (torch's or the package's) receives more than ``block_size`` keys,
* a matmul produces scores for more than ``block_size`` keys (an output whose key axis, the one that
  is neither ``d_k``, ``d_v`` nor ``L_q``, is longer than ``block_size``), or
* any call returns a floating-point tensor holding both a query axis ``L_q`` and a key axis ``L_k``:
  the whole score matrix, or a float copy of a full mask (a bool mask may be used whole; slicing it
  per block is enough).

A two-pass algorithm (block maxima first, then the sums) stays block by block and is accepted.
"""

from __future__ import annotations

import contextlib
import functools
import math

import torch
from torch.overrides import TorchFunctionMode

from .._validate import scores_shape
from ._compare import (
    _check_gradients,
    _close,
    _described,
    _first_match,
    _fitted_factor,
    _random_inside,
    _shape_hint,
    probe,
)
from ._run import (
    ExerciseError,
    _check_unchanged,
    _checker,
    _expect_tensor,
    _gen,
    _invoke,
    _NotAttempted,
    _randn,
    _shape,
    _snapshot,
)
from .registry import exercise

# ----------------------------------------------------------------------------------------------
# The online softmax and its usual slips, computed in the inputs' dtype (overflows included)


def _online(q, k, v, mask, block, *, scale=True, rescale_sum=True, rescale_acc=True, max_mode="running",
            guard_blocks=True, guard_rows=True, fill="-inf", divide="end", skip_last=False, inverted=False,
            rescale_sign=1.0, p_from="new", mask_after=False, mask_mode="fill", scale_each_block=False,
            pad_zeros=False):
    """Attention over key blocks with a running max and sum; the keywords switch on one slip each."""
    shape = scores_shape(q, k)
    if mask is not None:
        mask = torch.broadcast_to(mask, shape)
        mask = ~mask if inverted else mask
    if pad_zeros and k.shape[-2] % block:  # zero keys and values to a multiple of block, not masked
        extra = block - k.shape[-2] % block
        k = torch.cat([k, k.new_zeros((*k.shape[:-2], extra, k.shape[-1]))], dim=-2)
        v = torch.cat([v, v.new_zeros((*v.shape[:-2], extra, v.shape[-1]))], dim=-2)
        if mask is not None:
            mask = torch.cat([mask, mask.new_ones((*mask.shape[:-1], extra))], dim=-1)
        shape = (*shape[:-1], k.shape[-2])
    if scale and not scale_each_block:
        q = q / math.sqrt(q.shape[-1])
    rows = (*shape[:-1], 1)
    m = q.new_zeros(rows) if max_mode == "zero" else q.new_full(rows, float("-inf"))
    s = q.new_zeros(rows)
    acc = q.new_zeros((*shape[:-1], v.shape[-1]))
    length = k.shape[-2]
    starts = range(0, length - length % block if skip_last else length, block)
    for start in starts:
        keys = slice(start, start + block)
        if scale_each_block:  # q = q / sqrt(d_k) inside the loop: once more at every block
            q = q / math.sqrt(q.shape[-1])
        scores = q @ k[..., keys, :].transpose(-2, -1)
        if mask is not None and mask_mode == "add":  # True as 1, False as 0: the masked keys keep their scores
            scores = scores + mask[..., keys].to(scores.dtype)
        elif mask is not None and mask_mode == "mul":  # the masked scores become 0
            scores = scores * mask[..., keys]
        elif mask is not None and not mask_after:
            scores = scores.masked_fill(~mask[..., keys], float("-inf") if fill == "-inf" else -1e9)
        if divide in ("block_mean", "block_sum"):  # each block's own softmax, the results added up
            acc = acc + torch.nan_to_num(torch.softmax(scores, dim=-1)) @ v[..., keys, :]
            continue
        block_max = scores.amax(dim=-1, keepdim=True)
        m_new = block_max if max_mode == "block" else torch.maximum(m, block_max)
        base = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new) if guard_blocks else m_new
        rescale = torch.exp(rescale_sign * (m - base))
        # p_from="old": measured from the max before this block (the first block: from its own max)
        p = torch.exp(scores - (torch.where(torch.isinf(m), base, m) if p_from == "old" else base))
        if mask is not None and mask_after:  # the masked keys zeroed after the exponential, yet in the max
            p = p * mask[..., keys]
        s_new = (s * rescale if rescale_sum else s) + p.sum(dim=-1, keepdim=True)
        acc = (acc * rescale if rescale_acc else acc) + p @ v[..., keys, :]
        if divide == "running":  # divided by the running sum at every block, never multiplied back
            acc = acc / s_new
        s, m = s_new, m_new
    if divide == "block_mean":
        return {"out": acc / max(len(starts), 1)}
    if divide in ("block_sum", "running"):
        return {"out": acc}
    if guard_rows:
        return {"out": torch.where(s > 0, acc / s.clamp(min=torch.finfo(s.dtype).tiny), torch.zeros_like(acc))}
    return {"out": acc / s}


def _variants(*slips, **slip):
    """The online softmax with the slips ``slip`` switched on, or with each set of ``slips`` in turn."""
    if slips:
        return lambda q, k, v, m, b: [_online(q, k, v, m, b, **one) for one in slips]
    return lambda q, k, v, m, b: _online(q, k, v, m, b, **slip)


_ONLINE_MISTAKES = [
    ("the running sum is not rescaled when the maximum grows: when a block raises the max from m_old to "
     "m_new, every exp(score - m_old) already added must be multiplied by exp(m_old - m_new), so "
     "s = s * exp(m_old - m_new) + exp(scores - m_new).sum(-1).",
     _variants(rescale_sum=False)),
    ("the output accumulator is not rescaled when the maximum grows: the weighted sum of values "
     "gathered so far was measured from the old max, so multiply it by exp(m_old - m_new) too before "
     "adding the new block: acc = acc * exp(m_old - m_new) + exp(scores - m_new) @ v_block.",
     _variants(rescale_acc=False)),
    ("neither the running sum nor the output accumulator is rescaled when the maximum grows: both were "
     "measured from the old max, so multiply both by exp(m_old - m_new) before adding the new block (compute "
     "that factor before you overwrite m).",
     _variants(rescale_sum=False, rescale_acc=False)),
    ("each new block's exp(scores - m) is measured from the max before that block, while what was added before is "
     "rescaled to the new max: the two no longer share a base. Update the max first, m_new = max(m_old, block "
     "max), then p = exp(scores - m_new), s = s * exp(m_old - m_new) + p.sum(-1) and acc likewise.",
     _variants(p_from="old")),
    ("the mask is applied after the exponential (p * mask), so the masked keys still count in the running max: "
     "where they score far above the real ones, every real exp(score - m) underflows to 0. Fill the masked scores "
     "with -inf before taking the max: scores.masked_fill(~mask_block, float('-inf')).",
     _variants(mask_after=True)),
    ("each block is measured from its own maximum and the blocks' sums are added as they are: a running "
     "max must be carried across blocks, m_new = max(m_old, block max), and what was added before rescaled "
     "by exp(m_old - m_new).",
     _variants(max_mode="block", rescale_sum=False, rescale_acc=False)),
    ("the maximum is not carried across blocks: each block starts from its own max, so when a later block's "
     "max is lower the factor exp(m_old - m_new) overflows to inf (float32 overflows beyond exp(88)) and gives "
     "NaN. Keep the running max: m_new = torch.maximum(m_old, block max).",
     _variants(max_mode="block")),
    ("a block whose keys are all masked gives NaN: its max is -inf, and exp(-inf - -inf) = exp(nan). While a "
     "row has seen only masked keys, measure from 0 instead: base = torch.where(torch.isinf(m_new), 0, m_new).",
     _variants({"guard_blocks": False}, {"guard_blocks": False, "guard_rows": False})),
    ("a fully masked row gives NaN (0 / 0: its running sum stays 0). The package's attention returns zeros "
     "there: make the division safe and zero those rows, acc / torch.where(s > 0, s, 1) * (s > 0) (a "
     "torch.where(s > 0, acc / s, 0) gives the right values but a NaN gradient).",
     _variants(guard_rows=False)),
    ("a fully masked row gives the mean of v: with a finite fill such as -1e9 every masked key is equally "
     "likely. Fill with float('-inf') (and guard the blocks and rows), or set the rows with no key to zero, "
     "as the package's attention does.",
     _variants(fill="finite")),
    ("each block is normalised on its own (a softmax per block) and the results averaged or added: the "
     "softmax runs over all keys, so keep the unnormalised sums (running sum and accumulator) across blocks "
     "and divide once, at the end: out = acc / s.",
     _variants({"divide": "block_mean"}, {"divide": "block_sum"})),
    ("the accumulator is divided by the running sum at every block, and the earlier blocks' share is never "
     "multiplied back: keep acc unnormalised and divide once at the end (or multiply the old output by "
     "s_old * rescale / s_new before adding the new block's p @ v / s_new).",
     _variants(divide="running")),
    ("the scores are not scaled: divide q @ k^T by sqrt(d_k) (or scale q once before the loop).",
     _variants(scale=False)),
    ("the mask is inverted: True means 'may attend', so fill the scores where the mask is False "
     "(scores.masked_fill(~mask_block, float('-inf'))).",
     _variants({"inverted": True}, {"inverted": True, "guard_rows": False})),
    ("the last, shorter block of keys is skipped when block_size does not divide L_k: loop "
     "for start in range(0, L_k, block_size) and slice k[..., start:start + block_size, :], which gives "
     "the shorter last block too.",
     _variants(skip_last=True)),
    ("the rescaling factor has the wrong sign: when the max grows from m_old to m_new, what was added "
     "shrinks by exp(m_old - m_new) (at most 1), not exp(m_new - m_old).",
     _variants(rescale_sign=-1.0)),
    ("the running max starts at 0 instead of -inf: when every score of a row is far below 0, exp(score - 0) "
     "underflows to 0 and the row divides 0 by 0. Start it at float('-inf') (torch.full(..., -inf)), so the "
     "first block sets it.",
     _variants({"max_mode": "zero"}, {"max_mode": "zero", "guard_rows": False})),
    ("the mask is added to the scores (scores + mask): True counts as 1 and False as 0, so a masked key keeps its "
     "score and its weight. Fill the masked scores with -inf: scores.masked_fill(~mask_block, float('-inf')).",
     _variants(mask_mode="add")),
    ("the scores are multiplied by the mask (scores * mask): a masked score becomes 0, not -inf, so the masked key "
     "still gets exp(0 - m) of the weight. Fill them with -inf: scores.masked_fill(~mask_block, float('-inf')).",
     _variants(mask_mode="mul")),
    ("q is divided by sqrt(d_k) again at every block (q = q / sqrt(d_k) inside the loop): the first block's scores "
     "are scaled once, the second's twice, and so on. Scale once, before the loop.",
     _variants(scale_each_block=True)),
    ("the last block is padded with zero keys (and zero values) that are not masked: a zero key scores 0 and takes "
     "its share of the weight. Slice the last block shorter, k[..., start:start + block_size, :] does it by itself, "
     "or mask the keys you pad.",
     _variants(pad_zeros=True)),
]


# ----------------------------------------------------------------------------------------------
# Is it block by block? What the learner's code computes, recorded at the dispatcher


_MATMULS = {"matmul", "__matmul__", "__rmatmul__", "mm", "bmm", "addmm", "baddbmm", "addbmm", "einsum",
            "linear", "tensordot", "inner", "dot", "mv"}


class _Recorder(TorchFunctionMode):
    """Every torch call's name, its floating outputs' shapes and its tensor arguments' shapes.

    When the learner's code runs in another process (the grader), that process records and sends the list.
    """

    records_learner_ops = True

    def __init__(self):
        super().__init__()
        self.ops: list[tuple[str, list, list]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        outs = out if isinstance(out, (tuple, list)) else (out,)
        shapes = [tuple(o.shape) for o in outs if isinstance(o, torch.Tensor) and o.is_floating_point()]
        inputs = [tuple(a.shape) for a in args if isinstance(a, torch.Tensor)]
        self.ops.append((getattr(func, "__name__", ""), shapes, inputs))
        return out


def _not_blockwise(ops, l_q: int, l_k: int, d_k: int, d_v: int, block: int) -> str:
    """Why the recorded operations are not block by block ("" when they are)."""
    features = {d_k, d_v}
    for op, outs, inputs in ops:
        if "scaled_dot_product" in op and len(inputs) > 1 and len(inputs[1]) >= 2 and inputs[1][-2] > block:
            return (f"it calls {op} on {inputs[1][-2]} keys at once, which takes the softmax over all of them "
                    "in one go")
        for shape in outs:
            if len(shape) < 2:
                continue
            if op in _MATMULS:
                a, b = shape[-2], shape[-1]
                keys = b if b not in features | {l_q} else (a if b == l_q and a not in features else 0)
                if keys > block:
                    return (f"it computes scores for {keys} keys at once (a matmul giving {shape}), more than "
                            f"block_size={block}")
            tail = shape[-3:]
            if l_q in tail and l_k in tail and l_q != l_k:
                return (f"it holds a {shape} tensor of floats, as large as the whole score matrix "
                        f"(..., L_q={l_q}, L_k={l_k}) (the scores, or a float copy of the whole mask)")
    return ""


# ----------------------------------------------------------------------------------------------
# The inputs


def _online_cases():
    """(label, q, k, v, mask, block_size), the first ones catching the most."""
    g = _gen(9)
    b, h, l_q, l_k, d_k, d_v = 2, 3, 5, 11, 6, 7

    def qkv(*lead, scale=1.0, lq=l_q, lk=l_k):
        return (_randn(g, *lead, lq, d_k, scale=scale), _randn(g, *lead, lk, d_k, scale=scale),
                _randn(g, *lead, lk, d_v))

    shapes = "q (2, 3, 5, 6), k (2, 3, 11, 6), v (2, 3, 11, 7)"
    cases = [(f"on {shapes}, block_size=4 (11 keys: blocks of 4, 4 and 3), no mask", *qkv(b, h), None, 4),
             ("on 3-D inputs q (2, 5, 6), k (2, 9, 6), v (2, 9, 7), block_size=3 (divides 9), no mask",
              *qkv(b, lq=5, lk=9), None, 3)]
    q, k, v = qkv(b, h)
    end = torch.ones(b, 1, 1, l_k, dtype=torch.bool)
    end[1, ..., 7:] = False
    cases.append((f"on {shapes} with a padding mask (2, 1, 1, 11), the second sequence padded at the end, "
                  "block_size=4", q, k, v, end, 4))
    start = torch.ones(b, 1, 1, l_k, dtype=torch.bool)
    start[0, ..., :5] = False  # the whole first block (and one more key) masked
    cases.append((f"on {shapes} with a padding mask (2, 1, 1, 11) that masks the first 5 keys of the first "
                  "sequence (its whole first block), block_size=4", q, k, v, start, 4))
    rnd = torch.rand(b, h, l_q, l_k, generator=g) > 0.4
    rnd[..., 4:8] = False  # a whole middle block masked for every row
    rnd[0, 0, 1] = False  # a fully masked row: zeros, as the package's attention gives
    rnd[1, 2, 3] = False
    cases.append((f"on {shapes} with a (2, 3, 5, 11) mask: a whole block (keys 4 to 7) masked, and two query "
                  "rows with every key masked (they must give zeros, as the package's attention does), "
                  "block_size=4", q, k, v, rnd, 4))
    q, k, v = qkv(b, h, scale=10.0)
    k[..., :4, :] *= 3.0  # a first block with larger scores than the later ones: maxima fall from block to block
    k[..., 4:, :] *= 0.3
    cases.append((f"with large scores (q, k about 10: scores in the hundreds, the first block's the largest), "
                  f"{shapes}, a padding mask (2, 1, 1, 11), block_size=4", q, k, v, end, 4))
    q = _randn(g, b, h, l_q, d_k).abs() * 8.0 + 2.0
    k = -(_randn(g, b, h, l_k, d_k).abs() * 8.0 + 2.0)
    cases.append((f"with every score far below zero (about -100 and less), {shapes}, block_size=4",
                  q, k, _randn(g, b, h, l_k, d_v), None, 4))
    cases.append((f"with tiny inputs (about 1e-3), {shapes}, a padding mask (2, 1, 1, 11), block_size=4",
                  *(t * 1e-3 for t in qkv(b, h)), end, 4))
    cases.append(("as self-attention with a causal mask (7, 7), q, k (1, 1, 7, 6), v (1, 1, 7, 7), block_size=3",
                  *qkv(1, 1, lq=7, lk=7), torch.ones(7, 7, dtype=torch.bool).tril(), 3))
    q, k, v = qkv(b, h)
    cases.append((f"on {shapes} with block_size=1 (one key at a time) and a padding mask (2, 1, 1, 11)",
                  q, k, v, end, 1))
    cases.append((f"on {shapes} with block_size=16 (one block holds every key), no mask", q, k, v, None, 16))
    cases.append((f"on float64 inputs {shapes} with a padding mask (2, 1, 1, 11), block_size=4",
                  *(t.double() for t in qkv(b, h)), end, 4))
    q, k, v = qkv(b, h)
    q = q.abs() + 1.0
    k[1, :, 7:] = k[1, :, 7:].abs() * 30.0 + 30.0  # the padded keys would score in the hundreds
    cases.append((f"on {shapes} with a padding mask (2, 1, 1, 11) whose masked keys would score far above the "
                  "real ones (hundreds against a few), block_size=4", q, k, v, end, 4))
    return cases


def _half_case():
    """(label, q, k, v, mask, block_size) in float16, with masked first blocks and fully masked rows."""
    g = _gen(19)
    q, k, v = (_randn(g, 2, 3, *shape).half() for shape in ((5, 6), (11, 6), (11, 7)))
    mask = torch.ones(2, 3, 5, 11, dtype=torch.bool)
    mask[0, ..., :5] = False  # the first sequence's whole first block (and one more key) masked
    mask[1, ..., 4:8] = False  # a middle block masked
    mask[1, 1, 2] = False  # a query row with every key masked
    return ("on float16 inputs q (2, 3, 5, 6), k (2, 3, 11, 6), v (2, 3, 11, 7) with a (2, 3, 5, 11) mask: the first "
            "sequence's first block masked, a middle block masked in the second, and one query row with every key "
            "masked, block_size=4", q, k, v, mask, 4)


@functools.cache
def _half_works() -> bool:
    """Whether this torch computes attention in float16 on the CPU (older versions lack some of it)."""
    try:
        x = torch.ones(2, 1, 3, 4, dtype=torch.float16)
        scores = (x @ x.transpose(-2, -1)).masked_fill(torch.eye(3, dtype=torch.bool), float("-inf"))
        m = torch.maximum(scores.amax(-1, keepdim=True), torch.full((2, 1, 3, 1), float("-inf"), dtype=x.dtype))
        p = torch.exp(scores - torch.where(torch.isinf(m), torch.zeros_like(m), m))
        torch.softmax(scores, -1) @ x + torch.logsumexp(scores, -1, keepdim=True) + (p @ x) / p.sum(-1, keepdim=True)
        return True
    except (RuntimeError, NotImplementedError):
        return False


def _check_half(name, fn):
    """float16, where a constant beyond its range (+-65504) is +-inf: compared loosely (float16 keeps ~3 digits)."""
    if not _half_works():
        return
    label, q, k, v, mask, block = _half_case()
    try:
        got = _call(name, fn, label, q, k, v, mask, block)
    except _NotAttempted as exc:
        if "Half" in str(exc):  # an operation this torch lacks in float16 on the CPU: not the learner's doing
            return
        raise
    except ExerciseError as exc:
        if isinstance(exc.__cause__, RuntimeError) and "without overflow" in str(exc.__cause__):
            raise ExerciseError(
                f"Your {name} raised RuntimeError {label}: {exc.__cause__}\nHint: a constant beyond float16's range "
                "(+-65504), such as -1e30, -1e9 or torch.finfo(torch.float32).min, cannot be stored in float16. "
                "Start m at float('-inf') (and measure from 0 while a row has seen only masked keys), fill the "
                "masked scores with float('-inf'), or take any big constant from torch.finfo(q.dtype)."
            ) from exc.__cause__
        raise
    got = _expect_tensor(name, got, label, "the output tensor")
    want = _reference(q.double(), k.double(), v.double(), mask).to(q.dtype)
    if got.shape != want.shape or got.dtype != want.dtype:
        raise ExerciseError(f"Your {name} returned {_shape(got)} {got.dtype} {label}, but it should be "
                            f"{_shape(want)} {want.dtype}, like the inputs (keep q's dtype).")
    if _close(got, want, factor=100.0):
        return
    if not torch.isfinite(got).all():
        single = _invoke(name, f"{label}, the same numbers in float32", fn, q.float(), k.float(), v.float(), mask,
                         block_size=block)
        if isinstance(single, torch.Tensor) and single.shape == want.shape and torch.isfinite(single).all() \
                and _close(single, _reference(q.double(), k.double(), v.double(), mask).float(), factor=10.0):
            raise ExerciseError(
                f"Your {name} returned NaN or infinite values {label}, and on the same numbers in float32 it is "
                "right: a constant beyond float16's range (+-65504), such as -1e30, -1e9 or "
                "torch.finfo(torch.float32).min, is -inf in float16, and exp(-inf - -inf) is NaN.\nHint: start m at "
                "float('-inf') and measure from 0 while a row has seen only masked keys, base = "
                "torch.where(torch.isinf(m_new), 0, m_new) (or take any big constant from torch.finfo(q.dtype)).")
        raise ExerciseError(f"Your {name} returned NaN or infinite values {label}.\nHint: subtract the running max "
                            "before exp(), and keep every constant within float16's range (torch.finfo(q.dtype)).")
    raise ExerciseError(
        f"Your {name} does not match full softmax attention {label}, even allowing for float16's rounding: "
        f"{_described(got, want, ('sequence', 'head', 'query', 'feature'), 100.0)}")


def _reference(q, k, v, mask):
    from ..attention import scaled_dot_product_attention

    return scaled_dot_product_attention(q, k, v, mask)[0]


def _fitted_scores_scale(got, q, k, v, mask) -> float | None:
    """The factor c for which ``got`` is softmax(q k^T * c) v, if one fits (searched on a log grid)."""
    def error(c: float) -> float:
        return float((_reference(q * (c * math.sqrt(q.shape[-1])), k, v, mask) - got).abs().max())

    return _fitted_factor(error, -3, 1, 1e-4 * float(got.abs().max()) + 1e-6)


def _ignored_keys(name, fn, label, q, k, v, mask, block) -> str:
    """Which keys the output does not depend on although full attention does ("" when none)."""
    want = _reference(q, k, v, mask)
    got = _invoke(name, label, fn, q, k, v, mask, block_size=block)
    ignored = []
    for key in range(k.shape[-2]):
        moved = v.clone()
        moved[..., key, :] += 1.0
        if _close(_reference(q, k, moved, mask), want):
            continue  # masked everywhere, or a weight that underflows: the reference does not see it either
        out = _invoke(name, f"{label}, with the values of key {key} moved", fn, q, k, moved, mask, block_size=block)
        if isinstance(out, torch.Tensor) and out.shape == want.shape and torch.isfinite(out).all() \
                and isinstance(got, torch.Tensor) and torch.equal(out, got):
            ignored.append(key)
    if not ignored:
        return ""
    length = k.shape[-2]
    full = {start + block - 1 for start in range(0, length - block + 1, block)}  # the last key of each full block
    ends = full | {length - 1}
    where = f"key{'s' if len(ignored) > 1 else ''} {', '.join(map(str, ignored))} of {length}"
    if block < length and ignored == list(range(block)):
        return (f"your output does not depend on {where}, exactly the first block's keys (block_size={block}): its "
                "share is multiplied by 0 later. The factor exp(m - m_new) is 0 at the first block (m starts at "
                "-inf), so it must multiply only what was summed before the block, acc * exp(m - m_new) + "
                "p @ v_block (not (acc + p @ v_block) * exp(m - m_new)), and each block uses its own factor, not "
                "the previous block's.")
    if ignored == [length - 1] and length % block != 1:
        return (f"your output does not depend on {where}, the last key: a slice end of L_k - 1 (or min(start + "
                "block_size, L_k - 1)) leaves it out, since a Python slice stops before its end. Stop at "
                "min(start + block_size, L_k), or just start + block_size.")
    if full and full <= set(ignored) <= ends:
        return (f"your output does not depend on {where}, the last key of each full block (block_size={block}): the "
                "slice stops one key early. A Python slice leaves out its end, so k[..., start:start + block_size, "
                ":] already holds block_size keys (the same for v and the mask; no - 1).")
    return (f"your output does not depend on {where}, although full attention weighs every unmasked key: check "
            "the loop over the blocks, for start in range(0, L_k, block_size), and the slices of k, v and the "
            "mask, [start:start + block_size].")


@probe
def _probe(name, fn, label, q, k, v, mask, block) -> str:
    """Vary one thing at a time (one block, blocks of one key, small scores) and name what goes wrong."""
    d_k, l_k = q.shape[-1], k.shape[-2]
    want = _reference(q, k, v, mask)

    def run(q_, block_, what):
        out = _invoke(name, f"{label}, {what}", fn, q_, k, v, mask, block_size=block_)
        return out if isinstance(out, torch.Tensor) and out.shape == want.shape else None

    ignored = _ignored_keys(name, fn, label, q, k, v, mask, block)
    if ignored:
        return ignored
    whole = run(q, l_k, f"with block_size={l_k}, one block")
    if whole is not None and torch.isfinite(whole).all() and not _close(whole, want):
        c = _fitted_scores_scale(whole, q, k, v, mask)
        scale = "" if c is None else (
            f" Your scores are q k^T x {c:.4g}, where the scale is 1/sqrt(d_k) = {1 / math.sqrt(d_k):.4g}"
            + (": divided by d_k, the scale applied twice (once to q, once to the scores)?"
               if abs(c * d_k - 1) < 0.02 else
               ", times ln 2 = 0.6931: torch.exp2 computes 2^x, so with exp2 the scores need a factor log2(e) = "
               "1.4427 first (or use torch.exp)." if abs(c * math.sqrt(d_k) / math.log(2) - 1) < 1e-3 else "."))
        return (f"even with block_size={l_k} (one block: an ordinary softmax) your output is wrong, so the mistake "
                "is in the attention itself (the scale, the mask, the softmax), not in how blocks are combined."
                + scale)
    small = q * 0.05
    few = run(small, block, "with small scores (q times 0.05)")
    if few is not None and _close(few, _reference(small, k, v, mask)) and whole is not None \
            and not torch.isfinite(whole).all():
        return ("it is right when the scores are small and gives NaN or inf when they are large, even in one block: "
                "exp() of a score in the hundreds overflows. Subtract the running max before exp(), "
                "exp(scores - m_new), and rescale what you have summed so far by exp(m - m_new).")
    ones = run(q, 1, "with block_size=1")
    if whole is not None and ones is not None and _close(whole, want) and not _close(ones, want):
        combined = _combined_probe(name, fn, label, q, k, v, mask, block, ones)
        if combined:
            return combined
        return ("it is right with one block (block_size = L_k) and wrong with blocks of one key: the blocks are "
                "combined wrongly. When a block raises the max, what was summed before must be rescaled by "
                "exp(m - m_new), both the running sum s and the accumulator acc.")
    return ""


def _combined_probe(name, fn, label, q, k, v, mask, block, ones) -> str:
    """Blocks combined wrongly (``ones``: the output with block_size=1): is it the divisor alone (the output right
    up to one factor per query row), or do the weights not add up to 1 (v all ones does not give ones)?"""
    want = _reference(q, k, v, mask)
    norm = (want * want).sum(dim=-1, keepdim=True)  # (..., L_q, 1)
    factor = torch.where(norm > 0, (ones * want).sum(dim=-1, keepdim=True) / norm.clamp(min=1e-30), 1.0)
    if torch.isfinite(ones).all() and _close(ones, factor * want) and float((factor - 1).abs().max()) > 1e-3:
        far = float(factor.flatten()[int((factor - 1).abs().argmax())])
        return ("with blocks of one key your output is the right one times a factor that changes from query row "
                f"to query row (up to x{far:.4g}): the weighted sum of the values is right, what you divide it by is "
                "not. In the running-sum form, update s as acc is updated, with the same factor: s = s * exp(m - "
                "m_new) + exp(scores - m_new).sum(-1), once per block; in a logsumexp merge, lse_new = "
                "torch.logaddexp(lse_old, lse_block), not the larger of the two.")
    flat = torch.ones_like(v)
    out = _invoke(name, f"{label}, with block_size=1 and v all ones", fn, q, k, flat, mask, block_size=1)
    ref = _reference(q, k, flat, mask)  # ones (zeros on rows with no key)
    if isinstance(out, torch.Tensor) and out.shape == ref.shape and torch.isfinite(out).all() \
            and not _close(out, ref):
        rows = ref[..., 0] > 0
        return ("with blocks of one key and v all ones your output should be all ones (a weighted average of ones), "
                f"and yours ranges from {float(out[rows].min()):.4g} to {float(out[rows].max()):.4g}: the blocks' "
                "weights do not add up to 1. In the running-sum form, rescale acc and s by the same factor, this "
                "block's exp(m - m_new), before adding the block's p @ v_block and p.sum(-1); in a logsumexp "
                "merge, weigh the old output by exp(lse_old - lse_new) and the block's by exp(lse_block - lse_new), "
                "with lse_new = torch.logaddexp(lse_old, lse_block).")
    return ""


def _most_keys(ops, l_q: int, d_k: int, d_v: int) -> int:
    """The most keys any recorded matmul scored at once."""
    features, most = {d_k, d_v}, 0
    for op, outs, _ in ops:
        for shape in outs:
            if op in _MATMULS and len(shape) >= 2:
                a, b = shape[-2], shape[-1]
                most = max(most, b if b not in features | {l_q} else (a if b == l_q and a not in features else 0))
    return most


@probe
def _chunk_probe(name, fn, label, q, k, v, mask, block, keys) -> str:
    """Scores for ``keys`` = ceil(L_k / block) keys at once: are the keys cut into block_size pieces (torch.chunk)?
    Run again with another block size b: such code then scores ceil(L_k / b) keys at once, more than b."""
    l_k, l_q, d_k, d_v = k.shape[-2], q.shape[-2], q.shape[-1], v.shape[-1]
    other = next((b for b in (3, 2, 4, 5) if b != block and math.ceil(l_k / b) > b
                  and math.ceil(l_k / b) not in (l_q, d_k, d_v)), None)  # (a count the recorder can tell apart)
    if keys != math.ceil(l_k / block) or other is None:
        return ""
    recorder = _Recorder()
    with recorder:
        _invoke(name, f"{label}, with block_size={other}", fn, q, k, v, mask, block_size=other)
    if _most_keys(recorder.ops, l_q, d_k, d_v) != math.ceil(l_k / other):
        return ""
    return (f"it cuts the keys into block_size pieces, not into pieces of block_size keys: with block_size={block} "
            f"it scores {keys} keys at once, with block_size={other} it scores {math.ceil(l_k / other)}. "
            "torch.chunk(k, n, dim=-2) makes n chunks; k.split(block_size, dim=-2) makes chunks of block_size keys "
            "(the last one shorter)")


def _call(name, fn, label, q, k, v, mask, block, recorder=None):
    """The learner's output, its inputs checked unchanged (``recorder``, when given, hears its torch calls)."""
    inputs = {"q": q, "k": k, "v": v, "mask": mask}  # (a mask of None is not a tensor to check)
    before = _snapshot(inputs)
    with recorder if recorder is not None else contextlib.nullcontext():
        got = _invoke(name, label, fn, q, k, v, mask, block_size=block)
    _check_unchanged(name, before, inputs)
    return got


@_checker("online_softmax_attention")
def check_online_softmax_attention(fn):
    """Check ``online_softmax_attention(q, k, v, mask=None, block_size=4) -> out`` (keys a block at a time)."""
    name = exercise("online_softmax_attention").name
    cases = _online_cases()
    for label, q, k, v, mask, block in cases:
        recorder = _Recorder()
        got = _call(name, fn, label, q, k, v, mask, block, recorder if k.shape[-2] > block else None)
        if isinstance(got, (tuple, list)) and len(got) == 2 and isinstance(got[0], torch.Tensor):
            raise ExerciseError(
                f"Your {name} returned two tensors {label}; it returns only the output (..., L_q, d_v): an "
                "online softmax never holds the whole weight matrix, so there are no weights to return."
            )
        got = _expect_tensor(name, got, label, "the output tensor")
        want = _reference(q, k, v, mask)
        if got.shape != want.shape:
            hint = _shape_hint(got.shape, want.shape, mask is not None)
            if got.shape[-1] == q.shape[-1] != v.shape[-1]:
                hint = "the output's last dimension comes from v (d_v): acc gathers p @ v_block."
            raise ExerciseError(f"Your {name} returned shape {_shape(got)} {label}, but it should be "
                                f"(..., L_q, d_v) = {_shape(want)}." + (f"\nHint: {hint}" if hint else ""))
        if got.dtype != want.dtype:
            raise ExerciseError(f"Your {name} returned dtype {got.dtype} {label}, but the inputs are "
                                f"{want.dtype}. Keep the inputs' dtype (no .float() or .double() inside; "
                                "torch.full(..., dtype=q.dtype) or q.new_full(...) for the running max).")
        why = _not_blockwise(recorder.ops, q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1], block)
        if why:
            why = _chunk_probe(name, fn, label, q, k, v, mask, block,
                               _most_keys(recorder.ops, q.shape[-2], q.shape[-1], v.shape[-1])) or why
            raise ExerciseError(
                f"Your {name} does not work block by block {label}: {why}. An online softmax holds the scores of "
                "one block of block_size keys at a time, never more.\nHint: loop over the keys, for start in "
                "range(0, L_k, block_size): score only k[..., start:start + block_size, :], fold that block "
                "into the running max, the running sum and the output, then move on (slice a mask the same "
                "way, mask[..., start:start + block_size], keeping it bool)."
            )
        if _close(got, want):
            continue
        randomness = _random_inside(functools.partial(_call, name, fn, label, q, k, v, mask, block), got)
        if randomness:
            raise ExerciseError(f"Your {name} is random {label}: {randomness}.\nHint: nothing in it is "
                                "random: no dropout, no torch.manual_seed.")
        # NaN in the output matches several listed slips alike: then the probe, which varies one thing, speaks first.
        named = functools.partial(_first_match, {"out": got}, _ONLINE_MISTAKES, q, k, v, mask, block)
        probed = functools.partial(_probe, name, fn, label, q, k, v, mask, block)
        finite = bool(torch.isfinite(got).all())
        mistake = named() if finite else (probed() or named())
        if not mistake and finite:
            empty = None if mask is None else ~torch.broadcast_to(mask, scores_shape(q, k)).any(dim=-1)  # no key
            if empty is not None and empty.any() and _close(got[~empty], want[~empty]) \
                    and not _close(got[empty], want[empty]):
                raise ExerciseError(
                    f"Your {name} is not right yet {label}: it is right on every row except the rows whose keys are "
                    "all masked, which must be zeros (as the package's attention gives; there is nothing to "
                    "attend to), and yours are not.\nHint: such a row's running sum stays 0: divide safely and "
                    "zero those rows, acc / torch.where(s > 0, s, 1) * (s > 0).")
            mistake = probed()
        if mistake:
            raise ExerciseError(f"Your {name} is not right yet {label}: {mistake}")
        if torch.isnan(got).any() or torch.isinf(got).any():
            raise ExerciseError(
                f"Your {name} returned NaN or infinite values {label}.\nHint: subtract the running max before "
                "exp() (m starts at -inf, grows with each block), measure a block from 0 while the row has seen "
                "only masked keys (exp(-inf - -inf) is NaN), and give rows with no key zeros instead of 0 / 0."
            )
        raise ExerciseError(
            f"Your {name} does not match full softmax attention {label}: "
            f"{_described(got, want, ('sequence',) * (got.dim() - 2) + ('query', 'feature'))}\nHint: per "
            "block: scores = q @ k_block^T / sqrt(d_k) (masked with -inf); m_new = max(m, scores.max(-1)); "
            "rescale = exp(m - m_new); s = s * rescale + exp(scores - m_new).sum(-1); acc = acc * rescale + "
            "exp(scores - m_new) @ v_block; m = m_new. At the end, out = acc / s."
        )
    # Gradients with a padding mask, then through the fully masked rows (a NaN there is a named mistake).
    for label, q, k, v, mask, block in (cases[2], next(c for c in cases if "every key masked" in c[0])):
        _check_gradients(name, label, functools.partial(_call, name, fn, label, mask=mask, block=block),
                         functools.partial(_reference, mask=mask), {"q": q, "k": k, "v": v})
    _check_half(name, fn)
