"""Widget callbacks of notebooks 07 (norm placement) and 08 (configuration explorer), every control value.

The measurements they draw are tested in test_gradient_flow.py and test_counting.py.
"""

import itertools

import matplotlib.pyplot as plt
import pytest

from encoder_course import widgets


@pytest.mark.parametrize("norm_first", [False, True])
def test_norm_placement_view_every_depth(norm_first):
    for depth in widgets.NORM_PLACEMENT_DEPTHS:
        fig = widgets.norm_placement_view(norm_first=norm_first, depth=depth)
        assert fig.axes, "the figure has axes"
        plt.close(fig)


def test_config_view_every_combination():
    grid = itertools.product(widgets.CONFIG_LAYERS, widgets.CONFIG_D_MODELS, widgets.CONFIG_HEADS,
                             [ratio for _, ratio in widgets.CONFIG_FF_RATIOS], widgets.CONFIG_VOCABS)
    for n_layers, d_model, n_heads, ratio, vocab in grid:
        fig = widgets.config_view(n_layers=n_layers, d_model=d_model, n_heads=n_heads, d_ff_ratio=ratio,
                                  vocab_size=vocab)
        assert fig.axes
        plt.close(fig)


def test_config_view_says_why_a_configuration_is_invalid():
    fig = widgets.config_view(n_heads=16, d_model=384)  # 384 / 16 = 24: valid
    assert "Total" in fig.axes[0].get_title()
    fig = widgets.config_view(n_heads=16, d_model=768 + 8)  # not a control value: 776 / 16 is not whole
    assert "divides d_model" in fig.axes[0].get_title()
    assert any("Not a valid encoder" in t.get_text() for t in fig.axes[0].texts)
    plt.close("all")


def test_explorers_expose_the_tested_grid():
    placement = widgets.explore_norm_placement()
    controls = {c.description: c for c in placement.children[:-1]}
    assert [label for label, _ in controls["placement"].options] == ["post-LN", "pre-LN"]
    slider = controls["layers"]
    assert tuple(range(slider.min, slider.max + 1, slider.step)) == widgets.NORM_PLACEMENT_DEPTHS
    config = widgets.explore_config()
    controls = {c.description: c for c in config.children[:-1]}
    assert tuple(controls["layers"].options) == widgets.CONFIG_LAYERS
    assert tuple(controls["d_model"].options) == widgets.CONFIG_D_MODELS
    assert tuple(controls["heads"].options) == widgets.CONFIG_HEADS
    assert tuple(controls["d_ff / d_model"].options) == widgets.CONFIG_FF_RATIOS
    assert tuple(controls["vocabulary"].options) == widgets.CONFIG_VOCABS
    plt.close("all")


def test_widgets_show_experiments_but_do_not_hold_them():
    """The measurements live in modules named for what they measure, not in widgets."""
    for name in ("norm_placement_profile", "residual_stack_gradient_norms", "analytic_parameter_counts",
                 "head_weights", "_padding_outputs", "padded_outputs"):
        assert not hasattr(widgets, name), name
    for name in widgets.__all__:
        assert name.startswith("explore_") or name.endswith("_view") or name.isupper() or name == "quiz", name
