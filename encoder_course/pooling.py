"""From token vectors to one vector per sentence: the average over the real tokens (mean pooling).

all-MiniLM-L6-v2 embeds a sentence as the mean of its token vectors; padding positions must not
count, or the same sentence would get a different embedding with more padding.
"""

from __future__ import annotations

import torch

from ._validate import require_pooling_inputs


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Average the token vectors of each sequence over its real tokens.

    Args:
        hidden: the encoder's output.
        mask: bool, True = real token; every token counts when it is None.

    Shape:
        ``hidden`` ``(B, L, d)``, ``mask`` ``(B, L)`` or ``(B, 1, 1, L)``; returns ``(B, d)``.
        A sequence with no real token gets zeros.
    """
    require_pooling_inputs(hidden, mask)
    if mask is None:
        return hidden.mean(dim=1)  # (B, d)
    keep = mask.reshape(hidden.shape[0], hidden.shape[1], 1).to(hidden.dtype)  # (B, L, 1)
    return (hidden * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1.0)  # (B, d)
