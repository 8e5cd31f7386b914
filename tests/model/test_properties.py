"""The property suite: what the course teaches about the model as a whole, checked across several modules:
attention and blocks are permutation equivariant, padding with its mask never changes the real tokens, and no
module modifies its inputs. (Each module's own properties are in tests/test_<module>.py.)"""

import pytest
import torch

import encoder_course as ec


def test_self_attention_without_positions_is_permutation_equivariant():
    torch.manual_seed(0)
    mha = ec.MultiHeadAttention(32, 4).eval()
    x = torch.randn(2, 9, 32)
    perm = torch.randperm(9)
    with torch.no_grad():
        torch.testing.assert_close(mha(x[:, perm]), mha(x)[:, perm], atol=1e-5, rtol=0)
    block = ec.EncoderBlock(32, 4, 64).eval()
    with torch.no_grad():
        torch.testing.assert_close(block(x[:, perm]), block(x)[:, perm], atol=1e-5, rtol=0)


@pytest.mark.parametrize("norm_first", [False, True])
def test_padding_never_changes_real_tokens_with_the_mask(norm_first):
    torch.manual_seed(0)
    cfg = ec.EncoderConfig(vocab_size=60, max_len=200, d_model=32, n_heads=4, d_ff=64, n_layers=2,
                           norm_first=norm_first)
    enc = ec.Encoder(cfg).eval()
    sentence = torch.randint(1, 60, (1, 6))
    outs_masked, outs_unmasked = [], []
    for pads in (3, 124):
        ids = torch.cat([sentence, torch.zeros(1, pads, dtype=torch.long)], dim=1)
        with torch.no_grad():
            outs_masked.append(enc(ids, ec.padding_mask(ids, 0))[:, :6])
            outs_unmasked.append(enc(ids)[:, :6])
    torch.testing.assert_close(outs_masked[0], outs_masked[1], atol=1e-5, rtol=0)
    assert (outs_unmasked[0] - outs_unmasked[1]).abs().max() > 1e-2
    with torch.no_grad():
        alone = enc(sentence)
    torch.testing.assert_close(outs_masked[0], alone, atol=1e-5, rtol=0)


def test_inputs_are_never_modified():
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 4, 8), torch.randn(2, 4, 8), torch.randn(2, 4, 8)
    mask = torch.rand(2, 4, 4) > 0.5
    copies = [t.clone() for t in (q, k, v, mask)]
    ec.scaled_dot_product_attention(q, k, v, mask)
    ec.fused_attention(q, k, v, mask)
    for before, after in zip(copies, (q, k, v, mask)):
        assert torch.equal(before, after)
    x = torch.randn(2, 4, 16)
    x0 = x.clone()
    ec.EncoderBlock(16, 2, 32, norm_first=True)(x)
    ec.EncoderBlock(16, 2, 32, norm_first=False)(x)
    ec.LayerNorm(16)(x)
    ec.FeedForward(16, 32, activation="swiglu")(x)
    assert torch.equal(x, x0)
