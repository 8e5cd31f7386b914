"""Notebooks 00 and 02: one attention row, and what the 1/sqrt(d_k) scale does to it."""

from __future__ import annotations

import math

import torch

from .. import plots
from ._display import showing

#: What the notebooks reach as ``widgets.<name>``.
__all__ = ["ATTENTION_SCALE_D_KS", "ATTENTION_SCALE_EXPONENTS", "attention_scale_view", "explore_attention_scale"]

ATTENTION_SCALE_EXPONENTS = tuple(range(-6, 1))  # scale = 2**e: 1/64 ... 1
ATTENTION_SCALE_D_KS = (16, 64, 256, 1024)


def attention_scale_view(scale: float = 0.125, d_k: int = 64, n_keys: int = 8, seed: int = 0):
    """One query's attention row over ``n_keys`` random keys, with the scores multiplied by ``scale``.

    Queries and keys have independent unit-variance entries, so the raw scores ``q . k`` have
    variance ``d_k``; ``scale = 1/sqrt(d_k)`` is the Transformer's choice.

    Args:
        scale: factor applied to the raw scores.
        d_k: width of the query and keys.
        n_keys: number of keys.
        seed: seed of the random query and keys (the same draw for every scale).

    Returns:
        the matplotlib Figure (bars of the weights, entropy in the title).
    """
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(d_k, generator=generator)  # (d_k,)
    k = torch.randn(n_keys, d_k, generator=generator)  # (n_keys, d_k)
    weights = torch.softmax(scale * (k @ q), dim=-1)  # (n_keys,)
    title = f"scale {scale:.4g}, d_k {d_k} (1/√d_k = {1 / math.sqrt(d_k):.4g})"
    return plots.attention_row_bars(weights, [f"k{i}" for i in range(n_keys)], title=title)


def explore_attention_scale():
    """A log slider for the scale and a choice of d_k, wired to :func:`attention_scale_view`."""
    import ipywidgets

    return ipywidgets.interactive(
        showing(attention_scale_view),
        scale=ipywidgets.FloatLogSlider(value=0.125, base=2, min=ATTENTION_SCALE_EXPONENTS[0],
                                        max=ATTENTION_SCALE_EXPONENTS[-1], step=1, description="scale",
                                        continuous_update=False),
        d_k=ipywidgets.Dropdown(options=ATTENTION_SCALE_D_KS, value=64, description="d_k"),
    )
