"""encoder_course.widgets.residual_and_layernorm: the residual-depth explorer of notebook 05, every control value.

The measurement it draws is tested in test_gradient_flow.py.
"""

import matplotlib.pyplot as plt
import pytest

from encoder_course import widgets


@pytest.mark.parametrize("residual", [True, False])
@pytest.mark.parametrize("depth", widgets.RESIDUAL_DEPTHS)
def test_residual_depth_view_every_combination(depth, residual):
    fig = widgets.residual_depth_view(depth, residual)
    try:
        ax = fig.axes[0]
        assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel()
        assert len(ax.lines[0].get_xdata()) == depth
    finally:
        plt.close(fig)


def test_explore_residual_depth_offers_the_tested_grid_and_draws_what_it_shows():
    pytest.importorskip("ipywidgets")
    explorer = widgets.explore_residual_depth()
    try:
        controls = {c.description: c for c in explorer.children[:-1]}
        assert tuple(controls["layers"].options) == widgets.RESIDUAL_DEPTHS and controls["layers"].value == 12
        assert [value for _, value in controls["residual"].options] == [True, False]
        controls["layers"].value, controls["residual"].value = widgets.RESIDUAL_DEPTHS[0], False
        explorer.update()  # what a learner's change of the controls calls
        assert explorer.kwargs == {"depth": widgets.RESIDUAL_DEPTHS[0], "residual": False}
    finally:
        plt.close("all")
