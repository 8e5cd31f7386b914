"""Widget callbacks of notebook 05 (residual connections), called for every combination of controls."""

import math

import matplotlib

matplotlib.use("Agg")

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


def test_gradient_norms_are_finite_positive_and_deterministic():
    for residual in (True, False):
        norms = widgets.residual_stack_gradient_norms(8, residual)
        assert len(norms) == 8 and all(math.isfinite(n) and n > 0 for n in norms)
        assert norms == widgets.residual_stack_gradient_norms(8, residual)


def test_residual_keeps_the_first_layer_gradient_and_plain_loses_it():
    plain = widgets.residual_stack_gradient_norms(24, False)
    res = widgets.residual_stack_gradient_norms(24, True)
    assert plain[0] / plain[-1] < 1e-3
    assert res[0] / res[-1] > 0.5


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError):
        widgets.residual_stack_gradient_norms(0, True)
    with pytest.raises(ValueError):
        widgets.residual_stack_gradient_norms(4, True, init="xavier")


def test_explore_residual_depth_builds():
    pytest.importorskip("ipywidgets")
    w = widgets.explore_residual_depth()
    plt.close("all")
    assert w is not None
