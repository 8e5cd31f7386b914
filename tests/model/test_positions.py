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


def test_apply_rotary_turns_each_pair_by_position_times_frequency_and_keeps_lengths():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 7, 8, dtype=torch.float64)
    positions = torch.tensor([0, 1, 2, 5, 9, 10, 40])
    before = x.clone()
    out = ec.apply_rotary(x, positions, base=500.0)
    assert torch.equal(x, before) and out.dtype == torch.float64 and out.shape == x.shape
    pairs, turned = torch.view_as_complex(x.reshape(2, 3, 7, 4, 2)), torch.view_as_complex(out.reshape(2, 3, 7, 4, 2))
    freq = 500.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)
    torch.testing.assert_close(turned, pairs * torch.polar(torch.ones(7, 4, dtype=torch.float64),
                                                           positions[:, None].double() * freq))
    torch.testing.assert_close(out.norm(dim=-1), x.norm(dim=-1))  # a rotation keeps every vector's length
    torch.testing.assert_close(ec.apply_rotary(x), ec.apply_rotary(x, torch.arange(7)))
    assert ec.rotate_pairs is ec.apply_rotary


def test_rotated_scores_depend_on_the_offset_only():
    torch.manual_seed(1)
    q, k = torch.randn(1, 16), torch.randn(1, 16)
    score = lambda m, n: (ec.apply_rotary(q, torch.tensor([m])) @ ec.apply_rotary(k, torch.tensor([n])).T).item()
    for offset in (0, 3, -5):
        values = [score(m, m + offset) for m in (0, 7, 100)]
        assert max(values) - min(values) < 1e-4, values
    assert abs(score(0, 3) - score(0, 5)) > 1e-3
