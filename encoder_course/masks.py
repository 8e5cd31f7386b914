"""Attention masks. Convention: bool, **True = may attend**, as ``F.scaled_dot_product_attention``.

``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer`` use the opposite convention
(True = ignore); :func:`encoder_course.interop.to_torch_padding_mask` is the one place that converts.
"""

from __future__ import annotations

import torch

from ._validate import require_int, require_positive_int, require_token_ids


def padding_mask(token_ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Mask that lets every query attend to the real (non-padding) tokens only.

    Args:
        token_ids: integer token ids.
        pad_id: the id used for padding.

    Shape:
        ``token_ids`` ``(B, L)``; returns bool ``(B, 1, 1, L)``, True where the token is real,
        ready to broadcast over heads and queries of the ``(B, H, L, L)`` scores.
    """
    require_token_ids("token_ids", token_ids)
    require_int("pad_id", pad_id)
    return (token_ids != pad_id)[:, None, None, :]  # (B, 1, 1, L)


def causal_mask(length: int, device=None) -> torch.Tensor:
    """Mask that lets position ``i`` attend to positions ``0..i`` only (decoders, not encoders).

    Shape:
        returns bool ``(L, L)``, True on and below the diagonal.
    """
    require_positive_int("length", length)
    return torch.ones(length, length, dtype=torch.bool, device=device).tril()  # (L, L)


def sliding_window_mask(length: int, window: int, device=None) -> torch.Tensor:
    """Mask of local attention: each position sees the ``window // 2`` positions on either side, and itself.

    ModernBERT's convention: a window of 128 lets a token attend 64 tokens back and 64 ahead. So a window
    as long as the sequence still keeps its two ends apart; it takes ``window >= 2 * (L - 1)`` for every
    position to see every other one.

    Shape:
        returns bool ``(L, L)``, True where ``|i - j| <= window // 2``.
    """
    require_positive_int("length", length)
    require_positive_int("window", window)
    positions = torch.arange(length, device=device)  # (L,)
    offset = positions[:, None] - positions[None, :]  # (L, L): query minus key
    return offset.abs() <= window // 2  # (L, L)
