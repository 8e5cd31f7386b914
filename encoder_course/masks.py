"""Attention masks. Convention: bool, **True = may attend**, as ``F.scaled_dot_product_attention``.

``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer`` use the opposite convention
(True = ignore); :func:`to_torch_padding_mask` is the one place that converts.
"""

from __future__ import annotations

import torch

from ._validate import require_positive_int, require_tensor, shape_str


def padding_mask(token_ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Mask that lets every query attend to the real (non-padding) tokens only.

    Args:
        token_ids: integer token ids.
        pad_id: the id used for padding.

    Shape:
        ``token_ids`` ``(B, L)``; returns bool ``(B, 1, 1, L)``, True where the token is real,
        ready to broadcast over heads and queries of the ``(B, H, L, L)`` scores.
    """
    require_tensor("token_ids", token_ids)
    if token_ids.is_floating_point() or token_ids.dtype == torch.bool:
        raise TypeError(f"token_ids must be an integer tensor, got dtype {token_ids.dtype}")
    if token_ids.dim() != 2:
        raise ValueError(f"token_ids must have shape (B, L), got {shape_str(token_ids)}")
    return (token_ids != pad_id)[:, None, None, :]  # (B, 1, 1, L)


def causal_mask(length: int, device=None) -> torch.Tensor:
    """Mask that lets position ``i`` attend to positions ``0..i`` only (decoders, not encoders).

    Shape:
        returns bool ``(L, L)``, True on and below the diagonal.
    """
    require_positive_int("length", length)
    return torch.ones(length, length, dtype=torch.bool, device=device).tril()  # (L, L)


def to_torch_padding_mask(mask: torch.Tensor) -> torch.Tensor:
    """Convert our padding mask to torch's ``key_padding_mask`` (True = ignore).

    Used only where we compare with ``nn.MultiheadAttention`` / ``nn.TransformerEncoderLayer``.

    Shape:
        ``mask`` ``(B, 1, 1, L)`` or ``(B, L)``; returns bool ``(B, L)``.
    """
    require_tensor("mask", mask)
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must have dtype torch.bool, got {mask.dtype}")
    if mask.dim() == 4:
        if mask.shape[1] != 1 or mask.shape[2] != 1:
            raise ValueError(f"expected a padding mask of shape (B, 1, 1, L), got {shape_str(mask)}")
        mask = mask[:, 0, 0, :]  # (B, L)
    if mask.dim() != 2:
        raise ValueError(f"expected a padding mask of shape (B, 1, 1, L) or (B, L), got {shape_str(mask)}")
    return ~mask  # (B, L), True = ignore
