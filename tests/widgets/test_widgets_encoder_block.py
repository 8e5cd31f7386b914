"""encoder_course.widgets.encoder_block: the norm-placement explorer of notebook 07, every control value.

The measurement it draws is tested in test_gradient_flow.py.
"""

import matplotlib.pyplot as plt
import pytest

from encoder_course import widgets


@pytest.mark.parametrize("norm_first", [False, True])
def test_norm_placement_view_every_depth(norm_first):
    for depth in widgets.NORM_PLACEMENT_DEPTHS:
        fig = widgets.norm_placement_view(norm_first=norm_first, depth=depth)
        diagram, _, stream = fig.axes
        assert ("pre-LN" if norm_first else "post-LN") in diagram.get_title()
        assert len(stream.lines[0].get_xdata()) == depth + 1  # the input, then after each layer
        plt.close(fig)


def test_explore_norm_placement_exposes_the_tested_grid():
    placement = widgets.explore_norm_placement()
    controls = {c.description: c for c in placement.children[:-1]}
    assert [label for label, _ in controls["placement"].options] == ["post-LN", "pre-LN"]
    slider = controls["layers"]
    assert tuple(range(slider.min, slider.max + 1, slider.step)) == widgets.NORM_PLACEMENT_DEPTHS
    plt.close("all")
