"""Multi-head self-attention (Vaswani et al., 2017, section 3.2.2).

Each head attends in its own ``d_head = d_model / n_heads`` subspace; the heads are concatenated
and mixed by the output projection ``w_o``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ._validate import (
    check_mask,
    require_callable,
    require_divisible,
    require_implementation,
    require_probability,
    require_rank,
    require_width,
)
from .attention import fused_attention, scaled_dot_product_attention
from .unpadding import Packed, packed_attention


class eval_mode:  # a context manager, lower-case like torch.no_grad
    """``with eval_mode(module):`` runs the block in eval mode (no dropout), then gives ``module`` its mode back."""

    def __init__(self, module: nn.Module):
        self.module, self.was_training = module, module.training

    def __enter__(self) -> nn.Module:
        return self.module.eval()

    def __exit__(self, *exc) -> None:
        self.module.train(self.was_training)


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Split the last dimension into heads and move heads before positions.

    Shape:
        ``(B, L, d_model)`` -> ``(B, H, L, d_head)``.
    """
    require_rank("x", x, 3, "(B, L, d_model)")
    require_divisible(x.shape[-1], n_heads)
    batch, length, d_model = x.shape
    x = x.view(batch, length, n_heads, d_model // n_heads)  # (B, L, H, d_head)
    return x.transpose(1, 2)  # (B, H, L, d_head)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`split_heads`: concatenate the heads back into one vector per position.

    Shape:
        ``(B, H, L, d_head)`` -> ``(B, L, H * d_head)``.
    """
    require_rank("x", x, 4, "(B, H, L, d_head)")
    batch, heads, length, d_head = x.shape
    x = x.transpose(1, 2)  # (B, L, H, d_head)
    return x.reshape(batch, length, heads * d_head)  # (B, L, d_model)


class MultiHeadAttention(nn.Module):
    """Multi-head self-attention with separate query, key, value and output projections.

    Args:
        d_model: model width; must be divisible by ``n_heads``.
        n_heads: number of heads.
        dropout: dropout on the attention weights (training only).
        implementation: ``"fused"``, PyTorch's fused attention kernel, or ``"eager"``, the step-by-step
            ``attention`` (which materialises the weights).
        attention: the step-by-step attention, ``attention(q, k, v, mask) -> (out, weights)``
            (:func:`scaled_dot_product_attention`, or a learner's own from notebook 02).
        bias: False for projections without biases (ModernBERT).
        rotary: None, or the function that rotates queries and keys by position,
            ``rotary(x, positions) -> x`` (:func:`~encoder_course.positions.apply_rotary`, or a learner's own
            from notebook 13), applied after the heads are split.

    Shape:
        ``x`` ``(B, L, d_model)``, ``mask`` bool broadcastable to ``(B, H, L, L)`` (True = may
        attend, e.g. :func:`padding_mask`'s ``(B, 1, 1, L)``); returns ``(B, L, d_model)``. A packed
        sequence (:mod:`~encoder_course.unpadding`) is ``x`` ``(1, T, d_model)`` with a
        :class:`~encoder_course.unpadding.Packed` in place of the mask.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, implementation: str = "fused",
                 attention=scaled_dot_product_attention, bias: bool = True, rotary=None):
        super().__init__()
        require_divisible(d_model, n_heads)
        require_probability("dropout", dropout)
        require_implementation(implementation)
        require_callable("attention", attention)
        if rotary is not None:
            require_callable("rotary", rotary)
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.dropout, self.implementation, self.attention, self.rotary = dropout, implementation, attention, rotary
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | Packed | None = None) -> torch.Tensor:
        """Attend from every position of ``x`` to every allowed position."""
        if isinstance(mask, Packed):
            return self._forward_packed(x, mask)  # (1, T, d_model)
        return self.forward_with_weights(x, mask, need_weights=False)[0]  # (B, L, d_model)

    def _forward_packed(self, x: torch.Tensor, packed: Packed) -> torch.Tensor:
        """Attention within each sentence of a packed sequence ``(1, T, d_model)``."""
        require_width("x", x, self.d_model)
        q, k, v = (split_heads(w(x), self.n_heads) for w in (self.w_q, self.w_k, self.w_v))  # (1, H, T, d_head)
        if self.rotary is not None:  # each token turned by its position in its own sentence
            q, k = self.rotary(q, packed.positions), self.rotary(k, packed.positions)
        p = self.dropout if self.training else 0.0

        def attend(qs, ks, vs, window):  # one sentence: (1, H, n, d_head) each, window None or (n, n)
            if self.implementation == "fused":
                return fused_attention(qs, ks, vs, window, dropout_p=p)
            heads, weights = self.attention(qs, ks, vs, window)
            return F.dropout(weights, p) @ vs if p > 0.0 else heads

        return self.w_o(merge_heads(packed_attention(q, k, v, packed, attend)))  # (1, T, d_model)

    def forward_with_weights(self, x: torch.Tensor, mask: torch.Tensor | None = None, need_weights: bool = True):
        """The output and the attention weights that made it, from one pass.

        The weights are the ones multiplied with the values: after dropout in training mode. The fused
        kernel never materialises them, so asking for them takes the step-by-step path.

        Returns:
            ``(out, weights)``: ``out`` ``(B, L, d_model)``; ``weights`` ``(B, H, L, L)`` (rows = queries),
            or None when ``need_weights`` is False.
        """
        q, k, v = self._heads(x, mask)  # (B, H, L, d_head) each
        p = self.dropout if self.training else 0.0
        if self.implementation == "fused" and not need_weights:
            heads, weights = fused_attention(q, k, v, mask, dropout_p=p), None  # (B, H, L, d_head)
        else:
            heads, weights = self.attention(q, k, v, mask)  # (B, H, L, d_head), (B, H, L, L)
            if p > 0.0:  # dropout on the weights: redo the weighted sum with the dropped weights
                weights = F.dropout(weights, p)  # (B, H, L, L)
                heads = weights @ v  # (B, H, L, d_head)
        out = self.w_o(merge_heads(heads))  # (B, L, d_model)
        return out, (weights if need_weights else None)

    def attention_weights(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """The attention weights of every head for ``x`` (from an eval-mode pass: no dropout), for plots.

        Shape:
            returns ``(B, H, L, L)``: one row per query, one column per key, rows summing to 1.
        """
        with eval_mode(self):
            return self.forward_with_weights(x, mask)[1]  # (B, H, L, L)

    def _heads(self, x: torch.Tensor, mask: torch.Tensor | None):
        """Project ``x`` to queries, keys and values, each split into heads (and check the mask)."""
        require_width("x", x, self.d_model)
        if mask is not None:
            check_mask(mask, (x.shape[0], self.n_heads, x.shape[1], x.shape[1]))
        q = split_heads(self.w_q(x), self.n_heads)  # (B, H, L, d_head)
        k = split_heads(self.w_k(x), self.n_heads)  # (B, H, L, d_head)
        v = split_heads(self.w_v(x), self.n_heads)  # (B, H, L, d_head)
        if self.rotary is not None:  # rotate queries and keys by position (never the values)
            q, k = self.rotary(q), self.rotary(k)  # (B, H, L, d_head) each
        return q, k, v
