"""One encoder layer: self-attention and feed-forward, each wrapped in a residual and a LayerNorm.

Post-LN (``norm_first=False``, the 2017 paper and BERT)::

    x = norm1(x + dropout(attn(x)))
    x = norm2(x + dropout(ffn(x)))

Pre-LN (``norm_first=True``, Xiong et al. 2020; GPT-2 and most recent models)::

    x = x + dropout(attn(norm1(x)))
    x = x + dropout(ffn(norm2(x)))

A pre-LN stack keeps an un-normalised residual stream, so it ends with a final LayerNorm
(see :class:`encoder_course.Encoder`).
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import require_probability
from .feed_forward import FeedForward
from .layer_norm import LayerNorm
from .multi_head import MultiHeadAttention


class EncoderBlock(nn.Module):
    """A Transformer encoder layer, post-LN or pre-LN.

    Args:
        d_model: model width.
        n_heads: attention heads (must divide ``d_model``).
        d_ff: hidden width of the feed-forward network.
        dropout: on attention weights, after the FFN activation, and on each sublayer's output
            before the residual add (training only), as ``nn.TransformerEncoderLayer``.
        norm_first: False for post-LN, True for pre-LN.
        activation: ``"relu"``, ``"gelu"`` or ``"swiglu"``.
        eps: LayerNorm epsilon.
        fast: attention and LayerNorm through PyTorch's fused kernels (True) or step by step.

    Shape:
        ``x`` ``(B, L, d_model)``, ``mask`` bool broadcastable to ``(B, H, L, L)``, True = may
        attend; returns ``(B, L, d_model)``.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        norm_first: bool = False,
        activation: str = "gelu",
        eps: float = 1e-5,
        fast: bool = True,
    ):
        super().__init__()
        require_probability("dropout", dropout)
        self.norm_first = bool(norm_first)
        self.attn = MultiHeadAttention(d_model, n_heads, dropout=dropout, fast=fast)
        self.ffn = FeedForward(d_model, d_ff, activation=activation, dropout=dropout)
        self.norm1 = LayerNorm(d_model, eps=eps, fast=fast)
        self.norm2 = LayerNorm(d_model, eps=eps, fast=fast)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Run the layer: attention, then the feed-forward network, each with its residual and norm."""
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), mask))  # (B, L, d_model)
            x = x + self.dropout2(self.ffn(self.norm2(x)))  # (B, L, d_model)
        else:
            x = self.norm1(x + self.dropout1(self.attn(x, mask)))  # (B, L, d_model)
            x = self.norm2(x + self.dropout2(self.ffn(x)))  # (B, L, d_model)
        return x

    def attention_weights(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """The weights ``(B, H, L, L)`` of this layer's attention for the input ``x`` (for plots)."""
        return self.attn.attention_weights(self.norm1(x) if self.norm_first else x, mask)
