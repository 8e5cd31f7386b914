"""Notebook 09: the cost explorer (formulas and FLOP counts from :mod:`encoder_course.measure.cost`)."""

from __future__ import annotations

import torch

from .. import plots
from ..measure.cost import crossover_length, layer_flops, measured_layer_flops, score_bytes
from ._display import show_figure

#: What the notebooks reach as ``widgets.<name>``.
__all__ = ["COST_D_MODELS", "COST_LENGTHS", "cost_view", "explore_cost"]

COST_LENGTHS = (128, 256, 512, 1024, 2048, 4096, 8192, 16384)
COST_D_MODELS = (384, 768, 1024)


def cost_view(seq_len: int = 512, d_model: int = 768):
    """Predicted FLOPs per component and score memory of one layer, with measured points at ``seq_len``.

    The layer has ``d_model / 64`` heads and ``d_ff = 4 d_model`` (BERT's proportions). The lines
    are :func:`encoder_course.layer_flops` and :func:`encoder_course.score_bytes`; the dots are
    torch's FLOP counter run on a real step-by-step layer (on the ``meta`` device: shapes only,
    so any L is instant) and the ``nbytes`` of score tensors of that shape (also on ``meta``).

    Returns:
        the matplotlib Figure.
    """
    if seq_len not in COST_LENGTHS:
        raise ValueError(f"seq_len must be one of {COST_LENGTHS}, got {seq_len}")
    if d_model not in COST_D_MODELS:
        raise ValueError(f"d_model must be one of {COST_D_MODELS}, got {d_model}")
    n_heads, d_ff = d_model // 64, 4 * d_model
    lengths = [2**i for i in range(6, 16)]  # 64 ... 32768
    per_length = [layer_flops(L, d_model, d_ff) for L in lengths]
    formula = {key: [f[key] for f in per_length] for key in ("projections", "scores", "weighted_values", "ffn")}
    measured_at = measured_layer_flops(seq_len, d_model, n_heads, d_ff)
    kinds = {"one head, float16": (1, torch.float16), f"{n_heads} heads, float16": (n_heads, torch.float16),
             f"{n_heads} heads, float32": (n_heads, torch.float32)}
    memory = {label: [score_bytes(L, h, dtype=dt) for L in lengths] for label, (h, dt) in kinds.items()}
    memory_at = {label: torch.empty(1, h, seq_len, seq_len, dtype=dt, device="meta").nbytes
                 for label, (h, dt) in kinds.items()}
    f = layer_flops(seq_len, d_model, d_ff)
    share = (f["scores"] + f["weighted_values"]) / f["total"]
    fp16_all = memory_at[f"{n_heads} heads, float16"]
    title = (f"d_model {d_model}, {n_heads} heads, L = {seq_len}: {f['total'] / 1e9:,.1f} GFLOP per layer, "
             f"L² part {share:.0%}; float16 scores {fp16_all / 2**20:,.0f} MiB")
    return plots.cost_overview(seq_len, lengths, formula, measured_at, memory, memory_at,
                               crossover_length(d_model, d_ff), title)


def explore_cost():
    """A sequence-length slider and a width, wired to :func:`cost_view`."""
    import ipywidgets as W

    seq_len = W.SelectionSlider(options=COST_LENGTHS, value=512, description="L",
                                continuous_update=False)
    d_model = W.Dropdown(options=COST_D_MODELS, value=768, description="d_model")
    out = W.interactive_output(lambda seq_len, d_model: show_figure(cost_view(seq_len, d_model)),
                               {"seq_len": seq_len, "d_model": d_model})
    return W.VBox([W.HBox([seq_len, d_model]), out])
