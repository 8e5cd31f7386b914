"""The checker of ``online_softmax_attention`` (notebook 09): every wrong answer named, every right one passing."""

from __future__ import annotations

import functools
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



def online_slip(q, k, v, mask=None, block_size=4, *, rescale="before", mask_mode="fill", pad=False,
                scale_each_block=False, stop=None, chunks=False):
    """An online softmax with one more slip chosen by keyword (the defaults give the right answer)."""
    shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
    mask = None if mask is None else mask.expand(shape)
    if pad and k.shape[-2] % block_size:  # zero keys and values up to a multiple of block_size, not masked
        extra = block_size - k.shape[-2] % block_size
        k, v = F.pad(k, (0, 0, 0, extra)), F.pad(v, (0, 0, 0, extra))
        mask = None if mask is None else F.pad(mask, (0, extra), value=True)
    if not scale_each_block:
        q = q / math.sqrt(q.shape[-1])
    m = torch.full((*shape[:-1], 1), float("-inf"), dtype=q.dtype)
    s = torch.zeros_like(m)
    acc = torch.zeros((*shape[:-1], v.shape[-1]), dtype=q.dtype)
    last = torch.ones_like(m)
    length = k.shape[-2]
    if chunks:  # torch.chunk: block_size pieces, not pieces of block_size keys
        sizes = [piece.shape[-2] for piece in k.chunk(block_size, dim=-2)]
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        blocks = [(a, a + n) for a, n in zip(starts, sizes)]
    else:
        end = length if stop is None else stop(length)
        blocks = [(a, min(a + block_size, end)) for a in range(0, length, block_size)]
    for a, b in blocks:
        if scale_each_block:
            q = q / math.sqrt(q.shape[-1])
        scores = q @ k[..., a:b, :].transpose(-2, -1)
        if mask is not None and mask_mode == "fill":
            scores = scores.masked_fill(~mask[..., a:b], float("-inf"))
        elif mask is not None and mask_mode == "add":
            scores = scores + mask[..., a:b].to(scores.dtype)
        elif mask is not None:
            scores = scores * mask[..., a:b]
        m_new = torch.maximum(m, scores.amax(dim=-1, keepdim=True))
        base = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        r, p = torch.exp(m - base), torch.exp(scores - base)
        if rescale == "before":
            s, acc = s * r + p.sum(-1, keepdim=True), acc * r + p @ v[..., a:b, :]
        elif rescale == "after":  # the block's share added first, then everything rescaled
            s, acc = (s + p.sum(-1, keepdim=True)) * r, (acc + p @ v[..., a:b, :]) * r
        elif rescale == "stale":  # acc rescaled by the previous block's factor
            s, acc = s * r + p.sum(-1, keepdim=True), acc * last + p @ v[..., a:b, :]
        elif rescale == "sum-twice":
            s, acc = s * r * r + p.sum(-1, keepdim=True), acc * r + p @ v[..., a:b, :]
        elif rescale == "sum-ratio":  # acc rescaled by s_old / s_new, s by r
            s_new = s * r + p.sum(-1, keepdim=True)
            s, acc = s_new, acc * (s / s_new.clamp(min=1e-30)) + p @ v[..., a:b, :]
        last, m = r, m_new
    return torch.where(s > 0, acc / s.clamp(min=torch.finfo(s.dtype).tiny), torch.zeros_like(acc))


wrong("on-pad-zero-keys", C_ON, "the keys and values padded with zeros to a multiple of block_size, the pad not masked",
      "the last block is padded with zero keys")(lambda *a, **kw: online_slip(*a, **kw, pad=True))
wrong("on-mask-added", C_ON, "scores + mask: the bool mask added as 0 and 1",
      "the mask is added to the scores")(lambda *a, **kw: online_slip(*a, **kw, mask_mode="add"))
wrong("on-mask-multiplied", C_ON, "scores * mask: the masked scores set to 0",
      "the scores are multiplied by the mask")(lambda *a, **kw: online_slip(*a, **kw, mask_mode="mul"))
wrong("on-scale-every-block", C_ON, "q = q / sqrt(d_k) inside the loop over the blocks",
      "q is divided by sqrt(d_k) again at every block")(lambda *a, **kw: online_slip(*a, **kw, scale_each_block=True))


# Mistakes unlike the listed slips: the probe (one block, blocks of one key, v all ones) must name them.
wrong("on-probe-rescale-after-add", C_ON, "(acc + p @ v) * exp(m - m_new): the first block's share times 0",
      "exactly the first block's keys")(lambda *a, **kw: online_slip(*a, **kw, rescale="after"))
wrong("on-probe-stale-rescale", C_ON, "acc rescaled by the previous block's factor",
      "exactly the first block's keys")(lambda *a, **kw: online_slip(*a, **kw, rescale="stale"))
wrong("on-probe-sum-rescaled-twice", C_ON, "s * r * r: the running sum rescaled twice, acc once",
      "what you divide it by is not")(lambda *a, **kw: online_slip(*a, **kw, rescale="sum-twice"))
wrong("on-probe-acc-by-sum-ratio", C_ON, "acc rescaled by s_old / s_new (the normalised form's factor), unnormalised",
      "the blocks' weights do not add up to 1")(lambda *a, **kw: online_slip(*a, **kw, rescale="sum-ratio"))
wrong("on-probe-last-key-dropped", C_ON, "k[..., start:min(start + block_size, L_k - 1)]: the last key left out",
      "the last key: a slice end of L_k - 1")(lambda *a, **kw: online_slip(*a, **kw, stop=lambda length: length - 1))
wrong("on-probe-chunk-count", C_ON, "k.chunk(block_size, dim=-2): block_size pieces, not pieces of block_size keys",
      "it cuts the keys into block_size pieces")(lambda *a, **kw: online_slip(*a, **kw, chunks=True))


@wrong("on-probe-lse-max-merge", C_ON, "each block's logsumexp merged with torch.maximum instead of torch.logaddexp",
       "what you divide it by is not")
def on_lse_max_merge(q, k, v, mask=None, block_size=4):
    shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
    mask = None if mask is None else mask.expand(shape)
    q = q / math.sqrt(q.shape[-1])
    lse = q.new_full((*shape[:-1], 1), -math.inf)
    out = q.new_zeros((*shape[:-1], v.shape[-1]))
    for start in range(0, k.shape[-2], block_size):
        scores = q @ k[..., start:start + block_size, :].mT
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:start + block_size], -math.inf)
        lse_b = torch.logsumexp(scores, -1, keepdim=True)
        out_b = torch.nan_to_num(torch.softmax(scores, -1)) @ v[..., start:start + block_size, :]
        new = torch.maximum(lse, lse_b)  # the slip: the larger of the two, not their logaddexp
        w_old = torch.where(torch.isinf(new), 0.0, torch.exp(lse - new))
        w_new = torch.where(torch.isinf(new), 0.0, torch.exp(lse_b - new))
        out, lse = out * w_old + out_b * w_new, new
    return out



def on_big_start(q, k, v, mask=None, block_size=4, *, start=lambda shape, dtype: torch.full(shape, -1e30, dtype=dtype)):
    """m starts at a big finite negative number (no guard needed in float32: m never becomes -inf)."""
    shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
    mask = None if mask is None else mask.expand(shape)
    q = q / math.sqrt(q.shape[-1])
    m = start((*shape[:-1], 1), q.dtype)
    s, acc = torch.zeros_like(m), torch.zeros((*shape[:-1], v.shape[-1]), dtype=q.dtype)
    for a in range(0, k.shape[-2], block_size):
        scores = q @ k[..., a:a + block_size, :].transpose(-2, -1)
        if mask is not None:
            scores = scores.masked_fill(~mask[..., a:a + block_size], float("-inf"))
        m_new = torch.maximum(m, scores.amax(-1, keepdim=True))
        r, p = torch.exp(m - m_new), torch.exp(scores - m_new)
        s, acc, m = s * r + p.sum(-1, keepdim=True), acc * r + p @ v[..., a:a + block_size, :], m_new
    return acc / torch.where(s > 0, s, torch.ones_like(s)) * (s > 0)


wrong("on-half-full-overflow", C_ON, "m = torch.full(..., -1e30, dtype=q.dtype): cannot be stored in float16",
      "a constant beyond float16's range")(on_big_start)
wrong("on-half-silent-overflow", C_ON, "m = torch.zeros(...) - 1e30: -inf in float16, then exp(-inf - -inf)",
      "a constant beyond float16's range")(
    lambda *a, **kw: on_big_start(*a, **kw, start=lambda shape, dtype: torch.zeros(shape, dtype=dtype) - 1e30))


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


@right("on-padded-and-masked", C_ON,
       "k and v padded to a multiple of block_size, the pad masked; acc / s.clamp(min=1e-6)")
def on_padded_and_masked(q, k, v, mask=None, block_size=4):
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    length = k.shape[-2]
    extra = (-length) % block_size
    k = F.pad(k, (0, 0, 0, extra))
    v = F.pad(v, (0, 0, 0, extra))
    allowed = torch.ones(*lead, q.shape[-2], length + extra, dtype=torch.bool)
    allowed[..., length:] = False
    if mask is not None:
        allowed[..., :length] &= mask
    q = q / math.sqrt(q.shape[-1])
    m = torch.full((*lead, q.shape[-2], 1), -math.inf, dtype=q.dtype)
    s = torch.zeros_like(m)
    acc = torch.zeros((*lead, q.shape[-2], v.shape[-1]), dtype=q.dtype)
    for start in range(0, length + extra, block_size):
        scores = (q @ k[..., start:start + block_size, :].transpose(-2, -1)).masked_fill(
            ~allowed[..., start:start + block_size], -math.inf)
        m_new = torch.maximum(m, scores.amax(-1, keepdim=True))
        base = torch.where(m_new == -math.inf, torch.zeros_like(m_new), m_new)
        corr, p = torch.exp(m - base), torch.exp(scores - base)
        s, acc, m = s * corr + p.sum(-1, keepdim=True), acc * corr + p @ v[..., start:start + block_size, :], m_new
    return acc / s.clamp(min=1e-6)

@right("on-split-reduce", C_ON, "functools.reduce over zip(k.split, v.split, mask.split), torch.where for the mask")
def on_split_and_reduce(q, k, v, mask=None, block_size=4):
    shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
    masks = (torch.broadcast_to(mask, shape).split(block_size, dim=-1) if mask is not None
             else [None] * math.ceil(k.shape[-2] / block_size))
    scale = 1 / math.sqrt(q.shape[-1])

    def step(state, block):
        m, s, acc = state
        kb, vb, mb = block
        scores = torch.matmul(q, kb.transpose(-1, -2)) * scale
        if mb is not None:
            scores = torch.where(mb, scores, torch.tensor(-math.inf, dtype=scores.dtype))
        m_new = torch.maximum(m, scores.max(dim=-1, keepdim=True).values)
        safe = torch.nan_to_num(m_new, neginf=0.0)
        c = torch.exp(m - safe)
        p = torch.exp(scores - safe)
        return m_new, s * c + p.sum(-1, keepdim=True), acc * c + torch.matmul(p, vb)

    start = (q.new_full((*shape[:-1], 1), -math.inf), q.new_zeros((*shape[:-1], 1)),
             q.new_zeros((*shape[:-1], v.shape[-1])))
    _, s, acc = functools.reduce(step, zip(k.split(block_size, -2), v.split(block_size, -2), masks), start)
    return acc / torch.where(s > 0, s, torch.ones_like(s)) * (s > 0)

@right("on-exp2-log2e", C_ON, "FlashAttention-2's exp2 with the log2(e) factor folded into q")
def on_exp2_flash2(q, k, v, mask=None, block_size=4):
    log2e = 1.4426950408889634
    shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
    qs = q * (log2e / math.sqrt(q.shape[-1]))
    m = torch.full((*shape[:-1], 1), float("-inf"), dtype=q.dtype)
    total = torch.zeros_like(m)
    o = torch.zeros((*shape[:-1], v.shape[-1]), dtype=q.dtype)
    for j in range(math.ceil(k.shape[-2] / block_size)):
        sl = slice(j * block_size, (j + 1) * block_size)
        x = qs @ k[..., sl, :].mT
        if mask is not None:
            x = x.masked_fill(~mask.expand(shape)[..., sl], float("-inf"))
        mj = torch.maximum(m, x.amax(-1, keepdim=True))
        ref = torch.where(torch.isfinite(mj), mj, torch.zeros_like(mj))
        alpha = torch.exp2(m - ref)
        pt = torch.exp2(x - ref)
        total = alpha * total + pt.sum(-1, keepdim=True)
        o = alpha * o + pt @ v[..., sl, :]
        m = mj
    return torch.where(total > 0, o / torch.where(total > 0, total, torch.ones_like(total)), torch.zeros_like(o))

@right("on-einsum-narrow-float64", C_ON, "float64 inside, einsum, torch.narrow in a while loop, cast back at the end")
def on_einsum_float64(q, k, v, mask=None, block_size=4):
    dt = q.dtype
    q, k, v = q.double(), k.double(), v.double()
    shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
    big = None if mask is None else mask.expand(shape)
    m = torch.full((*shape[:-1], 1), -torch.inf, dtype=torch.float64)
    s = torch.zeros_like(m)
    acc = torch.zeros((*shape[:-1], v.shape[-1]), dtype=torch.float64)
    start = 0
    while start < k.shape[-2]:
        n = min(block_size, k.shape[-2] - start)
        kb, vb = k.narrow(-2, start, n), v.narrow(-2, start, n)
        sc = torch.einsum("...id,...jd->...ij", q, kb) / q.shape[-1] ** 0.5
        if big is not None:
            sc = sc.masked_fill(big.narrow(-1, start, n).logical_not(), -torch.inf)
        mn = torch.maximum(m, sc.amax(-1, keepdim=True))
        mn_safe = mn.masked_fill(mn.isinf(), 0)
        c, p = (m - mn_safe).exp(), (sc - mn_safe).exp()
        s = s * c + p.sum(-1, keepdim=True)
        acc = acc * c + torch.einsum("...ij,...jd->...id", p, vb)
        m = mn
        start += n
    out = acc / s.clamp_min(1e-300)
    return out.masked_fill(s == 0, 0).to(dt)

@right("on-block-stats-merged", C_ON, "each block's max, sum and p @ v kept, merged once at the end")
def on_block_stats_then_merge(q, k, v, mask=None, block_size=4):
    shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
    q = q / math.sqrt(q.shape[-1])
    maxes, sums, outs = [], [], []
    for start in range(0, k.shape[-2], block_size):
        sc = q @ k[..., start:start + block_size, :].transpose(-2, -1)
        if mask is not None:
            sc = sc.masked_fill(~mask.expand(shape)[..., start:start + block_size], float("-inf"))
        mb = sc.amax(-1, keepdim=True)
        mb_safe = torch.where(torch.isinf(mb), torch.zeros_like(mb), mb)
        p = torch.exp(sc - mb_safe)
        maxes.append(mb)
        sums.append(p.sum(-1, keepdim=True))
        outs.append(p @ v[..., start:start + block_size, :])
    top = torch.stack(maxes).amax(0)
    top_safe = torch.where(torch.isinf(top), torch.zeros_like(top), top)
    s = sum(sb * torch.exp(torch.where(torch.isinf(mb), torch.full_like(mb, -torch.inf), mb) - top_safe)
            for mb, sb in zip(maxes, sums))
    acc = sum(ob * torch.exp(mb - top_safe) for mb, ob in zip(maxes, outs))
    return torch.where(s > 0, acc / torch.where(s > 0, s, torch.ones_like(s)), torch.zeros_like(acc))

@right("on-logaddexp-normalised", C_ON, "a running logsumexp with torch.logaddexp, the output kept normalised")
def on_lse_state_normalised(q, k, v, mask=None, block_size=4):
    shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
    q = q * q.shape[-1] ** -0.5
    lse = q.new_full((*shape[:-1], 1), -math.inf)
    out = q.new_zeros((*shape[:-1], v.shape[-1]))
    for start in range(0, k.shape[-2], block_size):
        sc = q @ k[..., start:start + block_size, :].mT
        if mask is not None:
            sc = sc.masked_fill(~mask.expand(shape)[..., start:start + block_size], -math.inf)
        new = torch.logaddexp(lse, torch.logsumexp(sc, -1, keepdim=True))
        safe = torch.where(torch.isinf(new), torch.zeros_like(new), new)
        p = torch.exp(sc - safe)  # weights of this block, already normalised by the total so far
        out = out * torch.exp(lse - safe) + p @ v[..., start:start + block_size, :]
        lse = new
    return out

@right("on-tiled-queries", C_ON, "queries two at a time in an outer loop, keys block_size at a time inside")
def on_tiled_queries_and_keys(q, k, v, mask=None, block_size=4):
    shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
    full_mask = None if mask is None else mask.expand(shape)
    q = q.expand(*shape[:-2], *q.shape[-2:]) / math.sqrt(q.shape[-1])
    rows = []
    for qs in range(0, q.shape[-2], 2):  # two queries at a time, and block_size keys
        qb = q[..., qs:qs + 2, :]
        m = torch.full((*qb.shape[:-1], 1), -math.inf, dtype=q.dtype)
        s = torch.zeros_like(m)
        acc = torch.zeros((*qb.shape[:-1], v.shape[-1]), dtype=q.dtype)
        for ks in range(0, k.shape[-2], block_size):
            sc = qb @ k[..., ks:ks + block_size, :].transpose(-2, -1)
            if full_mask is not None:
                sc = sc.masked_fill(~full_mask[..., qs:qs + 2, ks:ks + block_size], -math.inf)
            m_new = torch.maximum(m, sc.amax(-1, keepdim=True))
            base = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
            c = torch.exp(m - base)
            p = torch.exp(sc - base)
            s = s * c + p.sum(-1, keepdim=True)
            acc = acc * c + p @ v[..., ks:ks + block_size, :]
            m = m_new
        rows.append(torch.where(s > 0, acc / s.clamp(min=torch.finfo(s.dtype).tiny), torch.zeros_like(acc)))
    return torch.cat(rows, dim=-2)

@right("on-skips-masked-blocks", C_ON, "blocks with no allowed key skipped; the rescale guarded with torch.where")
def on_masked_block_skipped(q, k, v, mask=None, block_size=4):
    """A block with no allowed key is skipped with a per-row guard; the rescale through torch.where."""
    shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
    mask = torch.ones(shape, dtype=torch.bool) if mask is None else mask.expand(shape)
    q = q / math.sqrt(q.shape[-1])
    m = torch.full((*shape[:-1], 1), -math.inf, dtype=q.dtype)
    s = torch.zeros_like(m)
    acc = torch.zeros((*shape[:-1], v.shape[-1]), dtype=q.dtype)
    for start in range(0, k.shape[-2], block_size):
        mb = mask[..., start:start + block_size]
        if not mb.any():
            continue
        sc = (q @ k[..., start:start + block_size, :].transpose(-2, -1)).masked_fill(~mb, -math.inf)
        m_new = torch.maximum(m, sc.amax(-1, keepdim=True))
        seen = torch.isfinite(m_new)
        m_safe = torch.where(seen, m_new, torch.zeros_like(m_new))
        c = torch.where(torch.isfinite(m), torch.exp(m - m_safe), torch.zeros_like(m))
        p = torch.exp(sc - m_safe)
        s, acc, m = s * c + p.sum(-1, keepdim=True), acc * c + p @ v[..., start:start + block_size, :], m_new
    return acc / s.masked_fill(s == 0, 1.0)


test_catalogue_cases, test_wrong_answer_is_named, test_right_answer_passes = CATALOGUE.tests()
