"""encoder_course.widgets.modern_encoder: the callback for every combination of its controls, untrained and with
trained-looking models (whose config must come back unchanged)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest
import torch

from encoder_course import widgets
from encoder_course.masks import sliding_window_mask
from encoder_course.measure import masked_lm, modern
from encoder_course.plots.style import alt_text
from encoder_course.widgets import modern_encoder as view_module


def _maps(fig):
    """The (title, image) of every attention map of the figure."""
    return [(ax.get_title(), ax.images[0].get_array()) for ax in fig.axes if ax.images]


@pytest.mark.parametrize("positions", view_module.POSITIONS)
@pytest.mark.parametrize("window", view_module.WINDOWS)
@pytest.mark.parametrize("global_every", view_module.GLOBAL_EVERY)
def test_every_layer_is_drawn_and_titled_global_or_local(positions, window, global_every):
    fig = widgets.modern_encoder_view(positions, window, global_every)
    maps = _maps(fig)
    assert len(maps) == 6  # one map per layer
    for i, (title, weights) in enumerate(maps):
        local = bool(window) and i % global_every != 0
        assert title == f"layer {i}: " + ("local" if local else "global"), title
        assert weights.shape == (40, 40)
        if local:  # the window cut the rest: no weight outside the band
            assert abs(weights[~sliding_window_mask(40, window).numpy()]).max() == 0
    suptitle = fig._suptitle.get_text()
    assert "measured now" in suptitle and "from the formula" in suptitle and "all global" in suptitle
    assert f"{positions} positions" in suptitle and alt_text(fig)
    plt.close(fig)


def test_trained_models_get_the_window_for_the_view_only():
    models = {kind: masked_lm.make_model(modern.positions_config(50, kind, max_len=64))
              for kind in ("rotary", "learned")}
    before = {kind: m.encoder.config for kind, m in models.items()}
    ids = torch.randint(5, 50, (1, 20), generator=torch.Generator().manual_seed(0))
    fig = widgets.modern_encoder_view("learned", 4, 2, models=models, ids=ids)
    assert [title for title, _ in _maps(fig)] == ["layer 0: global", "layer 1: local"]  # the models have 2 layers
    assert "trained with global attention" in fig._suptitle.get_text()
    assert {kind: m.encoder.config for kind, m in models.items()} == before
    plt.close(fig)
    fig = widgets.modern_encoder_view("rotary", 8, 3, models=models)  # default ids within the vocabulary of 50
    assert {kind: m.encoder.config for kind, m in models.items()} == before
    plt.close(fig)
    with pytest.raises(ValueError, match="positions"):
        widgets.modern_encoder_view("sinusoidal", 4, 2, models=models)  # not among the models
    assert {kind: m.encoder.config for kind, m in models.items()} == before
    box = widgets.explore_modern_encoder(models=models, ids=ids)
    assert box.children[0].options == ("rotary", "learned")


def test_the_view_rejects_values_off_the_controls():
    for args in (("alibi", 8, 3), ("rotary", 5, 3), ("rotary", 8, 4)):
        with pytest.raises(ValueError):
            widgets.modern_encoder_view(*args)


def test_explore_modern_encoder_offers_the_tested_grid():
    box = widgets.explore_modern_encoder()
    positions, (window, global_every) = box.children[0], box.children[1].children
    assert positions.options == view_module.POSITIONS and positions.value == "rotary"
    assert [value for _, value in window.options] == list(view_module.WINDOWS) and window.value == 8
    assert window.options[0][0] == "0 (no window)"
    assert tuple(global_every.options) == view_module.GLOBAL_EVERY and global_every.value == 3
