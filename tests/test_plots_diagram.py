"""The encoder map of notebooks 00 and 07: both layouts draw, with the right parts and labels."""

import matplotlib.pyplot as plt
import pytest
from matplotlib.figure import Figure

from encoder_course import plots


def _texts(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts]


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("n_layers", [None, 6])
def test_draw_encoder_block_parts(norm_first, n_layers):
    fig = plots.draw_encoder_block(norm_first=norm_first, n_layers=n_layers)
    try:
        assert isinstance(fig, Figure)
        texts = _texts(fig)
        norms = [t for t in texts if "LayerNorm" in t]
        # two per layer, plus the final LayerNorm after a pre-LN stack
        assert len(norms) == (3 if norm_first else 2)
        assert ("final LayerNorm" in texts) == norm_first
        assert any("multi-head" in t for t in texts)
        assert any("feed-forward" in t for t in texts)
        assert any("embedding" in t for t in texts)
        assert texts.count("+") == 2  # the two residual adds
        assert texts.count("L × d_model") == (8 if norm_first else 7)  # every arrow after the embedding
        assert f"× {'N' if n_layers is None else n_layers}" in texts
        title = fig.axes[0].get_title()
        assert ("pre-LN" if norm_first else "post-LN") in title
    finally:
        plt.close(fig)


def test_draw_encoder_block_into_given_axes():
    fig, axes = plt.subplots(1, 2, figsize=(9, 6))
    try:
        assert plots.draw_encoder_block(False, ax=axes[0]) is fig
        assert plots.draw_encoder_block(True, n_layers=12, ax=axes[1]) is fig
        assert "post-LN" in axes[0].get_title() and "pre-LN" in axes[1].get_title()
    finally:
        plt.close(fig)
