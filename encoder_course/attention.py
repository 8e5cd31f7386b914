"""Scaled dot-product attention, written out step by step (Vaswani et al., 2017, section 3.2.1).

``softmax(Q K^T / sqrt(d_k)) V`` with an optional bool mask (True = may attend). Two paths give
the same numbers: :func:`scaled_dot_product_attention` materialises the weights (for teaching and
plots), :func:`fused_attention` calls PyTorch's fused ``F.scaled_dot_product_attention``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ._validate import HALF_DTYPES, check_mask, require_probability, require_qkv, scores_shape


def scaled_dot_product_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None, *, keep_dtype: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention with the weights materialised: ``softmax(q k^T / sqrt(d_k)) v``.

    A query whose keys are all masked gets zero weights and a zero output (not NaN).
    The inputs are never modified.

    Args:
        q: queries.
        k: keys.
        v: values.
        mask: optional bool mask, True = may attend, broadcastable to ``(..., L_q, L_k)``.
        keep_dtype: for float16/bfloat16 inputs, compute the scores, the softmax and the product in
            that dtype, as a plain half-precision implementation does (notebook 09's GPU sweep times
            this); by default they are computed in float32, which holds twice the bytes.

    Shape:
        q ``(..., L_q, d_k)``, k ``(..., L_k, d_k)``, v ``(..., L_k, d_v)``;
        returns ``out`` ``(..., L_q, d_v)`` and ``weights`` ``(..., L_q, L_k)``.
    """
    require_qkv(q, k, v)
    if mask is not None:
        check_mask(mask, scores_shape(q, k))
    # float16 tops out at 65504, so a q.k of large vectors overflows to inf and the softmax gives NaN:
    # take the scores and the softmax in float32 for half-precision inputs, as the fused kernels do.
    if q.dtype in HALF_DTYPES and not keep_dtype:
        out, weights = scaled_dot_product_attention(q.float(), k.float(), v.float(), mask)
        return out.to(q.dtype), weights.to(q.dtype)
    d_k = q.shape[-1]
    if q.dtype in HALF_DTYPES:  # kept in half precision: scale q first, so a large q.k cannot overflow
        scores = (q / math.sqrt(d_k)) @ k.transpose(-2, -1)  # (..., L_q, L_k)
    else:
        scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., L_q, L_k)
    if mask is not None:
        # -inf makes the softmax give exactly zero weight to masked keys.
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # (..., L_q, L_k), each row sums to 1
    if mask is not None:
        # A row with every key masked is softmax(-inf, ..., -inf) = NaN: define it as zeros.
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    out = weights @ v  # (..., L_q, d_v)
    return out, weights


def fused_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
) -> torch.Tensor:
    """The same attention through PyTorch's fused kernel; returns only the output.

    Fully masked query rows give zeros, as in :func:`scaled_dot_product_attention`.

    Shape:
        as :func:`scaled_dot_product_attention`; returns ``(..., L_q, d_v)``.
    """
    require_qkv(q, k, v)
    require_probability("dropout_p", dropout_p)
    if mask is not None:
        check_mask(mask, scores_shape(q, k))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)  # (..., L_q, d_v)
    if mask is not None:
        # Some kernels return NaN for a row with no allowed key; make it zero on every backend.
        out = out.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return out
