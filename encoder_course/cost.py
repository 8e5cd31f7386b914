"""Analytic cost of an encoder layer: FLOPs per component and bytes of the score matrices.

A multiply-accumulate counts as 2 FLOPs, as torch's ``FlopCounterMode`` counts a matmul.
Softmax, LayerNorm, activations, biases and residual adds are left out: they are O(L d) or
O(L^2) elementwise work, small next to the matrix products.
"""

from __future__ import annotations

import torch

from ._validate import require_positive_int


def layer_flops(seq_len: int, d_model: int, d_ff: int, batch: int = 1, gated: bool = False) -> dict[str, int]:
    """Forward FLOPs of one encoder layer's matrix products, per component.

    Args:
        seq_len: L.
        d_model: model width.
        d_ff: feed-forward hidden width.
        batch: number of sequences.
        gated: a gated FFN (SwiGLU) has a third ``d_model x d_ff`` matrix.

    Returns:
        a dict ``projections`` (Q, K, V, O: 8 L d^2), ``scores`` (Q K^T: 2 L^2 d),
        ``weighted_values`` (A V: 2 L^2 d), ``ffn`` (4 L d d_ff, 6 L d d_ff gated), and ``total``.
        The head count does not appear: heads split d_model, they do not add work.
    """
    for name, value in (("seq_len", seq_len), ("d_model", d_model), ("d_ff", d_ff), ("batch", batch)):
        require_positive_int(name, value)
    L, d, b = seq_len, d_model, batch
    out = {
        "projections": b * 8 * L * d * d,
        "scores": b * 2 * L * L * d,
        "weighted_values": b * 2 * L * L * d,
        "ffn": b * (6 if gated else 4) * L * d * d_ff,
    }
    out["total"] = sum(out.values())
    return out


def crossover_length(d_model: int, d_ff: int) -> int:
    """The L where attention's quadratic part (4 L^2 d) equals the rest of the layer (8 L d^2 + 4 L d d_ff).

    Solving 4 L^2 d = 8 L d^2 + 4 L d d_ff gives L = 2 d + d_ff, i.e. 6 d when d_ff = 4 d.
    """
    require_positive_int("d_model", d_model)
    require_positive_int("d_ff", d_ff)
    return 2 * d_model + d_ff


def bytes_per_element(dtype: torch.dtype) -> int:
    """Size of one element of ``dtype`` in bytes."""
    return torch.empty((), dtype=dtype).element_size()


def score_bytes(seq_len: int, n_heads: int = 1, batch: int = 1, dtype: torch.dtype = torch.float32) -> int:
    """Bytes to hold the ``(B, H, L, L)`` score (or weight) matrices of one layer.

    Example: one head at L = 4096 in float16 is 4096^2 x 2 bytes = 32 MiB.
    """
    for name, value in (("seq_len", seq_len), ("n_heads", n_heads), ("batch", batch)):
        require_positive_int(name, value)
    return batch * n_heads * seq_len * seq_len * bytes_per_element(dtype)
