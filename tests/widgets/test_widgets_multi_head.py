"""encoder_course.widgets.multi_head: the heads explorer of notebook 04, every control combination.

The experiment it draws is tested in test_head_maps.py.
"""

import itertools

import matplotlib.pyplot as plt
import pytest
from matplotlib.figure import Figure

from encoder_course import widgets
from encoder_course.measure.head_maps import HEAD_COUNT, HEAD_LAYERS, HEAD_SENTENCES


@pytest.mark.parametrize(
    "head,sentence,layer",
    list(itertools.product(range(HEAD_COUNT), HEAD_SENTENCES, range(HEAD_LAYERS))),
)
def test_heads_view_every_combination(head, sentence, layer):
    fig = widgets.heads_view(head, sentence, layer)
    try:
        assert isinstance(fig, Figure)
        assert f"head {head}" in fig.axes[0].get_title()
    finally:
        plt.close(fig)


def test_heads_view_rejects_bad_values():
    with pytest.raises(ValueError, match="head"):
        widgets.heads_view(HEAD_COUNT, HEAD_SENTENCES[0], 0)
    with pytest.raises(ValueError, match="unknown words"):
        widgets.heads_view(0, "a sentence nobody wrote", 0)


def test_explore_heads_uses_real_controls(controls_of):
    ipywidgets = pytest.importorskip("ipywidgets")
    heads = controls_of(widgets.explore_heads())
    assert any(isinstance(c, ipywidgets.IntSlider) and c.max == HEAD_COUNT - 1 for c in heads)
    assert any(isinstance(c, ipywidgets.Dropdown) for c in heads)
    plt.close("all")
