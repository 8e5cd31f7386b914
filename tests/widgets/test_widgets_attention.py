"""encoder_course.widgets.attention: the attention-scale explorer of notebook 02, every control value."""

import itertools

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from encoder_course import widgets


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


def test_explore_attention_scale_builds():
    widget = widgets.explore_attention_scale()
    assert len(widget.children) >= 3  # controls + output
    widget.close()
