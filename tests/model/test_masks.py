"""encoder_course.masks: padding_mask and causal_mask follow the one convention (True = may attend)."""

import pytest
import torch

import encoder_course as ec
from encoder_course import interop


def test_masks_follow_the_convention():
    ids = torch.tensor([[5, 6, 0, 0], [7, 0, 0, 0]])
    m = ec.padding_mask(ids, 0)
    assert m.dtype == torch.bool and m.shape == (2, 1, 1, 4)
    assert m[0, 0, 0].tolist() == [True, True, False, False]
    c = ec.causal_mask(4)
    assert c.dtype == torch.bool and c.shape == (4, 4)
    assert c.tolist() == [[True, False, False, False], [True, True, False, False],
                          [True, True, True, False], [True, True, True, True]]
    assert interop.to_torch_padding_mask(m).tolist() == [[False, False, True, True], [False, True, True, True]]


def test_padding_mask_wants_integer_token_ids():
    with pytest.raises(TypeError, match="integer"):
        ec.padding_mask(torch.randn(2, 3), 0)


@pytest.mark.parametrize("length,window", [(1, 1), (5, 1), (7, 2), (7, 3), (9, 4), (6, 40)])
def test_sliding_window_mask_allows_window_half_on_each_side(length, window):
    mask = ec.sliding_window_mask(length, window)
    assert mask.dtype == torch.bool and mask.shape == (length, length)
    for i in range(length):
        for j in range(length):
            assert bool(mask[i, j]) == (abs(i - j) <= window // 2)
    assert torch.equal(mask, mask.T) and mask.diagonal().all()


def test_sliding_window_mask_refuses_nonsense():
    with pytest.raises((ValueError, TypeError)):
        ec.sliding_window_mask(5, 0)
    with pytest.raises((ValueError, TypeError)):
        ec.sliding_window_mask(0, 3)
