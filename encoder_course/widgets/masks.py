"""Notebook 03: the padding explorer (the experiment is :mod:`encoder_course.measure.padding_drift`)."""

from __future__ import annotations

from .. import plots
from ..measure.padding_drift import PADDING_MAX, PADDING_SENTENCE, padded_outputs, worst_drift
from ._display import show_figure

#: What the notebooks reach as ``widgets.<name>``.
__all__ = ["explore_padding", "padding_view"]


def padding_view(use_mask: bool, pad_length: int, seed: int = 0):
    """Callback of :func:`explore_padding`: attention heatmap and the real tokens' drift.

    Args:
        use_mask: pass the padding mask to the encoder or not.
        pad_length: padding positions appended to the four-token sentence (0 to 124).
        seed: which random small encoder to use.

    Returns:
        a matplotlib Figure.
    """
    if not 0 <= int(pad_length) <= PADDING_MAX:
        raise ValueError(f"pad_length must be in [0, {PADDING_MAX}], got {pad_length}")
    weights, drift = padded_outputs(bool(use_mask), int(pad_length), seed)
    # A fixed drift axis (the worst unmasked drift over a coarse grid) makes the toggle obvious.
    top = 1.15 * max(worst_drift(seed), float(drift.max()), 1e-3)
    return plots.padding_drift_figure(weights, drift, list(PADDING_SENTENCE), len(PADDING_SENTENCE),
                                      bool(use_mask), top)


def explore_padding():
    """Toggle the padding mask and change the padding length; watch attention and the drift."""
    import ipywidgets as W

    use_mask = W.Checkbox(value=False, description="use padding mask", indent=False)
    pad_length = W.IntSlider(value=3, min=0, max=PADDING_MAX, step=1, description="padding",
                             continuous_update=False)
    out = W.interactive_output(lambda use_mask, pad_length: show_figure(padding_view(use_mask, pad_length)),
                               {"use_mask": use_mask, "pad_length": pad_length})
    return W.VBox([W.HBox([use_mask, pad_length]), out])
