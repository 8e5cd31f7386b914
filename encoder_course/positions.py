"""Position information: sinusoidal tables, learned positions, and rotary positions.

Self-attention alone is permutation-equivariant: shuffle the tokens and the outputs shuffle the
same way. Adding a position vector to each token embedding makes order visible
(Vaswani et al., 2017, section 3.5).
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import (
    require_callable,
    require_even,
    require_length,
    require_positive_int,
    require_positive_number,
    require_rotary_input,
    require_width,
)


def sinusoidal_positions(seq_len: int, d_model: int) -> torch.Tensor:
    """The fixed sinusoidal position table of the original Transformer.

    ``PE[pos, 2i] = sin(pos / 10000^(2i/d_model))`` and ``PE[pos, 2i+1] = cos(...)``, with the sine
    and cosine of each frequency interleaved and positions counted from 0 (section 3.5).

    Args:
        seq_len: number of positions (rows).
        d_model: width of each position vector (columns); must be even.

    Shape:
        returns ``(seq_len, d_model)``, float32.
    """
    require_positive_int("seq_len", seq_len)
    require_positive_int("d_model", d_model)
    require_even("d_model", d_model, "sin/cos pairs")
    pos = torch.arange(seq_len, dtype=torch.float32).unsqueeze(1)  # (L, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)  # (d_model/2,)
    inv_freq = 10000.0 ** (-two_i / d_model)  # (d_model/2,): 1 / 10000^(2i/d_model)
    angles = pos * inv_freq  # (L, d_model/2)
    pe = torch.empty(seq_len, d_model, dtype=torch.float32)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    return pe


class SinusoidalPositions(nn.Module):
    """Adds the fixed sinusoidal table to token embeddings (no parameters).

    Args:
        max_len: longest sequence the table covers.
        d_model: embedding width.
        make_table: the function that makes the ``(max_len, d_model)`` table (:func:`sinusoidal_positions`,
            or a learner's own from notebook 01).

    Shape:
        input ``(B, L, d_model)`` with ``L <= max_len``; output the same.
    """

    def __init__(self, max_len: int, d_model: int, make_table=sinusoidal_positions):
        super().__init__()
        require_callable("make_table", make_table)
        self.max_len, self.d_model = max_len, d_model
        self.register_buffer("table", make_table(max_len, d_model), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        require_width("x", x, self.d_model)
        require_length(x.shape[1], self.max_len)
        return x + self.table[: x.shape[1]].to(x.dtype)  # (B, L, d_model)


class LearnedPositions(nn.Module):
    """Adds one learned vector per position (BERT's absolute positions).

    Args:
        max_len: number of learned position vectors.
        d_model: embedding width.

    Shape:
        input ``(B, L, d_model)`` with ``L <= max_len``; output the same.
    """

    def __init__(self, max_len: int, d_model: int):
        super().__init__()
        require_positive_int("max_len", max_len)
        require_positive_int("d_model", d_model)
        self.max_len, self.d_model = max_len, d_model
        self.weight = nn.Parameter(torch.randn(max_len, d_model) * 0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        require_width("x", x, self.d_model)
        require_length(x.shape[1], self.max_len)
        return x + self.weight[: x.shape[1]]  # (B, L, d_model)


def apply_rotary(x: torch.Tensor, positions: torch.Tensor | None = None, base: float = 10000.0) -> torch.Tensor:
    """Rotary position embedding (RoPE, Su et al. 2021): rotate each feature pair by ``pos * freq``.

    Features ``2i`` and ``2i+1`` form a pair, turned by the angle ``pos * base^(-2i/d)``: the frequencies of
    the sinusoidal table. Applied to queries and keys (never to values), it makes ``q . k`` depend on the
    offset between their positions rather than on the absolute positions.

    Args:
        x: queries or keys, last dimension even.
        positions: the position of each row, integers ``(L,)`` (defaults to ``0..L-1``).
        base: the frequency base, as in the sinusoidal table.

    Shape:
        ``x`` ``(..., L, d)``; returns the same shape and dtype.
    """
    require_rotary_input(x, positions)
    require_positive_number("base", base)
    d, length = x.shape[-1], x.shape[-2]
    if positions is None:
        positions = torch.arange(length, device=x.device)
    inv_freq = base ** (-torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d)  # (d/2,)
    angles = positions.to(torch.float32).unsqueeze(-1) * inv_freq  # (L, d/2)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)  # (L, d/2) each
    even, odd = x[..., 0::2], x[..., 1::2]  # (..., L, d/2) each
    out = torch.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out  # (..., L, d)


rotate_pairs = apply_rotary  # notebook 01's name for it, from before notebook 13 made it an exercise
