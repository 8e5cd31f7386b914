"""The random 8-head encoder of notebook 04 (encoder_course.measure.head_maps)."""

import pytest
import torch

from encoder_course.measure import head_maps
from encoder_course.measure.head_maps import HEAD_COUNT, HEAD_LAYERS, HEAD_SENTENCES, head_weights


def test_head_weights_are_distributions():
    w = head_weights(HEAD_SENTENCES[1], layer=1)
    n = len(HEAD_SENTENCES[1].split())
    assert tuple(w.shape) == (HEAD_COUNT, n, n)
    assert (w.sum(-1) - 1).abs().max() < 1e-5


def test_every_layer_of_every_sentence():
    for sentence in HEAD_SENTENCES:
        for layer in range(HEAD_LAYERS):
            w = head_weights(sentence, layer)
            assert torch.isfinite(w).all() and (w >= 0).all()
    assert not torch.equal(head_weights(HEAD_SENTENCES[0], 0), head_weights(HEAD_SENTENCES[0], 1))


def test_the_model_is_seeded_and_leaves_the_random_stream_alone():
    torch.manual_seed(5)
    before = torch.get_rng_state()
    first = head_weights(HEAD_SENTENCES[0], 0, seed=3)
    assert torch.equal(before, torch.get_rng_state())
    head_maps._MODELS.pop(3)
    assert torch.equal(first, head_weights(HEAD_SENTENCES[0], 0, seed=3))  # rebuilt: the same weights


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="unknown words"):
        head_weights("a sentence nobody wrote")
    with pytest.raises(ValueError, match="layer"):
        head_weights(HEAD_SENTENCES[0], layer=HEAD_LAYERS)
