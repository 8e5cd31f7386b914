"""Widget callbacks of notebooks 07 (norm placement) and 08 (configuration explorer), every control value."""

import itertools

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import encoder_course as ec  # noqa: E402
from encoder_course import widgets  # noqa: E402


@pytest.mark.parametrize("norm_first", [False, True])
def test_norm_placement_view_every_depth(norm_first):
    for depth in widgets.NORM_PLACEMENT_DEPTHS:
        fig = widgets.norm_placement_view(norm_first=norm_first, depth=depth)
        assert fig.axes, "the figure has axes"
        plt.close(fig)


def test_norm_placement_profile_shapes_and_rng_untouched():
    torch.manual_seed(123)
    before = torch.get_rng_state()
    profile = widgets.norm_placement_profile(True, 4)
    assert torch.equal(before, torch.get_rng_state())
    assert len(profile["grad_norm"]) == 4
    assert len(profile["stream_std"]) == 5
    assert all(g > 0 for g in profile["grad_norm"])


def test_norm_placement_profile_post_ln_stream_is_normalised():
    profile = widgets.norm_placement_profile(False, 6)
    assert all(abs(s - 1.0) < 0.01 for s in profile["stream_std"][1:])


def test_config_view_every_combination():
    grid = itertools.product(widgets.CONFIG_LAYERS, widgets.CONFIG_D_MODELS, widgets.CONFIG_HEADS,
                             [ratio for _, ratio in widgets.CONFIG_FF_RATIOS], widgets.CONFIG_VOCABS)
    for n_layers, d_model, n_heads, ratio, vocab in grid:
        fig = widgets.config_view(n_layers=n_layers, d_model=d_model, n_heads=n_heads, d_ff_ratio=ratio,
                                  vocab_size=vocab)
        assert fig.axes
        plt.close(fig)


@pytest.mark.parametrize("changes", [
    {},
    {"norm_first": True},
    {"positions": "learned", "type_vocab_size": 2, "embedding_norm": True},
    {"activation": "swiglu", "norm_first": True, "positions": "learned"},
    {"n_layers": 3, "d_model": 48, "n_heads": 6, "d_ff": 100, "vocab_size": 77, "max_len": 33},
])
def test_analytic_count_equals_count_parameters(changes):
    config = ec.EncoderConfig(vocab_size=100, max_len=40, d_model=32, n_heads=4, d_ff=64, n_layers=2)
    config = config.replace(**changes)
    assert widgets.analytic_parameter_counts(config) == ec.count_parameters(ec.Encoder(config))


def test_analytic_count_bert_base():
    counts = widgets.analytic_parameter_counts(ec.EncoderConfig.bert_base())
    assert counts["total"] == 108_891_648
    assert counts["embeddings"] == 23_837_184


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
