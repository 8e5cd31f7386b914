"""Widget callbacks of notebooks 01 (positions) and 02 (the attention scale), every combination of their controls."""

import itertools

import matplotlib.pyplot as plt
import pytest
from matplotlib.figure import Figure

from encoder_course import widgets


def test_positions_view_every_control_value():
    positions = range(0, widgets.POSITIONS_SEQ_LEN, widgets.POSITIONS_STEP)
    for d_model, position in itertools.product(widgets.POSITIONS_D_MODELS, positions):
        fig = widgets.positions_view(d_model=d_model, position=position)
        assert isinstance(fig, Figure)
        assert f"row {position}" in fig.axes[0].get_title()
        plt.close(fig)


def test_positions_view_rejects_a_position_outside_the_table():
    with pytest.raises(ValueError, match="position"):
        widgets.positions_view(d_model=16, position=widgets.POSITIONS_SEQ_LEN)


def test_attention_scale_view_every_control_value():
    for exponent, d_k in itertools.product(widgets.ATTENTION_SCALE_EXPONENTS, widgets.ATTENTION_SCALE_D_KS):
        fig = widgets.attention_scale_view(scale=2.0**exponent, d_k=d_k)
        assert isinstance(fig, Figure)
        assert "entropy" in fig.axes[0].get_title()
        heights = [bar.get_height() for bar in fig.axes[0].patches]
        assert abs(sum(heights) - 1.0) < 1e-5  # one softmax row
        plt.close(fig)


def test_attention_scale_view_saturates_without_the_scale():
    # the widget's lesson, checked: scale 1 at d_k 1024 is nearly one-hot, 1/sqrt(d_k) is not
    for scale, expect_peaked in ((1.0, True), (1 / 32, False)):
        fig = widgets.attention_scale_view(scale=scale, d_k=1024)
        top = max(bar.get_height() for bar in fig.axes[0].patches)
        assert (top > 0.99) == expect_peaked
        plt.close(fig)


def test_explorers_build():
    for explore in (widgets.explore_positions, widgets.explore_attention_scale):
        widget = explore()
        assert len(widget.children) >= 3  # controls + output
        widget.close()
