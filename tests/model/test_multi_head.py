"""encoder_course.multi_head: MultiHeadAttention equals nn.MultiheadAttention, heads split and merge back."""

import pytest
import torch
from parity_helpers import ATOL, random_padding, randomise
from torch import nn

import encoder_course as ec
from encoder_course import interop


@pytest.mark.parametrize("implementation", ["fused", "eager"])
@pytest.mark.parametrize("masked", [False, True])
def test_multi_head_matches_nn_multihead(implementation, masked):
    torch.manual_seed(0)
    d_model, heads, batch, length = 32, 4, 3, 7
    ours = randomise(ec.MultiHeadAttention(d_model, heads, implementation=implementation)).eval()
    theirs = interop.to_torch_attention(ours)
    assert isinstance(theirs, nn.MultiheadAttention) and not theirs.training
    x = torch.randn(batch, length, d_model)
    mask = random_padding(batch, length) if masked else None
    key_padding = interop.to_torch_padding_mask(mask) if masked else None
    ref, _ = theirs(x, x, x, key_padding_mask=key_padding, need_weights=False)
    out = ours(x, mask)
    assert out.shape == (batch, length, d_model)
    torch.testing.assert_close(out, ref, atol=ATOL, rtol=0)


def test_split_and_merge_heads_round_trip():
    x = torch.randn(2, 4, 512)
    h = ec.split_heads(x, 8)
    assert h.shape == (2, 8, 4, 64)
    assert torch.equal(h[:, 3], x[..., 3 * 64:4 * 64])
    assert torch.equal(ec.merge_heads(h), x)


@pytest.mark.parametrize("implementation", ["fused", "eager"])
def test_attention_weights_come_from_the_pass_that_made_the_output(implementation):
    """The weights returned are the ones multiplied with the values, dropout included, in that same pass."""
    torch.manual_seed(0)
    mha = ec.MultiHeadAttention(16, 4, dropout=0.5, implementation=implementation).train()
    x = torch.randn(2, 5, 16)
    mask = ec.padding_mask(torch.tensor([[1, 2, 3, 4, 5], [1, 2, 3, 0, 0]]), 0)
    out, weights = mha.forward_with_weights(x, mask)
    v = ec.split_heads(mha.w_v(x), 4)  # (B, H, L, d_head)
    torch.testing.assert_close(out, mha.w_o(ec.merge_heads(weights @ v)), atol=1e-6, rtol=0)
    kept = weights[weights > 0]
    assert (weights == 0).any() and not torch.allclose(weights.sum(-1), torch.ones(2, 4, 5))  # dropped and rescaled
    assert kept.numel() and (weights[..., 3:][1] == 0).all()  # padding keys get no weight
    again, weights_again = mha.forward_with_weights(x, mask)  # a new pass draws new dropout
    assert not torch.equal(weights, weights_again)
    torch.testing.assert_close(again, mha.w_o(ec.merge_heads(weights_again @ v)), atol=1e-6, rtol=0)
    assert mha.forward_with_weights(x, mask, need_weights=False)[1] is None
    mha.eval()  # no dropout: forward, forward_with_weights and attention_weights agree
    out, weights = mha.forward_with_weights(x, mask)
    torch.testing.assert_close(mha(x, mask), out, atol=1e-6, rtol=0)
    torch.testing.assert_close(mha.attention_weights(x, mask), weights)


# ---- bad input: each error says what was expected and what came ----

def test_d_model_not_divisible_by_n_heads():
    with pytest.raises(ValueError, match=r"d_model \(510\) must be divisible by n_heads \(8\)"):
        ec.MultiHeadAttention(510, 8)


def test_n_heads_must_be_positive():
    with pytest.raises(ValueError, match="n_heads must be a positive int"):
        ec.MultiHeadAttention(8, 0)


def test_multi_head_input_width_and_rank():
    mha = ec.MultiHeadAttention(16, 2)
    with pytest.raises(ValueError, match=r"d_model \(16\).*\(2, 3, 12\)"):
        mha(torch.randn(2, 3, 12))
    with pytest.raises(ValueError, match=r"3 dimensions.*\(3, 16\)"):
        mha(torch.randn(3, 16))
    with pytest.raises(TypeError, match="torch.Tensor"):
        mha([[1.0]])


def test_multi_head_mask_errors_name_the_shapes_and_the_right_form():
    mha = ec.MultiHeadAttention(16, 2)
    with pytest.raises(ValueError, match=r"\(3, 1, 1, 4\).*\(2, 2, 4, 4\)"):
        mha(torch.randn(2, 4, 16), torch.ones(3, 1, 1, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"looks like a \(B, L\) padding mask: give it as \(B, 1, 1, L\)"):
        mha(torch.randn(3, 5, 16), torch.ones(3, 5, dtype=torch.bool))
