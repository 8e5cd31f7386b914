"""Notebook 04: the heads explorer (the random encoder is :mod:`encoder_course.measure.head_maps`)."""

from __future__ import annotations

from .. import plots
from ..measure.head_maps import HEAD_COUNT, HEAD_LAYERS, HEAD_SENTENCES, head_weights
from ._display import show_figure

#: What the notebooks reach as ``widgets.<name>``.
__all__ = ["explore_heads", "heads_view"]


def heads_view(head: int, sentence: str = HEAD_SENTENCES[0], layer: int = 0, seed: int = 0):
    """Callback of :func:`explore_heads`: one head's attention map and every head's entropy.

    Args:
        head: which of the 8 heads to show (0 to 7).
        sentence: one of ``HEAD_SENTENCES``.
        layer: 0 or 1.
        seed: which random encoder (the weights are random, not trained).

    Returns:
        a matplotlib Figure.
    """
    if not 0 <= int(head) < HEAD_COUNT:
        raise ValueError(f"head must be in [0, {HEAD_COUNT}), got {head}")
    weights = head_weights(sentence, int(layer), seed)
    return plots.head_view_figure(weights, int(head), sentence.split(), layer=int(layer),
                                  note=" (random weights)")


def explore_heads():
    """Pick a head, a sentence and a layer of a small RANDOM encoder and see that head's attention."""
    import ipywidgets as W

    head = W.IntSlider(value=0, min=0, max=HEAD_COUNT - 1, step=1, description="head",
                       continuous_update=False)
    sentence = W.Dropdown(options=list(HEAD_SENTENCES), value=HEAD_SENTENCES[0], description="sentence")
    layer = W.ToggleButtons(options=list(range(HEAD_LAYERS)), value=0, description="layer")
    out = W.interactive_output(
        lambda head, sentence, layer: show_figure(heads_view(head, sentence, layer)),
        {"head": head, "sentence": sentence, "layer": layer},
    )
    return W.VBox([W.HBox([head, layer]), sentence, out])
