"""Attention in pieces: the same numbers as full attention without holding the whole score matrix.

Two ways to cut the ``(L_q, L_k)`` scores into pieces, both exact:

* :func:`chunked_attention` takes a block of *queries* at a time. Each query's softmax needs only
  its own row of scores, so a chunk of rows can be built, used and dropped.
* :func:`online_softmax_attention` takes a block of *keys* at a time, as FlashAttention does
  (Dao et al., 2022, building on Milakov and Gimelshein, 2018). A row's softmax is not known until
  every key has been seen, so it keeps, per query, the largest score so far ``m``, the running sum
  ``s`` of ``exp(score - m)`` and the running weighted sum of values; when a new block raises ``m``,
  both sums are rescaled by ``exp(m_old - m_new)``.

Neither saves arithmetic (every query still meets every key); they save memory.
:func:`sliding_window_attention` does save arithmetic, because it computes local attention (notebook 13): a
query meets only the keys of its window.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ._validate import check_mask, require_positive_int, require_qkv, scores_shape
from .attention import scaled_dot_product_attention


def chunked_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                      mask: torch.Tensor | None = None, chunk_size: int = 1024, *,
                      keep_dtype: bool = False) -> torch.Tensor:
    """Attention computed a block of queries at a time; the same output as full attention.

    Peak memory for scores falls from ``L_q x L_k`` to ``chunk_size x L_k`` per head; the FLOPs
    are unchanged. Fully masked query rows give zeros.

    Args:
        q, k, v, mask: as :func:`~encoder_course.scaled_dot_product_attention`.
        chunk_size: queries per chunk.
        keep_dtype: as in :func:`~encoder_course.scaled_dot_product_attention` (half precision kept).

    Shape:
        q ``(..., L_q, d_k)``, k ``(..., L_k, d_k)``, v ``(..., L_k, d_v)``, mask broadcastable to
        ``(..., L_q, L_k)``; returns ``(..., L_q, d_v)``.
    """
    require_qkv(q, k, v)
    require_positive_int("chunk_size", chunk_size)
    if mask is not None:
        check_mask(mask, scores_shape(q, k))
    pieces = []
    for start in range(0, q.shape[-2], chunk_size):
        rows = slice(start, start + chunk_size)
        chunk_mask = mask if mask is None or mask.dim() < 2 or mask.shape[-2] == 1 else mask[..., rows, :]
        pieces.append(scaled_dot_product_attention(q[..., rows, :], k, v, chunk_mask,
                                                   keep_dtype=keep_dtype)[0])  # (..., chunk, d_v)
    if not pieces:  # no queries at all
        return q.new_zeros(*scores_shape(q, k)[:-2], 0, v.shape[-1])
    return torch.cat(pieces, dim=-2)  # (..., L_q, d_v)


def online_softmax_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                             mask: torch.Tensor | None = None, block_size: int = 128) -> torch.Tensor:
    """Attention over blocks of keys with an online softmax; the same output as full attention.

    Args:
        q, k, v, mask: as :func:`~encoder_course.scaled_dot_product_attention`.
        block_size: keys per block.

    Shape:
        q ``(..., L_q, d_k)``, k ``(..., L_k, d_k)``, v ``(..., L_k, d_v)``, mask broadcastable to
        ``(..., L_q, L_k)``; returns ``(..., L_q, d_v)``. Fully masked query rows give zeros.
    """
    require_qkv(q, k, v)
    require_positive_int("block_size", block_size)
    shape = scores_shape(q, k)
    if mask is not None:
        check_mask(mask, shape)
        mask = mask.expand(shape)  # (..., L_q, L_k)
    q = q / math.sqrt(q.shape[-1])
    m = q.new_full((*shape[:-1], 1), float("-inf"))  # (..., L_q, 1): largest score so far
    s = q.new_zeros((*shape[:-1], 1))  # (..., L_q, 1): sum of exp(score - m) so far
    acc = q.new_zeros((*shape[:-1], v.shape[-1]))  # (..., L_q, d_v): sum of exp(score - m) * value
    for start in range(0, k.shape[-2], block_size):
        keys = slice(start, start + block_size)
        scores = q @ k[..., keys, :].transpose(-2, -1)  # (..., L_q, block)
        if mask is not None:
            scores = scores.masked_fill(~mask[..., keys], float("-inf"))
        m_new = torch.maximum(m, scores.amax(dim=-1, keepdim=True))  # (..., L_q, 1)
        # While a row has seen only masked keys, m_new is -inf; measure from 0 instead (no inf - inf).
        base = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        rescale = torch.exp(m - base)  # (..., L_q, 1): brings the old sums to the new maximum
        p = torch.exp(scores - base)  # (..., L_q, block)
        s = s * rescale + p.sum(dim=-1, keepdim=True)
        acc = acc * rescale + p @ v[..., keys, :]  # (..., L_q, d_v)
        m = m_new
    return acc / s.clamp(min=torch.finfo(s.dtype).tiny) * (s > 0)  # (..., L_q, d_v)


def sliding_window_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int,
                             key_mask: torch.Tensor | None = None) -> torch.Tensor:
    """Local attention that scores only the band: each query meets the keys within ``window // 2`` on either side.

    The same output as full attention with ``sliding_window_mask(L, window)`` (and the key mask), but the queries
    go in blocks of ``h = window // 2`` and each block scores only the ``3h`` keys around it: about ``1.5 * window``
    scores per query instead of ``L``. Masking the full score matrix gives the same numbers and saves nothing.

    Args:
        q, k, v: as :func:`~encoder_course.scaled_dot_product_attention` (self-attention: one length ``L``).
        window: the window (:func:`~encoder_course.sliding_window_mask`'s convention).
        key_mask: optional bool, True at real keys, ``(..., L)`` with the leading dimensions of ``q`` or
            broadcastable to them (a padding mask ``(B, 1, 1, L)`` goes in as ``mask[:, :, 0]``, ``(B, 1, L)``).

    Shape:
        q, k ``(..., L, d_k)``, v ``(..., L, d_v)``; returns ``(..., L, d_v)``.
    """
    require_qkv(q, k, v)
    require_positive_int("window", window)
    length, half = q.shape[-2], window // 2
    h = max(half, 1)  # queries per block
    blocks = math.ceil(length / h)
    tail = blocks * h - length  # padding that completes the last block
    q_blocks = F.pad(q, (0, 0, 0, tail)).unflatten(-2, (blocks, h))  # (..., n, h, d_k)
    k_near = F.pad(k, (0, 0, h, tail + h)).unfold(-2, 3 * h, h)  # (..., n, d_k, 3h): block b's keys start at b*h - h
    v_near = F.pad(v, (0, 0, h, tail + h)).unfold(-2, 3 * h, h)  # (..., n, d_v, 3h)
    scores = q_blocks @ k_near / math.sqrt(q.shape[-1])  # (..., n, h, 3h)
    query = torch.arange(blocks, device=q.device)[:, None, None] * h + torch.arange(h, device=q.device)[:, None]
    key = torch.arange(blocks, device=q.device)[:, None, None] * h - h + torch.arange(3 * h, device=q.device)
    allowed = ((key - query).abs() <= half) & (key >= 0) & (key < length)  # (n, h, 3h)
    if key_mask is not None:
        near = F.pad(key_mask, (h, tail + h), value=False).unfold(-1, 3 * h, h)  # (..., n, 3h)
        allowed = allowed & near[..., :, None, :]  # (..., n, h, 3h)
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)  # (..., n, h, 3h)
    weights = weights.nan_to_num(0.0)  # a query with no real key in its window: zero weights, as elsewhere
    out = weights @ v_near.transpose(-2, -1)  # (..., n, h, d_v)
    return out.flatten(-3, -2)[..., :length, :]  # (..., L, d_v)
