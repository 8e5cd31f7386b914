"""The position-wise feed-forward network (Vaswani et al., 2017, section 3.3).

``FFN(h) = W2 act(W1 h + b1) + b2``, applied to every position with the same weights and no
mixing between positions. Attention mixes positions; the FFN mixes features.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ._validate import require_choice, require_positive_int, require_probability, require_width

ACTIVATIONS = ("relu", "gelu", "swiglu", "geglu")
GATED = ("swiglu", "geglu")  # a gate projection w3 multiplies the activation


class FeedForward(nn.Module):
    """Two linear maps with a non-linearity between them.

    Args:
        d_model: input and output width.
        d_ff: hidden width (4 x d_model in the 2017 paper and BERT, a convention).
        activation: ``"relu"`` (2017), ``"gelu"`` (exact erf GELU, BERT), or a gated unit that adds the
            gate projection ``w3``: ``"swiglu"``, ``w2(silu(w1 h) * w3 h)``, or ``"geglu"`` (ModernBERT),
            ``w2(gelu(w1 h) * w3 h)``.
        dropout: dropout after the activation (training only), as ``nn.TransformerEncoderLayer``.
        bias: False for linear maps without biases (ModernBERT).

    Shape:
        input ``(B, L, d_model)``; output the same.
    """

    def __init__(self, d_model: int, d_ff: int, activation: str = "gelu", dropout: float = 0.0, bias: bool = True):
        super().__init__()
        require_positive_int("d_model", d_model)
        require_positive_int("d_ff", d_ff)
        require_choice("activation", activation, ACTIVATIONS)
        require_probability("dropout", dropout)
        self.d_model, self.d_ff, self.activation = d_model, d_ff, activation
        self.w1 = nn.Linear(d_model, d_ff, bias=bias)
        self.w2 = nn.Linear(d_ff, d_model, bias=bias)
        if activation in GATED:
            self.w3 = nn.Linear(d_model, d_ff, bias=bias)  # the gate
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        require_width("x", x, self.d_model)
        h = self.w1(x)  # (B, L, d_ff)
        if self.activation == "relu":
            h = F.relu(h)
        elif self.activation == "gelu":
            h = F.gelu(h)  # exact: x * Phi(x), with the erf
        elif self.activation == "swiglu":
            h = F.silu(h) * self.w3(x)  # (B, L, d_ff)
        else:  # geglu
            h = F.gelu(h) * self.w3(x)  # (B, L, d_ff)
        return self.w2(self.dropout(h))  # (B, L, d_model)
