"""encoder_course.layer_norm: LayerNorm equals nn.LayerNorm, normalises each token on its own, in half precision too."""

import pytest
import torch
from parity_helpers import ATOL, randomise
from torch import nn

import encoder_course as ec


@pytest.mark.parametrize("implementation", ["eager", "fused"])
def test_layer_norm_matches_nn_layernorm(implementation):
    torch.manual_seed(0)
    for eps in (1e-5, 1e-12):
        ours = randomise(ec.LayerNorm(24, eps=eps, implementation=implementation))
        theirs = nn.LayerNorm(24, eps=eps)
        theirs.load_state_dict(ours.state_dict())
        for scale in (1e-3, 1.0, 1e3):
            x = torch.randn(3, 5, 24) * scale + scale  # tiny, ordinary and large magnitudes
            torch.testing.assert_close(ours(x), theirs(x), atol=ATOL, rtol=0)
        # An offset far larger than the spread is ill-conditioned in float32; compare in float64.
        x = torch.randn(3, 5, 24, dtype=torch.float64) * 1e-3 + 2.0
        torch.testing.assert_close(ours.double()(x), theirs.double()(x), atol=1e-9, rtol=0)
        ours.float()


def test_layer_norm_normalises_each_token_on_its_own():
    torch.manual_seed(0)
    ln = ec.LayerNorm(64)
    x = torch.randn(3, 7, 64) * 5 + 3
    y = ln(x)
    torch.testing.assert_close(y.mean(-1), torch.zeros(3, 7), atol=1e-5, rtol=0)
    torch.testing.assert_close(y.var(-1, unbiased=False), torch.ones(3, 7), atol=1e-3, rtol=0)
    torch.testing.assert_close(ln(x[:1, 2:3]), y[:1, 2:3], atol=1e-6, rtol=0)


@pytest.mark.parametrize("dtype, limit", [(torch.float16, 3e-3), (torch.bfloat16, 2e-2)])
def test_half_precision_layer_norm_is_as_accurate_as_torch(dtype, limit):
    torch.manual_seed(0)
    x = (torch.randn(8, 768) + 100).to(dtype)  # a large mean: the hard case in half precision
    reference = torch.nn.functional.layer_norm(x.double(), (768,))
    ours, theirs = ec.LayerNorm(768).to(dtype)(x), torch.nn.LayerNorm(768).to(dtype)(x)
    assert ours.dtype == dtype
    assert (ours.double() - reference).abs().max() <= max(limit, (theirs.double() - reference).abs().max())


def test_layer_norm_returns_half_for_half_input_on_both_paths():
    x = torch.randn(2, 3, 8).half()
    for implementation in ("fused", "eager"):
        assert ec.LayerNorm(8, implementation=implementation)(x).dtype == torch.float16


def test_layer_norm_input_width():
    with pytest.raises(ValueError, match="d_model"):
        ec.LayerNorm(16)(torch.randn(2, 8))


@pytest.mark.parametrize("implementation", ["fused", "eager"])
def test_layer_norm_without_bias_equals_torchs(implementation):
    torch.manual_seed(0)
    ours = ec.LayerNorm(10, implementation=implementation, bias=False)
    theirs = torch.nn.LayerNorm(10, bias=False)
    with torch.no_grad():
        ours.weight.uniform_(0.5, 1.5)
        theirs.weight.copy_(ours.weight)
    assert ours.bias is None and [n for n, _ in ours.named_parameters()] == ["weight"]
    x = torch.randn(3, 4, 10)
    torch.testing.assert_close(ours(x), theirs(x))
