"""Notebook 01: the sinusoidal position table, and how similar one position is to all others."""

from __future__ import annotations

from .. import plots
from ..positions import sinusoidal_positions
from ._display import showing

#: What the notebooks reach as ``widgets.<name>``.
__all__ = ["POSITIONS_D_MODELS", "POSITIONS_SEQ_LEN", "POSITIONS_STEP", "explore_positions", "positions_view"]

POSITIONS_D_MODELS = (8, 16, 32, 64, 128, 256)
POSITIONS_SEQ_LEN = 64
POSITIONS_STEP = 9  # the position slider moves in steps of 9: 0, 9, ..., 63


def positions_view(d_model: int = 64, position: int = 14, seq_len: int = POSITIONS_SEQ_LEN):
    """The sinusoidal table with one position highlighted, and that position's similarity to all others.

    Left: the table ``(seq_len, d_model)`` as a heatmap, the chosen row outlined. Right: the cosine
    similarity between the chosen position's vector and every position's vector. Moving the position
    slides the same curve along: the similarity depends only on the offset.

    Args:
        d_model: width of the position vectors (even).
        position: the highlighted position, ``0 <= position < seq_len``.
        seq_len: number of positions drawn.

    Returns:
        the matplotlib Figure.
    """
    if not 0 <= position < seq_len:
        raise ValueError(f"position must be in [0, {seq_len}), got {position}")
    table = sinusoidal_positions(seq_len, d_model)  # (L, d_model)
    unit = table / table.norm(dim=-1, keepdim=True)  # every row has norm sqrt(d_model/2)
    similarity = unit @ unit[position]  # (L,)
    return plots.positions_panel(table, position, similarity)


def explore_positions():
    """Sliders for d_model and a position, wired to :func:`positions_view`."""
    import ipywidgets

    return ipywidgets.interactive(
        showing(positions_view),
        d_model=ipywidgets.Dropdown(options=POSITIONS_D_MODELS, value=64, description="d_model"),
        position=ipywidgets.IntSlider(value=14, min=0, max=POSITIONS_SEQ_LEN - 1, step=POSITIONS_STEP,
                                      description="position", continuous_update=False),
    )
