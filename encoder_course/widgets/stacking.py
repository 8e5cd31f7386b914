"""Notebook 08: the configuration explorer
(the counts are :func:`encoder_course.measure.counting.analytic_parameter_counts`)."""

from __future__ import annotations

from .. import plots
from ..encoder import EncoderConfig
from ..measure.counting import analytic_parameter_counts
from ._display import showing

#: What the notebooks reach as ``widgets.<name>``.
__all__ = [
    "CONFIG_D_MODELS", "CONFIG_FF_RATIOS", "CONFIG_HEADS", "CONFIG_LAYERS", "CONFIG_VOCABS", "config_view",
    "explore_config",
]

CONFIG_LAYERS = (1, 6, 12, 24)
CONFIG_D_MODELS = (256, 384, 768, 1024)
CONFIG_HEADS = (4, 8, 12, 16)
CONFIG_FF_RATIOS = (("2", 2.0), ("8/3", 8 / 3), ("4", 4.0))
CONFIG_VOCABS = (8000, 30522, 50257)


def config_view(n_layers: int = 12, d_model: int = 768, n_heads: int = 12, d_ff_ratio: float = 4.0,
                vocab_size: int = 30522):
    """The parameter breakdown of a BERT-style encoder with the given sizes.

    Everything not named is as BERT-base (learned positions up to 512, two token types, post-LN,
    GELU); ``d_ff = round(d_ff_ratio * d_model)``.

    Returns:
        the matplotlib Figure (a message instead of bars when ``n_heads`` does not divide ``d_model``).
    """
    d_ff = round(d_ff_ratio * d_model)
    try:
        config = EncoderConfig.bert_base().replace(n_layers=n_layers, d_model=d_model, n_heads=n_heads,
                                                   d_ff=d_ff, vocab_size=vocab_size)
    except ValueError as error:
        return plots.config_error_figure(str(error))
    counts = analytic_parameter_counts(config)
    title = (f"{n_layers} layers, d_model {d_model}, {n_heads} heads (heads add no parameters), "
             f"d_ff {d_ff}, vocab {vocab_size:,}\nTotal")
    return plots.parameter_breakdown(counts, title=title)


def explore_config():
    """Controls for the sizes of an encoder, wired to :func:`config_view`."""
    import ipywidgets

    return ipywidgets.interactive(
        showing(config_view),
        n_layers=ipywidgets.SelectionSlider(options=CONFIG_LAYERS, value=12, description="layers",
                                            continuous_update=False),
        d_model=ipywidgets.Dropdown(options=CONFIG_D_MODELS, value=768, description="d_model"),
        n_heads=ipywidgets.Dropdown(options=CONFIG_HEADS, value=12, description="heads"),
        d_ff_ratio=ipywidgets.Dropdown(options=CONFIG_FF_RATIOS, value=4.0, description="d_ff / d_model"),
        vocab_size=ipywidgets.Dropdown(options=CONFIG_VOCABS, value=30522, description="vocabulary"),
    )
