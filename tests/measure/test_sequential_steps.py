"""The sequential depth of notebook 02 (encoder_course.measure.sequential_steps): a recurrence against attention."""

import pytest
import torch

from encoder_course.measure.sequential_steps import recurrence_and_attention_depth, sequential_depth


def test_depth_of_simple_chains():
    x = torch.randn(3, requires_grad=True)
    assert sequential_depth(x) == 0
    assert sequential_depth(x.exp()) == 1
    assert sequential_depth(x.exp().sin().sum()) == 3
    # two branches of different length: the longer one counts
    y = x.exp().sin() + x.cos()
    assert sequential_depth(y) == 3


def test_a_long_chain_does_not_hit_the_recursion_limit():
    x = torch.randn(2, requires_grad=True)
    h = x
    for _ in range(5000):
        h = h * 1.0001
    assert sequential_depth(h) == 5000


def test_recurrence_grows_with_the_length_and_attention_does_not():
    torch.manual_seed(3)
    before = torch.get_rng_state()
    depths = recurrence_and_attention_depth([1, 8, 64])
    assert torch.equal(before, torch.get_rng_state())
    rec, att = depths["recurrence"], depths["attention"]
    assert depths["lengths"] == [1, 8, 64]
    assert len(set(att)) == 1  # the same few operations at every length
    steps = (rec[2] - rec[1]) / (64 - 8)
    assert steps == int(steps) and steps >= 3  # the same number of operations per token
    assert rec[1] - rec[0] == steps * 7
    assert rec[2] > 10 * att[2]


def test_bad_arguments_are_rejected():
    with pytest.raises(TypeError):
        sequential_depth([1, 2])
    with pytest.raises(ValueError):
        recurrence_and_attention_depth([0, 4])
    with pytest.raises(ValueError):
        recurrence_and_attention_depth([])
