"""Layer normalisation (Ba et al., 2016), as used after (post-LN) or before (pre-LN) each sublayer.

Each token is normalised on its own, over its ``d_model`` features: never across the sequence and
never across the batch, so a token's output does not depend on its neighbours or the batch size.
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import require_positive_int, require_tensor, shape_str


class LayerNorm(nn.Module):
    """``gamma * (x - mean) / sqrt(var + eps) + beta`` over the last dimension.

    The variance is the biased one (divide by ``d_model``) and ``eps`` sits inside the square root,
    exactly as ``nn.LayerNorm``.

    Args:
        d_model: size of the last dimension.
        eps: added to the variance for numerical safety (torch's default 1e-5; BERT uses 1e-12).

    Shape:
        input ``(..., d_model)``; output the same.
    """

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        require_positive_int("d_model", d_model)
        if not eps > 0:
            raise ValueError(f"eps must be positive, got {eps}")
        self.d_model, self.eps = d_model, eps
        self.weight = nn.Parameter(torch.ones(d_model))  # gamma
        self.bias = nn.Parameter(torch.zeros(d_model))  # beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        require_tensor("x", x, floating=True)
        if x.dim() == 0 or x.shape[-1] != self.d_model:
            raise ValueError(f"x last dimension must be d_model ({self.d_model}), got shape {shape_str(x)}")
        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
        centred = x - mean  # (..., d_model)
        # Biased variance (divide by d_model), from the centred values we need anyway.
        var = centred.square().mean(dim=-1, keepdim=True)  # (..., 1)
        x_hat = centred * torch.rsqrt(var + self.eps)  # (..., d_model)
        return x_hat * self.weight + self.bias

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}"
