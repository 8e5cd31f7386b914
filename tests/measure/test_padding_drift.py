"""The padding-length experiment of notebook 03 (encoder_course.measure.padding_drift)."""

import pytest
import torch

from encoder_course.measure import padding_drift
from encoder_course.measure.padding_drift import PADDING_MAX, PADDING_SENTENCE, padded_outputs, worst_drift

PAD_LENGTHS = (0, 1, 3, 8, 31, 62, 93, 123, 124)


@pytest.mark.parametrize("pad_length", PAD_LENGTHS)
def test_padding_mask_removes_the_drift(pad_length):
    _, drift_masked = padded_outputs(True, pad_length)
    _, drift_unmasked = padded_outputs(False, pad_length)
    assert float(drift_masked.max()) < 1e-5
    if pad_length > 0:
        assert float(drift_unmasked.max()) > 1e-2  # the bug the widget shows
    else:
        assert float(drift_unmasked.max()) < 1e-5


def test_outputs_have_the_documented_shapes():
    out = padded_outputs(False, 5)
    length = len(PADDING_SENTENCE) + 5
    assert tuple(out.weights.shape) == (length, length) and tuple(out.drift.shape) == (len(PADDING_SENTENCE),)
    assert torch.allclose(out.weights.sum(-1), torch.ones(length), atol=1e-5)  # averaged rows of softmax
    masked = padded_outputs(True, 5)
    assert float(masked.weights[:, len(PADDING_SENTENCE):].max()) < 1e-6  # no weight on the pads


def test_worst_drift_bounds_every_unmasked_drift_of_its_grid():
    worst = worst_drift()
    assert worst > 1e-2
    for n in range(0, PADDING_MAX + 1, 31):
        assert float(padded_outputs(False, n).drift.max()) <= worst


def test_the_model_leaves_the_random_stream_alone_and_is_built_once():
    padding_drift._MODELS.pop(7, None)
    torch.manual_seed(123)
    before = torch.get_rng_state()
    model = padding_drift.padding_model(7)
    assert torch.equal(before, torch.get_rng_state())
    assert padding_drift.padding_model(7) is model and not model.training


@pytest.mark.parametrize("pad_length", [-1, PADDING_MAX + 1, 2.5, True])
def test_bad_pad_lengths_are_rejected(pad_length):
    with pytest.raises(ValueError, match="pad_length"):
        padded_outputs(False, pad_length)
