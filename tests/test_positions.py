"""encoder_course.positions: the sinusoidal table follows its formula, rotary scores depend on the offset only."""

import math

import pytest
import torch

import encoder_course as ec


def test_sinusoidal_positions_formula():
    pe = ec.sinusoidal_positions(50, 16)
    assert pe.shape == (50, 16) and pe.dtype == torch.float32
    for pos in (0, 1, 7, 49):
        for i in range(8):
            angle = pos / 10000 ** (2 * i / 16)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_rotary_scores_depend_on_offset_only():
    torch.manual_seed(0)
    q, k = torch.randn(1, 16), torch.randn(1, 16)

    def score(pq, pk):
        return (ec.rotate_pairs(q, torch.tensor([pq])) * ec.rotate_pairs(k, torch.tensor([pk]))).sum()

    assert score(5, 2).item() == pytest.approx(score(13, 10).item(), abs=1e-4)
    assert score(5, 2).item() != pytest.approx(score(5, 4).item(), abs=1e-4)  # a different offset, another score


def test_sinusoidal_positions_need_an_even_width():
    with pytest.raises(ValueError, match="even"):
        ec.sinusoidal_positions(4, 7)
