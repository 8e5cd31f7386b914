"""Notebook 11: real attention maps of all-MiniLM-L6-v2
(computed by :meth:`encoder_course.interop.pretrained.SentenceEncoder.attention`)."""

from __future__ import annotations

from .. import plots
from ._display import show_figure

#: What the notebooks reach as ``widgets.<name>``.
__all__ = ["REAL_ATTENTION_SENTENCES", "explore_real_attention", "real_attention_view"]

REAL_ATTENTION_SENTENCES = (
    "The bank approved it",
    "We sat on the bank of the river.",
    "The bank approved the loan because it was safe.",
    "The animal didn't cross the street because it was too tired.",
)


def real_attention_view(attention, sentence_index: int = 0, layer: int = 0, head: int = 0):
    """Callback of :func:`explore_real_attention`: one head of the real model on one sentence.

    Args:
        attention: precomputed maps, as returned by
            ``encoder_course.interop.pretrained.SentenceEncoder.attention(sentences)`` (a list of dicts
            with ``sentence``, ``tokens`` and ``weights`` ``(n_layers, H, L, L)``), so the
            callback only draws.
        sentence_index: which sentence.
        layer: which layer (0 to 5 for all-MiniLM-L6-v2).
        head: which head (0 to 11).

    Returns:
        a matplotlib Figure.
    """
    if not 0 <= int(sentence_index) < len(attention):
        raise ValueError(f"sentence_index must be in [0, {len(attention)}), got {sentence_index}")
    item = attention[int(sentence_index)]
    n_layers, n_heads = item["weights"].shape[:2]
    if not 0 <= int(layer) < n_layers:
        raise ValueError(f"layer must be in [0, {n_layers}), got {layer}")
    if not 0 <= int(head) < n_heads:
        raise ValueError(f"head must be in [0, {n_heads}), got {head}")
    return plots.real_attention_figure(item["weights"][int(layer)], int(head), item["tokens"], int(layer))


def explore_real_attention(attention):
    """Pick a sentence, a layer and a head of the real all-MiniLM-L6-v2 and see its attention map.

    Args:
        attention: precomputed maps from ``SentenceEncoder.attention(sentences)``.
    """
    import ipywidgets as W

    n_layers, n_heads = attention[0]["weights"].shape[:2]
    sentence = W.Dropdown(options=[(item["sentence"], i) for i, item in enumerate(attention)], value=0,
                          description="sentence", layout=W.Layout(width="95%"))
    layer = W.IntSlider(value=0, min=0, max=n_layers - 1, step=1, description="layer",
                        continuous_update=False)
    head = W.IntSlider(value=0, min=0, max=n_heads - 1, step=1, description="head",
                       continuous_update=False)
    out = W.interactive_output(
        lambda sentence_index, layer, head: show_figure(real_attention_view(attention, sentence_index, layer, head)),
        {"sentence_index": sentence, "layer": layer, "head": head},
    )
    return W.VBox([sentence, W.HBox([layer, head]), out])
