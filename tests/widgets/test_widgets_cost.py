"""encoder_course.widgets.cost: the cost explorer of notebook 09, for every combination of its controls."""

import itertools

import matplotlib.pyplot as plt
import pytest

from encoder_course import widgets


@pytest.mark.parametrize("seq_len,d_model", list(itertools.product(widgets.COST_LENGTHS, widgets.COST_D_MODELS)))
def test_cost_view_every_combination(seq_len, d_model):
    fig = widgets.cost_view(seq_len, d_model)
    try:
        assert len(fig.axes) == 2
        assert f"L = {seq_len}" in fig._suptitle.get_text()
        for ax in fig.axes:
            assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title()
    finally:
        plt.close(fig)


def test_cost_view_rejects_values_off_the_controls():
    with pytest.raises(ValueError):
        widgets.cost_view(300, 768)
    with pytest.raises(ValueError):
        widgets.cost_view(512, 500)


def test_explore_cost_offers_the_tested_grid():
    box = widgets.explore_cost()
    seq_len, d_model = box.children[0].children
    assert tuple(seq_len.options) == widgets.COST_LENGTHS and seq_len.value == 512
    assert tuple(d_model.options) == widgets.COST_D_MODELS and d_model.value == 768
