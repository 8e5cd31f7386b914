"""encoder_course.feed_forward: FeedForward is w2(act(w1 x)) for ReLU and GELU, w2(silu(w1 x) * w3 x) for SwiGLU."""

import math

import pytest
import torch

import encoder_course as ec


def test_feed_forward_activations():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 8)
    for act, fn in (("relu", torch.relu), ("gelu", lambda h: h * 0.5 * (1 + torch.erf(h / math.sqrt(2))))):
        ffn = ec.FeedForward(8, 32, activation=act)
        ref = ffn.w2(fn(ffn.w1(x)))
        torch.testing.assert_close(ffn(x), ref, atol=1e-6, rtol=0)
    ffn = ec.FeedForward(8, 32, activation="swiglu")
    ref = ffn.w2(torch.nn.functional.silu(ffn.w1(x)) * ffn.w3(x))
    torch.testing.assert_close(ffn(x), ref, atol=1e-6, rtol=0)


def test_feed_forward_input_width():
    with pytest.raises(ValueError, match="d_model"):
        ec.FeedForward(16, 32)(torch.randn(2, 3, 8))


def test_feed_forward_activation_must_be_known():
    with pytest.raises(ValueError, match="activation must be one of"):
        ec.FeedForward(8, 16, activation="swish")


def test_geglu_is_gelu_of_one_projection_times_another_and_bias_false_drops_every_bias():
    torch.manual_seed(0)
    ffn = ec.FeedForward(8, 12, activation="geglu", bias=False)
    assert all(m.bias is None for m in (ffn.w1, ffn.w2, ffn.w3))
    assert sum(p.numel() for p in ffn.parameters()) == 3 * 8 * 12
    x = torch.randn(2, 5, 8)
    want = (torch.nn.functional.gelu(x @ ffn.w1.weight.T) * (x @ ffn.w3.weight.T)) @ ffn.w2.weight.T
    torch.testing.assert_close(ffn(x), want)
