"""encoder_course.widgets.stacking: the configuration explorer of notebook 08, every control value.

The counts it draws are tested in test_counting.py.
"""

import itertools

import matplotlib.pyplot as plt

from encoder_course import widgets


def test_config_view_every_combination():
    grid = itertools.product(widgets.CONFIG_LAYERS, widgets.CONFIG_D_MODELS, widgets.CONFIG_HEADS,
                             [ratio for _, ratio in widgets.CONFIG_FF_RATIOS], widgets.CONFIG_VOCABS)
    for n_layers, d_model, n_heads, ratio, vocab in grid:
        fig = widgets.config_view(n_layers=n_layers, d_model=d_model, n_heads=n_heads, d_ff_ratio=ratio,
                                  vocab_size=vocab)
        title = fig.axes[0].get_title()
        if d_model % n_heads:  # some grid points are not valid encoders: the figure says why
            assert "divides d_model" in title, title
        else:
            assert title.startswith(f"{n_layers} layers, d_model {d_model}, {n_heads} heads") and "Total: " in title
        plt.close(fig)


def test_config_view_says_why_a_configuration_is_invalid():
    fig = widgets.config_view(n_heads=16, d_model=384)  # 384 / 16 = 24: valid
    assert "Total" in fig.axes[0].get_title()
    fig = widgets.config_view(n_heads=16, d_model=768 + 8)  # not a control value: 776 / 16 is not whole
    assert "divides d_model" in fig.axes[0].get_title()
    assert any("Not a valid encoder" in t.get_text() for t in fig.axes[0].texts)
    plt.close("all")


def test_explore_config_exposes_the_tested_grid():
    config = widgets.explore_config()
    controls = {c.description: c for c in config.children[:-1]}
    assert tuple(controls["layers"].options) == widgets.CONFIG_LAYERS
    assert tuple(controls["d_model"].options) == widgets.CONFIG_D_MODELS
    assert tuple(controls["heads"].options) == widgets.CONFIG_HEADS
    assert tuple(controls["d_ff / d_model"].options) == widgets.CONFIG_FF_RATIOS
    assert tuple(controls["vocabulary"].options) == widgets.CONFIG_VOCABS
    plt.close("all")
