"""encoder_course.widgets.masks: the padding explorer of notebook 03, every control combination.

The experiment it draws is tested in test_padding_drift.py.
"""

import itertools

import matplotlib.pyplot as plt
import pytest
from matplotlib.figure import Figure

from encoder_course import widgets
from encoder_course.measure.padding_drift import PADDING_MAX

# The padding slider runs 0..124 in steps of 1: a coarse grid with both ends, the story's 3 and 124.
PAD_LENGTHS = (0, 1, 3, 8, 31, 62, 93, 123, 124)


@pytest.mark.parametrize("use_mask,pad_length", list(itertools.product((False, True), PAD_LENGTHS)))
def test_padding_view_every_combination(use_mask, pad_length):
    fig = widgets.padding_view(use_mask, pad_length)
    try:
        assert isinstance(fig, Figure)
        assert fig.axes and all(ax.get_title() for ax in fig.axes if ax.get_label() != "<colorbar>")
    finally:
        plt.close(fig)


def test_padding_view_changes_with_the_mask():
    figs = [widgets.padding_view(m, 3) for m in (False, True)]
    try:
        titles = [[ax.get_title() for ax in f.axes] for f in figs]
        assert titles[0] != titles[1]
    finally:
        for f in figs:
            plt.close(f)


def test_padding_view_rejects_out_of_range():
    with pytest.raises(ValueError, match="pad_length"):
        widgets.padding_view(True, PADDING_MAX + 1)


def test_explore_padding_uses_real_controls(controls_of):
    ipywidgets = pytest.importorskip("ipywidgets")
    padding = controls_of(widgets.explore_padding())
    assert any(isinstance(c, ipywidgets.Checkbox) for c in padding)
    assert any(isinstance(c, ipywidgets.IntSlider) and c.max == PADDING_MAX for c in padding)
    plt.close("all")
