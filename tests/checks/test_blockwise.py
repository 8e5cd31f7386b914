"""The checker of ``online_softmax_attention`` (notebook 09): every wrong answer named, every right one passing."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

import encoder_course as ec
from encoder_course import checks

from .catalogue import Catalogue

C_ON = checks.check_online_softmax_attention

CATALOGUE = Catalogue(C_ON)
wrong, right = CATALOGUE.add_wrong, CATALOGUE.add_right


def online_with(q, k, v, mask=None, block_size=4, *, scale=True, rescale_s=True, rescale_acc=True,
                carry_max=True, guard_block=True, guard_row=True, fill=float("-inf"), every=None, last=True,
                sign=1.0, m0=float("-inf"), inverted=False, out_of_place=True, cut=(0, 0)):
    """A learner's online softmax with one slip chosen by keyword (the defaults give the right answer)."""
    shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
    if mask is not None:
        mask = mask.expand(shape)
        mask = ~mask if inverted else mask
    if scale:
        q = q / math.sqrt(q.shape[-1]) if out_of_place else q.div_(math.sqrt(q.shape[-1]))
    m = torch.full((*shape[:-1], 1), m0, dtype=q.dtype)
    s = torch.zeros((*shape[:-1], 1), dtype=q.dtype)
    acc = torch.zeros((*shape[:-1], v.shape[-1]), dtype=q.dtype)
    size = every or block_size
    stop = k.shape[-2] if last else k.shape[-2] - k.shape[-2] % size
    for start in range(0, stop, size):
        keys = slice(start + cut[0], start + size - cut[1])
        kb, vb = k[..., keys, :], v[..., keys, :]
        scores = q @ kb.transpose(-2, -1)
        if mask is not None:
            scores = scores.masked_fill(~mask[..., keys], fill)
        block_max = scores.amax(dim=-1, keepdim=True)
        m_new = torch.maximum(m, block_max) if carry_max else block_max
        base = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new) if guard_block else m_new
        r = torch.exp(sign * (m - base))
        p = torch.exp(scores - base)
        s = (s * r if rescale_s else s) + p.sum(dim=-1, keepdim=True)
        acc = (acc * r if rescale_acc else acc) + p @ vb
        m = m_new
    if guard_row == "where":  # right values; the division itself unguarded
        return torch.where(s > 0, acc / s, torch.zeros_like(acc))
    if guard_row:
        return torch.where(s > 0, acc / s.clamp(min=torch.finfo(s.dtype).tiny), torch.zeros_like(acc))
    return acc / s


# ----------------------------------------------------------------------------------------------
# Wrong answers, each to be named


wrong("on-package", C_ON, "the package's own function, passed as the answer",
      "calls the course's own online_softmax_attention")(ec.online_softmax_attention)
wrong("on-full-package-attention", C_ON, "ec.scaled_dot_product_attention(q, k, v, mask)[0]: the whole score matrix",
      "does not work block by block")(lambda q, k, v, mask=None, block_size=4: ec.scaled_dot_product_attention(
          q, k, v, mask)[0])
wrong("on-fused-sdpa", C_ON, "F.scaled_dot_product_attention on all the keys",
      "calls scaled_dot_product_attention on 11 keys at once")(
    lambda q, k, v, mask=None, block_size=4: F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
wrong("on-query-chunks", C_ON, "ec.chunked_attention: blocks of queries, every key at once",
      "does not work block by block")(
    lambda q, k, v, mask=None, block_size=4: ec.chunked_attention(q, k, v, mask, chunk_size=block_size))
wrong("on-no-rescale-sum", C_ON, "s = s + p.sum(-1): the running sum never rescaled",
      "the running sum is not rescaled")(lambda *a, **kw: online_with(*a, **kw, rescale_s=False))
wrong("on-no-rescale-acc", C_ON, "acc = acc + p @ v: the accumulator never rescaled",
      "the output accumulator is not rescaled")(lambda *a, **kw: online_with(*a, **kw, rescale_acc=False))
wrong("on-no-rescale", C_ON, "neither sum nor accumulator rescaled",
      "neither the running sum nor the output accumulator is rescaled")(
    lambda *a, **kw: online_with(*a, **kw, rescale_s=False, rescale_acc=False))
wrong("on-max-per-block", C_ON, "max not carried: each block measured from its own max (rescaled)",
      "the maximum is not carried across blocks")(lambda *a, **kw: online_with(*a, **kw, carry_max=False))
wrong("on-max-per-block-no-rescale", C_ON, "each block from its own max, sums added as they are",
      "each block is measured from its own maximum")(
    lambda *a, **kw: online_with(*a, **kw, carry_max=False, rescale_s=False, rescale_acc=False))
@wrong("on-p-old-max", C_ON, "p = exp(scores - m) before m is updated: s and acc rescaled, p from the old max",
       "is measured from the max before that block")
def on_p_old_max(q, k, v, mask=None, block_size=4):
    q = q / math.sqrt(q.shape[-1])
    m = s = acc = None
    for start in range(0, k.shape[-2], block_size):
        scores = q @ k[..., start:start + block_size, :].transpose(-2, -1)  # (..., L_q, block)
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:start + block_size], float("-inf"))
        block_max = scores.amax(dim=-1, keepdim=True)
        if m is None:
            m, s, acc = block_max, 0.0, 0.0
        p = torch.exp(scores - m)  # the slip: m is still the old max here
        m_new = torch.maximum(m, block_max)
        rescale = torch.exp(m - m_new)
        s = s * rescale + p.sum(dim=-1, keepdim=True)
        acc = acc * rescale + p @ v[..., start:start + block_size, :]
        m = m_new
    return acc / s


@wrong("on-mask-after-exp", C_ON, "p = exp(scores - m) * mask: the masked keys zeroed, yet counted in the max",
       "the mask is applied after the exponential")
def on_mask_after_exp(q, k, v, mask=None, block_size=4):
    q = q / math.sqrt(q.shape[-1])
    shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
    allowed = None if mask is None else mask.expand(shape)
    m = torch.full((*shape[:-1], 1), float("-inf"), dtype=q.dtype)
    s, acc = torch.zeros_like(m), torch.zeros((*shape[:-1], v.shape[-1]), dtype=q.dtype)
    for start in range(0, k.shape[-2], block_size):
        keys = slice(start, start + block_size)
        scores = q @ k[..., keys, :].transpose(-2, -1)  # (..., L_q, block), nothing filled
        m_new = torch.maximum(m, scores.amax(dim=-1, keepdim=True))
        p = torch.exp(scores - m_new) * (1.0 if allowed is None else allowed[..., keys])
        rescale = torch.exp(m - m_new)
        s, acc, m = s * rescale + p.sum(dim=-1, keepdim=True), acc * rescale + p @ v[..., keys, :], m_new
    return torch.where(s > 0, acc / s.clamp(min=torch.finfo(s.dtype).tiny), torch.zeros_like(acc))


wrong("on-where-nan-gradient", C_ON, "torch.where(s > 0, acc / s, 0): right values, NaN gradients in masked rows",
      "but a NaN gradient")(lambda *a, **kw: online_with(*a, **kw, guard_row="where"))
wrong("on-masked-block-nan", C_ON, "no guard: exp(-inf - -inf) on a block whose keys are all masked",
      "a block whose keys are all masked gives NaN")(lambda *a, **kw: online_with(*a, **kw, guard_block=False))
wrong("on-masked-row-nan", C_ON, "out = acc / s: 0 / 0 on a fully masked row",
      "a fully masked row gives NaN")(lambda *a, **kw: online_with(*a, **kw, guard_row=False))
wrong("on-finite-fill", C_ON, "masked_fill(~mask, -1e9): a fully masked row averages v",
      "a fully masked row gives the mean of v")(lambda *a, **kw: online_with(*a, **kw, fill=-1e9))
wrong("on-no-scale", C_ON, "no 1/sqrt(d_k)", "the scores are not scaled")(
    lambda *a, **kw: online_with(*a, **kw, scale=False))
wrong("on-mask-inverted", C_ON, "masked_fill(mask, -inf) per block", "the mask is inverted")(
    lambda *a, **kw: online_with(*a, **kw, inverted=True))
wrong("on-skips-last-block", C_ON, "range(0, L_k - L_k % block_size, block_size): the short last block dropped",
      "the last, shorter block of keys is skipped")(lambda *a, **kw: online_with(*a, **kw, last=False))
wrong("on-rescale-sign", C_ON, "exp(m_new - m_old) where exp(m_old - m_new) belongs",
      "the rescaling factor has the wrong sign")(lambda *a, **kw: online_with(*a, **kw, sign=-1.0))
wrong("on-max-starts-at-0", C_ON, "m = torch.zeros(...): the running max starts at 0",
      "the running max starts at 0 instead of -inf")(lambda *a, **kw: online_with(*a, **kw, m0=0.0))
wrong("on-fixed-block-4", C_ON, "blocks of 4 keys whatever block_size says",
      "it computes scores for 4 keys at once")(lambda *a, **kw: online_with(*a, **kw, every=4))
wrong("on-probe-slice-one-short", C_ON, "k[..., start:start + block_size - 1]: each block's last key left out",
      "the slice stops one key early")(lambda *a, **kw: online_with(*a, **kw, cut=(0, 1)))
wrong("on-probe-slice-skips-first", C_ON, "k[..., start + 1:start + block_size]: each block's first key left out",
      "although full attention weighs every unmasked key")(lambda *a, **kw: online_with(*a, **kw, cut=(1, 0)))
wrong("on-q-in-place", C_ON, "q.div_(sqrt(d_k)): the caller's q changed",
      "changed its input `q` in place")(lambda *a, **kw: online_with(*a, **kw, out_of_place=False))


def on_empty_rows_first_value(q, k, v, mask=None, block_size=4):
    """Rows with every key masked given v's first key (a 'fallback') instead of zeros."""
    out = online_with(q, k, v, mask, block_size)
    if mask is None:
        return out
    empty = ~mask.expand(*out.shape[:-1], k.shape[-2]).any(-1, keepdim=True)
    return torch.where(empty, v[..., :1, :].expand_as(out), out)


wrong("on-empty-rows-filled", C_ON, "rows with every key masked given v's first key instead of zeros",
      "except the rows whose keys are all masked")(on_empty_rows_first_value)


@wrong("on-softmax-per-block", C_ON, "softmax of each block, the block outputs averaged",
       "each block is normalised on its own")
def on_per_block(q, k, v, mask=None, block_size=4):
    q = q / math.sqrt(q.shape[-1])
    outs = []
    for start in range(0, k.shape[-2], block_size):
        scores = q @ k[..., start:start + block_size, :].transpose(-2, -1)
        if mask is not None:
            scores = scores.masked_fill(~mask.expand(*scores.shape[:-1], k.shape[-2])[..., start:start + block_size],
                                        float("-inf"))
        outs.append(torch.nan_to_num(torch.softmax(scores, dim=-1)) @ v[..., start:start + block_size, :])
    return torch.stack(outs).mean(dim=0)


@wrong("on-divide-every-block", C_ON, "acc = (acc * r + p @ v) / s after each block (never multiplied back)",
       "divided by the running sum at every block")
def on_divide_every(q, k, v, mask=None, block_size=4):
    shape = (*q.shape[:-1], k.shape[-2])
    mask = None if mask is None else mask.expand(*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), *shape[-2:])
    q = q / math.sqrt(q.shape[-1])
    m = torch.full((*mask.shape[:-1], 1) if mask is not None else (*shape[:-1], 1), float("-inf"), dtype=q.dtype)
    s, acc = torch.zeros_like(m), torch.zeros((*m.shape[:-1], v.shape[-1]), dtype=q.dtype)
    for start in range(0, k.shape[-2], block_size):
        scores = q @ k[..., start:start + block_size, :].transpose(-2, -1)
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:start + block_size], float("-inf"))
        m_new = torch.maximum(m, scores.amax(-1, keepdim=True))
        base = torch.where(torch.isinf(m_new), 0.0, m_new)
        r, p = torch.exp(m - base), torch.exp(scores - base)
        s = s * r + p.sum(-1, keepdim=True)
        acc = (acc * r + p @ v[..., start:start + block_size, :]) / s.clamp(min=torch.finfo(s.dtype).tiny)
        m = m_new
    return acc


@wrong("on-returns-pair", C_ON, "returns (out, weights) like scaled_dot_product_attention",
       "it returns only the output")
def on_pair(q, k, v, mask=None, block_size=4):
    return online_with(q, k, v, mask, block_size), None if mask is None else mask


@wrong("on-float-mask-whole", C_ON, "a float additive mask for all (L_q, L_k) built before the loop",
       "a float copy of the whole mask")
def on_float_mask(q, k, v, mask=None, block_size=4):
    shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
    bias = torch.zeros(shape, dtype=q.dtype)
    if mask is not None:
        bias = bias.masked_fill(~mask, float("-inf"))
    q = q / math.sqrt(q.shape[-1])
    m = torch.full((*shape[:-1], 1), float("-inf"), dtype=q.dtype)
    s, acc = torch.zeros_like(m), torch.zeros((*shape[:-1], v.shape[-1]), dtype=q.dtype)
    for start in range(0, k.shape[-2], block_size):
        scores = q @ k[..., start:start + block_size, :].transpose(-2, -1) + bias[..., start:start + block_size]
        m_new = torch.maximum(m, scores.amax(-1, keepdim=True))
        base = torch.where(torch.isinf(m_new), 0.0, m_new)
        r, p = torch.exp(m - base), torch.exp(scores - base)
        s, acc, m = s * r + p.sum(-1, keepdim=True), acc * r + p @ v[..., start:start + block_size, :], m_new
    return torch.where(s > 0, acc / s.clamp(min=1e-30), 0.0)


@wrong("on-detached", C_ON, "q and k detached before the loop ('to save memory'): right numbers, no gradient to them",
       "cuts the gradient")
def on_detached(q, k, v, mask=None, block_size=4):
    return online_with(q.detach(), k.detach(), v, mask, block_size)


# Mistakes unlike the listed slips: the probe (one block, blocks of one key, small scores) must name them.
wrong("on-probe-scale-twice", C_ON, "q divided by sqrt(d_k) before a function that divides again",
      "the scale applied twice")(
    lambda q, k, v, mask=None, block_size=4: online_with(q / math.sqrt(q.shape[-1]), k, v, mask, block_size))


def on_exp2(q, k, v, mask=None, block_size=4):
    """exp2 where exp belongs (FlashAttention-2's trick without its log2(e) factor), one block at a time."""
    shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
    q = q / math.sqrt(q.shape[-1])
    m = torch.full((*shape[:-1], 1), float("-inf"), dtype=q.dtype)
    s = torch.zeros((*shape[:-1], 1), dtype=q.dtype)
    acc = torch.zeros((*shape[:-1], v.shape[-1]), dtype=q.dtype)
    for start in range(0, k.shape[-2], block_size):
        scores = q @ k[..., start:start + block_size, :].transpose(-2, -1)
        if mask is not None:
            scores = scores.masked_fill(~mask.expand(shape)[..., start:start + block_size], float("-inf"))
        m_new = torch.maximum(m, scores.amax(-1, keepdim=True))
        base = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        r, p = torch.exp2(m - base), torch.exp2(scores - base)
        s, acc, m = s * r + p.sum(-1, keepdim=True), acc * r + p @ v[..., start:start + block_size, :], m_new
    return torch.where(s > 0, acc / s.clamp(min=torch.finfo(s.dtype).tiny), torch.zeros_like(acc))


wrong("on-probe-exp2", C_ON, "torch.exp2 where exp belongs, without the log2(e) factor", "torch.exp2 computes 2^x")(
    on_exp2)


def on_no_max(q, k, v, mask=None, block_size=4):
    """exp(scores) summed block by block with no max subtracted: right until a score is in the hundreds."""
    shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
    q = q / math.sqrt(q.shape[-1])
    s = torch.zeros((*shape[:-1], 1), dtype=q.dtype)
    acc = torch.zeros((*shape[:-1], v.shape[-1]), dtype=q.dtype)
    for start in range(0, k.shape[-2], block_size):
        p = torch.exp(q @ k[..., start:start + block_size, :].transpose(-2, -1))
        if mask is not None:
            p = p * mask.expand(shape)[..., start:start + block_size]
        s = s + p.sum(dim=-1, keepdim=True)
        acc = acc + p @ v[..., start:start + block_size, :]
    return acc / torch.where(s > 0, s, torch.ones_like(s)) * (s > 0)


wrong("on-probe-no-max", C_ON, "exp(scores) with no max subtracted at all",
      "exp() of a score in the hundreds overflows")(on_no_max)


# ----------------------------------------------------------------------------------------------
# Right answers, in many styles, each to pass


right("on-running-max-sum", C_ON, "running max, sum and accumulator; torch.where guards")(online_with)


@right("on-normalised-output", C_ON, "the output kept normalised: o = o * s_old * r / s_new + p @ v / s_new")
def on_normalised(q, k, v, mask=None, block_size=4):
    shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
    mask = None if mask is None else mask.expand(shape)
    scale = q.shape[-1] ** -0.5
    m = q.new_full((*shape[:-1], 1), -math.inf)
    s = q.new_zeros((*shape[:-1], 1))
    o = q.new_zeros((*shape[:-1], v.shape[-1]))
    for start in range(0, k.shape[-2], block_size):
        scores = torch.einsum("...qd,...kd->...qk", q, k[..., start:start + block_size, :]) * scale
        if mask is not None:
            scores = torch.where(mask[..., start:start + block_size], scores, -math.inf)
        m_new = torch.maximum(m, scores.amax(-1, keepdim=True))
        safe = m_new.nan_to_num(neginf=0.0)
        r, p = torch.exp(m - safe), torch.exp(scores - safe)
        s_new = s * r + p.sum(-1, keepdim=True)
        denom = s_new.clamp(min=torch.finfo(q.dtype).tiny)
        o = o * (s * r / denom) + torch.einsum("...qk,...kd->...qd", p, v[..., start:start + block_size, :]) / denom
        s, m = s_new, m_new
    return o


@right("on-logsumexp-merge", C_ON, "each block's softmax output and logsumexp, merged with torch.logaddexp")
def on_lse(q, k, v, mask=None, block_size=4):
    shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
    mask = None if mask is None else mask.expand(shape)
    q = q / math.sqrt(q.shape[-1])
    lse = q.new_full((*shape[:-1], 1), -math.inf)
    out = q.new_zeros((*shape[:-1], v.shape[-1]))
    for kb, vb, start in zip(k.split(block_size, dim=-2), v.split(block_size, dim=-2),
                             range(0, k.shape[-2], block_size)):
        scores = q @ kb.mT
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:start + kb.shape[-2]], -math.inf)
        lse_b = torch.logsumexp(scores, dim=-1, keepdim=True)
        out_b = torch.nan_to_num(torch.softmax(scores, dim=-1)) @ vb
        new = torch.logaddexp(lse, lse_b)
        w_old = torch.where(torch.isinf(new), 0.0, torch.exp(lse - new))
        w_new = torch.where(torch.isinf(new), 0.0, torch.exp(lse_b - new))
        out, lse = out * w_old + out_b * w_new, new
    return out


@right("on-two-pass", C_ON, "two passes over the blocks: the row maxima first, then the sums (still block by block)")
def on_two_pass(q, k, v, mask=None, block_size=4):
    shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
    mask = None if mask is None else mask.expand(shape)
    q = q * q.shape[-1] ** -0.5
    blocks = range(0, k.shape[-2], block_size)

    def scores_of(start):
        scores = q @ k[..., start:start + block_size, :].transpose(-1, -2)
        return scores if mask is None else scores.masked_fill(~mask[..., start:start + block_size], -math.inf)

    m = q.new_full((*shape[:-1], 1), -math.inf)
    for start in blocks:
        m = torch.maximum(m, scores_of(start).amax(-1, keepdim=True))
    base = torch.where(torch.isinf(m), 0.0, m)
    s, acc = torch.zeros_like(m), q.new_zeros((*shape[:-1], v.shape[-1]))
    for start in blocks:
        p = torch.exp(scores_of(start) - base)
        s, acc = s + p.sum(-1, keepdim=True), acc + p @ v[..., start:start + block_size, :]
    return torch.where(s > 0, acc / torch.where(s > 0, s, 1.0), 0.0)


@right("on-finfo-min-then-zero-rows", C_ON,
       "finfo.min fill (no inf at all), fully masked rows set to zero at the end, float64 inside")
def on_finfo(q, k, v, mask=None, block_size=4):
    dtype = q.dtype
    q, k, v = q.double(), k.double(), v.double()
    shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
    low = torch.finfo(q.dtype).min
    m = torch.full((*shape[:-1], 1), low, dtype=q.dtype)
    s = torch.zeros_like(m)
    acc = torch.zeros((*shape[:-1], v.shape[-1]), dtype=q.dtype)
    for start in range(0, k.shape[-2], block_size):
        stop = min(start + block_size, k.shape[-2])
        scores = torch.matmul(q, k[..., start:stop, :].transpose(-2, -1)) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask.expand(shape)[..., start:stop], low)
        m_new = torch.maximum(m, scores.max(dim=-1, keepdim=True).values)
        r, p = torch.exp(m - m_new), torch.exp(scores - m_new)
        s, acc, m = s * r + p.sum(-1, keepdim=True), acc * r + p @ v[..., start:stop, :], m_new
    out = acc / s
    if mask is not None:
        out = out.masked_fill(~mask.expand(shape).any(dim=-1, keepdim=True), 0.0)
    return out.to(dtype)


@right("on-while-loop", C_ON, "a while loop over the key index, torch.baddbmm-free, keyword block_size")
def on_while(q, k, v, mask=None, block_size=4):
    out = None
    start = 0
    state = None
    while start < k.shape[-2]:
        stop = min(start + block_size, k.shape[-2])
        scores = (q @ k[..., start:stop, :].transpose(-2, -1)) / q.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(torch.logical_not(torch.broadcast_to(
                mask, (*scores.shape[:-1], k.shape[-2]))[..., start:stop]), float("-inf"))
        top = scores.amax(-1, keepdim=True)
        if state is None:
            m, s, acc = top, None, None
        else:
            m, s, acc = torch.maximum(state[0], top), state[1], state[2]
        base = torch.nan_to_num(m, neginf=0.0)
        p = torch.exp(scores - base)
        if state is None:
            s, acc = p.sum(-1, keepdim=True), p @ v[..., start:stop, :]
        else:
            r = torch.exp(state[0] - base)
            s, acc = s * r + p.sum(-1, keepdim=True), acc * r + p @ v[..., start:stop, :]
        state = (m, s, acc)
        start = stop
    m, s, acc = state
    out = torch.where(s == 0, torch.zeros_like(acc), acc / torch.where(s == 0, torch.ones_like(s), s))
    return out


test_catalogue_cases, test_wrong_answer_is_named, test_right_answer_passes = CATALOGUE.tests()
