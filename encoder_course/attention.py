"""Scaled dot-product attention, written out step by step (Vaswani et al., 2017, section 3.2.1).

``softmax(Q K^T / sqrt(d_k)) V`` with an optional bool mask (True = may attend). Two paths give
the same numbers: :func:`scaled_dot_product_attention` materialises the weights (for teaching and
plots), :func:`fast_attention` calls PyTorch's fused ``F.scaled_dot_product_attention``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ._validate import check_mask, require_tensor, shape_str


def _check_qkv(q, k, v) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        require_tensor(name, t, floating=True)
        if t.dim() < 2:
            raise ValueError(f"{name} must have at least 2 dimensions (..., L, d), got {shape_str(t)}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must share their last dimension d_k: q {shape_str(q)}, k {shape_str(k)}"
        )
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"q, k and v must share one dtype, got q {q.dtype}, k {k.dtype}, v {v.dtype}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same number of positions L_k: k {shape_str(k)}, v {shape_str(v)}"
        )
    try:
        torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"the leading (batch, head) dimensions of q {shape_str(q)}, k {shape_str(k)} and "
            f"v {shape_str(v)} do not broadcast"
        ) from None


def _scores_shape(q: torch.Tensor, k: torch.Tensor) -> tuple[int, ...]:
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    return (*batch, q.shape[-2], k.shape[-2])


def scaled_dot_product_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention with the weights materialised: ``softmax(q k^T / sqrt(d_k)) v``.

    A query whose keys are all masked gets zero weights and a zero output (not NaN).
    The inputs are never modified.

    Args:
        q: queries.
        k: keys.
        v: values.
        mask: optional bool mask, True = may attend, broadcastable to ``(..., L_q, L_k)``.

    Shape:
        q ``(..., L_q, d_k)``, k ``(..., L_k, d_k)``, v ``(..., L_k, d_v)``;
        returns ``out`` ``(..., L_q, d_v)`` and ``weights`` ``(..., L_q, L_k)``.
    """
    _check_qkv(q, k, v)
    d_k = q.shape[-1]
    # Scale q before the product, not the scores after it: the same numbers, but in float16 a large
    # q.k (above 65504) would overflow to inf before the division could bring it back in range.
    scores = (q / math.sqrt(d_k)) @ k.transpose(-2, -1)  # (..., L_q, L_k)
    if mask is not None:
        check_mask(mask, _scores_shape(q, k))
        # -inf makes the softmax give exactly zero weight to masked keys.
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # (..., L_q, L_k), each row sums to 1
    if mask is not None:
        # A row with every key masked is softmax(-inf, ..., -inf) = NaN: define it as zeros.
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    out = weights @ v  # (..., L_q, d_v)
    return out, weights


def fast_attention(
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
    _check_qkv(q, k, v)
    if mask is not None:
        check_mask(mask, _scores_shape(q, k))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)  # (..., L_q, d_v)
    if mask is not None:
        # Some kernels return NaN for a row with no allowed key; make it zero on every backend.
        out = out.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return out
