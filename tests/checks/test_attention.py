"""The checker of ``scaled_dot_product_attention`` (notebook 02): every wrong answer named, every right one passing."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

import encoder_course as ec
from encoder_course import checks

from .catalogue import Catalogue, from_cell, sdpa_in_place, sdpa_with
from .catalogue import sdpa as _sdpa

C_SDPA = checks.check_scaled_dot_product_attention

CATALOGUE = Catalogue(C_SDPA)
WRONG, RIGHT = CATALOGUE.wrong, CATALOGUE.right
wrong, right = CATALOGUE.add_wrong, CATALOGUE.add_right


def _flat(q, k, v, mask):
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    Lq, Lk = q.shape[-2], k.shape[-2]
    qf = q.expand(*batch, *q.shape[-2:]).reshape(-1, Lq, q.shape[-1])
    kf = k.expand(*batch, *k.shape[-2:]).reshape(-1, Lk, k.shape[-1])
    vf = v.expand(*batch, *v.shape[-2:]).reshape(-1, Lk, v.shape[-1])
    if mask is None:
        mf = torch.ones(qf.shape[0], Lq, Lk, dtype=torch.bool)
    else:
        mf = mask.expand(*batch, Lq, Lk).reshape(-1, Lq, Lk)
    return batch, qf, kf, vf, mf


# ----------------------------------------------------------------------------------------------
# Wrong answers, each to be named


def sdpa_squeezed(q, k, v, mask=None):
    """3-D inputs given a heads dimension, then .squeeze() without a dim: a batch of one loses its batch."""
    three = q.dim() == 3
    if three:
        q, k, v = q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1)
        mask = mask.unsqueeze(1) if mask is not None and mask.dim() == 3 else mask
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    out = weights @ v
    return (out.squeeze(), weights.squeeze()) if three else (out, weights)


wrong("sdpa-squeeze-batch-of-one", C_SDPA, "unsqueeze(1) for 3-D inputs, then .squeeze() without a dim",
      "a dimension of size 1 was dropped")(sdpa_squeezed)
wrong("sdpa-axis", C_SDPA, "softmax(dim=-2): over the queries",
      "softmax runs over the wrong axis")(lambda *a: sdpa_with(*a, dim=-2))
wrong("sdpa-axis-1", C_SDPA, "softmax(dim=1): over the batch or heads",
      "softmax runs over the wrong axis")(lambda *a: sdpa_with(*a, dim=1))
wrong("sdpa-no-scale", C_SDPA, "no 1/sqrt(d_k)", "the scores are not scaled")(lambda *a: sdpa_with(*a, scale="none"))
wrong("sdpa-dk", C_SDPA, "scores / d_k instead of sqrt(d_k)", "divided by d_k")(lambda *a: sdpa_with(*a, scale="d"))
wrong("sdpa-dv", C_SDPA, "scores / sqrt(d_v): the size of v", "size of v")(lambda *a: sdpa_with(*a, scale="dv"))
wrong("sdpa-inverted", C_SDPA, "masked_fill(mask, -inf): the mask inverted",
      'the mask is inverted')(lambda *a: sdpa_with(*a, mask_mode="inverted"))
wrong("sdpa-fill-zero", C_SDPA, "masked_fill(~mask, 0.0)", "exp(0)")(lambda *a: sdpa_with(*a, mask_mode="zero"))
wrong("sdpa-after", C_SDPA, "weights * mask after the softmax",
      'the mask is applied after the softmax')(lambda *a: sdpa_with(*a, mask_mode="after"))
wrong("sdpa-ignored", C_SDPA, "the mask never used",
      "the mask has no effect")(lambda *a: sdpa_with(*a, mask_mode="none"))
wrong("sdpa-single", C_SDPA, "returns out only",
      "it should return two: (out, weights)")(lambda *a: sdpa_with(*a, order="single"))
wrong("sdpa-order", C_SDPA, "returns (weights, out)",
      "the order is (out, weights)")(lambda *a: sdpa_with(*a, order="swap"))
wrong("sdpa-raw-weights", C_SDPA, "returns the scores from before the softmax as the weights",
      "raw scores")(lambda *a: sdpa_with(*a, order="raw"))
wrong("sdpa-in-place", C_SDPA, "q /= sqrt(d_k) changes the caller's q", "changed its input `q` in place")(sdpa_in_place)


@wrong("sdpa-k-T", C_SDPA, "k.T (reverses every dimension) instead of k.transpose(-2, -1)", "transpose(-2, -1)")
def sdpa_k_T(q, k, v, mask=None):
    scores = q @ k.T / math.sqrt(q.shape[-1])
    w = scores.softmax(-1)
    return w @ v, w


@wrong("sdpa-overflow", C_SDPA, "exp(scores) without subtracting the row maximum, mask as a product", "exp() overflows")
def sdpa_naive_exp(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    e = torch.exp(scores)
    if mask is not None:
        e = e * mask
    w = e / e.sum(dim=-1, keepdim=True)
    return w @ v, w


@wrong("sdpa-numpy", C_SDPA, "returns NumPy arrays", "returned a NumPy ndarray")
def sdpa_numpy(q, k, v, mask=None):
    out, w = sdpa_with(q, k, v, mask)
    return out.numpy(), w.numpy()


@wrong("sdpa-dtype", C_SDPA, "computes in float64 and returns float64 for float32 inputs",
       "returned out with dtype torch.float64")
def sdpa_double(q, k, v, mask=None):
    out, w = sdpa_with(q.double(), k.double(), v.double(), mask)
    return out, w


@wrong("sdpa-nan", C_SDPA, "out multiplied by NaN", "returned NaN values")
def sdpa_nan(q, k, v, mask=None):
    out, w = sdpa_with(q, k, v, mask)
    return out * float("nan"), w


@wrong("sdpa-shape", C_SDPA, "out averaged over the queries: shape (..., d_v)", "it should be (..., L_q, d_v)")
def sdpa_shape(q, k, v, mask=None):
    out, w = sdpa_with(q, k, v, mask)
    return out.mean(dim=-2), w


@wrong("sdpa-scale-Lk", C_SDPA, "divides by sqrt(k.size(-2)) = sqrt(L_k)",
       'number of keys')
def sdpa_scale_lk(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(k.size(-2))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-precedence", C_SDPA, "q.shape[-1] ** 1/2 (= d_k/2, operator precedence)",
       'd_k ** 1/2')
def sdpa_prec(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / (q.shape[-1] ** 1 / 2)
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-mask-transposed", C_SDPA, "mask.transpose(-2,-1): masks queries instead of keys",
       'without transposing')
def sdpa_mask_t(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask.transpose(-2, -1), float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-probe-square-mask-transposed", C_SDPA, "a square mask transposed 'to line up with the keys' (others kept)",
       "without transposing")
def sdpa_square_mask_t(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~(mask.transpose(-2, -1) if mask.shape[-1] == mask.shape[-2] else mask), float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-fill-plus-1e-9", C_SDPA, "masked_fill(~mask, 1e-9) (typo for -1e9)",
       'exp(0) = 1')
def sdpa_fill_pos(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, 1e-9)
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-mask-multiply", C_SDPA, "scores = scores * mask (masked scores become 0)",
       'exp(0) = 1')
def sdpa_mask_mul(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s * mask
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-mask-add-bool", C_SDPA, "scores = scores + mask (bool mask used as an additive mask)",
       'the bool mask is added to the scores')
def sdpa_mask_add(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s + mask
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-log-softmax", C_SDPA, "F.log_softmax instead of softmax",
       'log-probabilities (log_softmax)')
def sdpa_logsm(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = F.log_softmax(s, dim=-1)
    return w @ v, w


@wrong("sdpa-dropout-always", C_SDPA, "F.dropout(w, 0.1) (training=True by default): random output",
       'Something random is inside')
def sdpa_dropout(q, k, v, mask=None):
    out, w = _sdpa(q, k, v, mask)
    w = F.dropout(w, 0.1)
    return w @ v, w


@wrong("sdpa-weights-none", C_SDPA, "return F.scaled_dot_product_attention(...), None",
       'None as its second value')
def sdpa_none_w(q, k, v, mask=None):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask), None


@wrong("sdpa-k-transpose_", C_SDPA, "k.transpose_(-2,-1) changes the caller's k in place",
       'changed its input `k` in place')
def sdpa_kt_(q, k, v, mask=None):
    k.transpose_(-2, -1)
    s = q @ k / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-mask-unsqueeze", C_SDPA, "mask = mask.unsqueeze(1) (adds a head dim the mask already has)",
       'one dimension too many')
def sdpa_mask_unsq(q, k, v, mask=None):
    if mask is not None:
        mask = mask.unsqueeze(1)
    return _sdpa(q, k, v, mask)


@wrong("sdpa-weights-T", C_SDPA, "returns weights.transpose(-2,-1)",
       'dimensions are in the wrong order')
def sdpa_wt(q, k, v, mask=None):
    out, w = _sdpa(q, k, v, mask)
    return out, w.transpose(-2, -1)


@wrong("sdpa-scale-after-softmax", C_SDPA, "softmax(q k^T) / sqrt(d_k): scales after the softmax",
       'scaling comes after the softmax')
def sdpa_scale_after(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1)
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1) / math.sqrt(q.shape[-1])
    return w @ v, w


@wrong("sdpa-dict", C_SDPA, "returns {'out': out, 'weights': w}",
       'the pair (out, weights)')
def sdpa_dict(q, k, v, mask=None):
    out, w = _sdpa(q, k, v, mask)
    return {"out": out, "weights": w}


@wrong("sdpa-if-mask", C_SDPA, "`if mask:` on a tensor (ambiguous truth value)",
       'if mask is not None')
def sdpa_if_mask(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-mask-inplace-not", C_SDPA, "mask.logical_not_() then masked_fill(mask, -inf): result right, mask changed",
       'changed its input `mask` in place')
def sdpa_mask_inplace(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(mask.logical_not_(), float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-generator", C_SDPA, "`yield out, w` instead of return",
       '`yield`')
def sdpa_gen(q, k, v, mask=None):
    yield _sdpa(q, k, v, mask)


@wrong("sdpa-dk-shape2", C_SDPA, "d_k = q.shape[2] (right for 3-D, is L_q for 4-D)",
       'q.shape[2] is d_k only for 3-D inputs')
def sdpa_dk2(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[2])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-probe-int-sqrt", C_SDPA, "scale = math.isqrt(d_k) (integer square root: 2 for d_k=8)",
       'with c = 2, but c should be sqrt(d_k)')
def sdpa_isqrt(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.isqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-probe-sqrt-8", C_SDPA, "scores / math.sqrt(8): the d_k of notebook 02's example, written in",
       "with c = 2.828, but c should be sqrt(d_k)")
def sdpa_sqrt8(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(8)
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-bool-index-fill", C_SDPA, "scores[~mask] = -inf (boolean indexing does not broadcast)",
       'scores[~mask] does not')
def sdpa_index(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s[~mask] = float("-inf")
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-bmm", C_SDPA, "torch.bmm (3-D only) instead of @ / matmul",
       'torch.bmm works only on 3-D tensors')
def sdpa_bmm(q, k, v, mask=None):
    s = torch.bmm(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1)
    return torch.bmm(w, v), w


@wrong("sdpa-seeded-dropout", C_SDPA, "torch.manual_seed(0); F.dropout(w, 0.1): dropout that repeats itself",
       'Something random is inside')
def sdpa_seeded_dropout(q, k, v, mask=None):
    _, w = _sdpa(q, k, v, mask)
    torch.manual_seed(0)
    w = F.dropout(w, 0.1)
    return w @ v, w


@wrong("sdpa-casts-float32", C_SDPA, "q, k, v = q.float(), ...: float64 inputs come back float32 (never tested)",
       'returned out with dtype torch.float32')
def sdpa_float(q, k, v, mask=None):
    return _sdpa(q.float(), k.float(), v.float(), mask)


@wrong("sdpa-scale-Lq", C_SDPA, "divides by sqrt(q.size(-2)) = sqrt(L_q)",
       'number of queries')
def sdpa_lq(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-2))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-renormalise", C_SDPA,
       "softmax, multiply by the mask, renormalise: equal on paper, 0/0 = NaN once the kept weights underflow",
       'mask before the softmax; renormalising divides 0 by 0 when every kept weight underflows')
def sdpa_renorm(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    w = s.softmax(-1)
    if mask is not None:
        w = w * mask
        w = w / w.sum(-1, keepdim=True)
    return w @ v, w


@wrong("sdpa-unscaled-and-inverted", C_SDPA, "two mistakes: no 1/sqrt(d_k) AND masked_fill(mask, -inf)",
       'the scores are not scaled')
def sdpa_two(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1)
    if mask is not None:
        s = s.masked_fill(mask, float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-inverted-fill-zero", C_SDPA, "two mask mistakes: masked_fill(mask, 0.0) (inverted AND 0 instead of -inf)",
       'the mask is inverted and the masked scores are set to 0')
def sdpa_inv_zero(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(mask, 0.0)
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-weights-before-mask", C_SDPA,
       "returns softmax of the unmasked scores as weights; out from the masked ones",
       'from before the mask was applied')
def sdpa_w_before(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    w_unmasked = s.softmax(-1)
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    return s.softmax(-1) @ v, w_unmasked


@wrong("sdpa-fill-scores-min", C_SDPA, "masked_fill(~mask, scores.min()): masked keys keep a little weight",
       'filled with the smallest score')
def sdpa_fill_min(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float(s.min()))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-mask-view-scores", C_SDPA, "mask.view(scores.shape): assumes the mask already has the scores' shape",
       "without transposing or reshaping")
def sdpa_view(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask.view(s.shape), float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-one-minus-mask", C_SDPA, "masked_fill(1 - mask, -inf): `-` on a bool tensor raises",
       'invert a mask with ~mask')
def sdpa_1m(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(1 - mask, float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-softmax-float32", C_SDPA, "F.softmax(s, -1, dtype=torch.float32): float64 inputs then fail at w @ v",
       'different dtypes')
def sdpa_f32(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = F.softmax(s, dim=-1, dtype=torch.float32)
    return w @ v, w


@wrong("sdpa-out-from-scores", C_SDPA, "out = scores @ v (the masked scores, not the weights)",
       "out = weights @ v")
def sdpa_out_scores(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, -1e9)
    w = s.softmax(-1)
    return s @ v, w


@wrong("sdpa-squeeze", C_SDPA, "returns out.squeeze(), w.squeeze() (drops the size-1 batch of the causal case)",
       'a dimension of size 1 was dropped')
def sdpa_squeeze(q, k, v, mask=None):
    out, w = _sdpa(q, k, v, mask)
    return out.squeeze(), w.squeeze()


@wrong("sdpa-additive-not-inverted", C_SDPA, "scores + mask.float() * -1e9 (penalises the keys that may be attended)",
       'the mask is inverted')
def sdpa_add_inv(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s + mask.float() * -1e9
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-dk-from-k-shape1", C_SDPA, "d_k = k.shape[1] (L_k for 3-D inputs, the heads for 4-D)",
       'number of keys')
def sdpa_k1(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(k.shape[1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-weights-detached", C_SDPA, "out = w.detach() @ v: no gradient reaches q and k (under no_grad invisible)",
       'cuts the gradient')
def sdpa_detach(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1).detach()
    return w @ v, w


wrong("sdpa-missing-import-math", C_SDPA, "math.sqrt in a notebook whose import cell lacks `import math`",
      "add `import math`")(from_cell("""
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
""", torch=torch))


# Mistakes unlike the listed slips: the probe (out against the learner's own weights, the rows' sums,
# weight on forbidden keys, every key shifted by one vector) must name them.
@wrong("sdpa-probe-softmax-plus-one", C_SDPA, "exp(s) / (1 + sum exp(s)): an extra 1 in the denominator",
       "the rows of your weights sum to")
def sdpa_plus_one(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    e = s.exp()
    w = e / (1 + e.sum(dim=-1, keepdim=True))
    return w @ v, w


@wrong("sdpa-probe-mean-added", C_SDPA, "out = weights @ v + v.mean(-2), the values' mean added",
       "your out weights the values with a matrix other")
def sdpa_mean_added(q, k, v, mask=None):
    out, w = _sdpa(q, k, v, mask)
    return out + v.mean(dim=-2, keepdim=True), w


def sdpa_filled(value):
    """Attention whose masked scores are filled with a finite ``value``."""
    def attend(q, k, v, mask=None):
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            s = s.masked_fill(~mask, value)
        w = s.softmax(dim=-1)
        return w @ v, w

    return attend


wrong("sdpa-fill-minus-100", C_SDPA, "masked scores filled with -100: beaten only by scores below -100",
      "a masked key must lose to every allowed one")(sdpa_filled(-100.0))
wrong("sdpa-probe-fill-minus-five", C_SDPA, "masked scores filled with -5", "to keys the mask forbids")(
    sdpa_filled(-5.0))


@wrong("sdpa-probe-scores-over-max", C_SDPA, "scores divided by their row maximum before the softmax",
       "adding the same vector to every key changes your weights")
def sdpa_over_max(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    s = s / s.abs().amax(dim=-1, keepdim=True)
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(dim=-1)
    return w @ v, w


def sdpa_one_row(reduce):
    """The mask reduced to one row before it is used: every query gets that row."""
    def attention(q, k, v, mask=None):
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            s = s.masked_fill(~reduce(mask), float("-inf"))
        w = s.softmax(dim=-1)
        return w @ v, w
    return attention


wrong("sdpa-probe-mask-any-queries", C_SDPA, "mask.any(dim=-2, keepdim=True): the mask reduced over the queries",
      "every query gets the same row of the mask")(sdpa_one_row(lambda m: m.any(dim=-2, keepdim=True)))
wrong("sdpa-probe-mask-last-row", C_SDPA, "mask[..., -1:, :]: the last query's row used for every query",
      "every query gets the same row of the mask")(sdpa_one_row(lambda m: m[..., -1:, :]))
wrong("sdpa-probe-mask-first-row", C_SDPA, "mask[..., :1, :]: the first query's row used for every query",
      "every query gets the same row of the mask")(sdpa_one_row(lambda m: m[..., :1, :]))


@wrong("sdpa-einsum-4d", C_SDPA, "einsum('bhqd,bhkd->bhqk'): an equation for 4-D inputs only",
       "write the leading (batch, heads) dimensions as an ellipsis")
def sdpa_einsum_4d(q, k, v, mask=None):
    s = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(dim=-1)
    return torch.einsum("bhqk,bhkd->bhqd", w, v), w


@wrong("sdpa-probe-half-softmax", C_SDPA, "the softmax taken in float16 ('to save memory'), cast back",
       "1 to about 3 digits only")
def sdpa_half_softmax(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.half().softmax(dim=-1).to(q.dtype)
    return w @ v, w


# ----------------------------------------------------------------------------------------------
# Right answers, in many styles, each to pass


wrong("sdpa-package", C_SDPA, "the package's own function, passed as the answer", "calls the course's own")(
    ec.scaled_dot_product_attention)
right("sdpa-plain", C_SDPA, "the plain formula: matmul, masked_fill(-inf), softmax(-1)")(sdpa_with)


@right("sdpa-einsum-finfo-min", C_SDPA, "einsum, finfo.min, F.softmax")
def sdpa_einsum_min(q, k, v, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", q, k) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(mask == False, torch.finfo(scores.dtype).min)  # noqa: E712
    w = F.softmax(scores, dim=-1)
    return torch.einsum("...qk,...kd->...qd", w, v), w


@right("sdpa-prescaled-where", C_SDPA, "pre-scaled q, torch.where, -inf")
def sdpa_prescaled_where(q, k, v, mask=None):
    q = q * q.size(-1) ** -0.5
    scores = torch.matmul(q, k.transpose(-1, -2))
    if mask is not None:
        scores = torch.where(mask, scores, torch.tensor(float("-inf"), dtype=scores.dtype))
    w = scores.softmax(-1)
    return torch.matmul(w, v), w


@right("sdpa-manual-softmax", C_SDPA, "a hand-written stable softmax, -1e9 fill")
def sdpa_manual_softmax(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(k.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, -1e9)
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    w = e / e.sum(dim=-1, keepdim=True)
    return w @ v, w


@right("sdpa-fused", C_SDPA, "torch's fused kernel for out, weights separately")
def sdpa_fused(q, k, v, mask=None):
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return out, scores.softmax(dim=-1)


@right("sdpa-additive-mask", C_SDPA, "scores + (~mask).float() * -1e9")
def sdpa_r1(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s + (~mask).float() * -1e9
    w = s.softmax(-1)
    return w @ v, w


@right("sdpa-fill-1e4", C_SDPA, "masked_fill(~mask, -1e4)")
def sdpa_r2(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, -1e4)
    w = s.softmax(-1)
    return w @ v, w


@right("sdpa-fill_-fresh-scores", C_SDPA, "masked_fill_ on the freshly computed scores (allowed)")
def sdpa_r3(q, k, v, mask=None):
    s = torch.matmul(q, k.mT) * (1.0 / math.sqrt(k.shape[-1]))
    if mask is not None:
        s.masked_fill_(mask.logical_not(), float("-inf"))
    w = torch.nn.functional.softmax(s, dim=-1)
    return torch.matmul(w, v), w


@right("sdpa-float-mask-eq0", C_SDPA, "mask.float(); masked_fill(mask == 0, -inf)")
def sdpa_r4(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        m = mask.float()
        s = s.masked_fill(m == 0, float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@right("sdpa-double-internal", C_SDPA, "computed in float64, cast back to q.dtype")
def sdpa_r5(q, k, v, mask=None):
    dt = q.dtype
    out, w = _sdpa(q.double(), k.double(), v.double(), mask)
    return out.to(dt), w.to(dt)


@right("sdpa-logsumexp", C_SDPA, "w = exp(s - logsumexp(s)); torch.where with a Python float")
def sdpa_r6(q, k, v, mask=None):
    s = torch.einsum("...id,...jd->...ij", q, k) / math.sqrt(q.size(-1))
    if mask is not None:
        s = torch.where(mask, s, float("-inf"))
    w = torch.exp(s - torch.logsumexp(s, dim=-1, keepdim=True))
    return torch.einsum("...ij,...jd->...id", w, v), w


@right("sdpa-finfo-half-min", C_SDPA, "masked_fill with torch.finfo(torch.float16).min and F.softmax(dtype=float32)")
def sdpa_r7(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(mask == 0, torch.finfo(torch.float16).min)
    w = F.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype)
    return w @ v, w


@right("sdpa-baddbmm", C_SDPA, "leading dims flattened; torch.baddbmm(additive -inf mask, q, k^T, alpha=1/sqrt(d))")
def sdpa_baddbmm(q, k, v, mask=None):
    batch, qf, kf, vf, mf = _flat(q, k, v, mask)
    bias = torch.zeros(mf.shape, dtype=q.dtype).masked_fill(~mf, float("-inf"))
    s = torch.baddbmm(bias, qf, kf.transpose(1, 2), alpha=1.0 / math.sqrt(q.shape[-1]))
    w = s.softmax(-1)
    out = torch.bmm(w, vf)
    return out.reshape(*batch, *out.shape[-2:]), w.reshape(*batch, *w.shape[-2:])


@right("sdpa-vmap", C_SDPA, "torch.vmap of a 2-D attention over the flattened leading dims")
def sdpa_vmap(q, k, v, mask=None):
    batch, qf, kf, vf, mf = _flat(q, k, v, mask)

    def one(q2, k2, v2, m2):
        s = (q2 @ k2.T) / math.sqrt(q2.shape[-1])
        w = torch.softmax(torch.where(m2, s, float("-inf")), dim=-1)
        return w @ v2, w

    out, w = torch.vmap(one)(qf, kf, vf, mf)
    return out.reshape(*batch, *out.shape[-2:]), w.reshape(*batch, *w.shape[-2:])


@right("sdpa-log-mask", C_SDPA, "additive mask scores + torch.log(mask.float()) (log 0 = -inf)")
def sdpa_logmask(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s + torch.log(mask.to(s.dtype))
    w = s.softmax(-1)
    return w @ v, w


@right("sdpa-scale-k", C_SDPA, "scale folded into k: q @ (k / sqrt(d)).mT, F.softmax with dtype")
def sdpa_scale_k(q, k, v, mask=None):
    s = q @ (k * q.shape[-1] ** -0.5).mT
    if mask is not None:
        s = s.masked_fill(mask.logical_not(), -math.inf)
    w = F.softmax(s, dim=-1, dtype=q.dtype)
    return torch.matmul(w, v), w


@right("sdpa-identity-values", C_SDPA,
       "out = F.sdpa(q, k, v); weights = F.sdpa(q, k, eye(L_k)) (attending over one-hot values)")
def sdpa_eye(q, k, v, mask=None):
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    L_k = k.shape[-2]
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    eye = torch.eye(L_k, dtype=q.dtype).expand(*batch, L_k, L_k)
    w = F.scaled_dot_product_attention(q, k, eye, attn_mask=mask)
    return out, w


@right("sdpa-split-scale-special-softmax", C_SDPA,
       "q and k each scaled by d_k ** -0.25; torch.special.softmax; where(mask, s, -inf)")
def sdpa_split(q, k, v, mask=None):
    c = q.shape[-1] ** -0.25
    s = torch.matmul(q * c, (k * c).transpose(-1, -2))
    if mask is not None:
        s = torch.where(mask, s, torch.tensor(-math.inf, dtype=s.dtype))
    w = torch.special.softmax(s, -1)
    return w @ v, w


@right("sdpa-hf-float-type_as", C_SDPA,
       "HF style: softmax(scores.float(), -1).type_as(q) (float32 softmax for float64 inputs)")
def sdpa_hf(q, k, v, mask=None):
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.size(-1))
    if mask is not None:
        s = s.masked_fill(mask == 0, float("-inf"))
    w = F.softmax(s.float(), dim=-1).type_as(q)
    return torch.matmul(w, v), w


test_catalogue_cases, test_wrong_answer_is_named, test_right_answer_passes = CATALOGUE.tests()
