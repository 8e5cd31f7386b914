"""encoder_course.widgets.tokens_and_positions: the positions explorer of notebook 01, every control value."""

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


def test_explore_positions_builds():
    widget = widgets.explore_positions()
    assert len(widget.children) >= 3  # controls + output
    widget.close()
