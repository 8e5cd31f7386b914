"""Widget callback of notebook 05 (residual connections), called for every combination of controls.

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


def test_explore_residual_depth_builds():
    pytest.importorskip("ipywidgets")
    w = widgets.explore_residual_depth()
    plt.close("all")
    assert w is not None
