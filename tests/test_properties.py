"""Properties the course teaches, checked on the package: equivariance, padding, masks, inputs untouched."""

import math

import pytest
import torch

import encoder_course as ec
from encoder_course import interop


def test_sinusoidal_positions_formula():
    pe = ec.sinusoidal_positions(50, 16)
    assert pe.shape == (50, 16) and pe.dtype == torch.float32
    for pos in (0, 1, 7, 49):
        for i in range(8):
            angle = pos / 10000 ** (2 * i / 16)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


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


def test_attention_rows_sum_to_one_and_masked_keys_get_zero():
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 6, 8), torch.randn(2, 3, 6, 4)
    mask = torch.tensor([True, True, True, True, False, False])
    _, w = ec.scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, 5))
    assert torch.all(w[..., 4:] == 0)


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


def test_dropout_only_in_training():
    torch.manual_seed(0)
    block = ec.EncoderBlock(16, 2, 32, dropout=0.5)
    x = torch.randn(2, 5, 16)
    block.eval()
    assert torch.equal(block(x), block(x))
    block.train()
    assert not torch.equal(block(x), block(x))


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


def test_layer_norm_normalises_each_token_on_its_own():
    torch.manual_seed(0)
    ln = ec.LayerNorm(64)
    x = torch.randn(3, 7, 64) * 5 + 3
    y = ln(x)
    torch.testing.assert_close(y.mean(-1), torch.zeros(3, 7), atol=1e-5, rtol=0)
    torch.testing.assert_close(y.var(-1, unbiased=False), torch.ones(3, 7), atol=1e-3, rtol=0)
    torch.testing.assert_close(ln(x[:1, 2:3]), y[:1, 2:3], atol=1e-6, rtol=0)


def test_blocks_have_their_own_weights():
    enc = ec.Encoder(ec.EncoderConfig(n_layers=3))
    ptrs = [p.data_ptr() for p in enc.parameters()]
    assert len(ptrs) == len(set(ptrs))
    assert not torch.equal(enc.layers[0].attn.w_q.weight, enc.layers[1].attn.w_q.weight)


def test_split_and_merge_heads_round_trip():
    x = torch.randn(2, 4, 512)
    h = ec.split_heads(x, 8)
    assert h.shape == (2, 8, 4, 64)
    assert torch.equal(h[:, 3], x[..., 3 * 64:4 * 64])
    assert torch.equal(ec.merge_heads(h), x)


def test_rotary_scores_depend_on_offset_only():
    torch.manual_seed(0)
    q, k = torch.randn(1, 16), torch.randn(1, 16)
    def score(pq, pk):
        return (ec.rotate_pairs(q, torch.tensor([pq])) * ec.rotate_pairs(k, torch.tensor([pk]))).sum()
    assert score(5, 2).item() == pytest.approx(score(13, 10).item(), abs=1e-4)


def test_half_precision_attention_does_not_overflow():
    # q.k = 16 * 70 * 70 = 78,400 is above float16's largest value (65,504); divided by sqrt(16) it fits.
    q = torch.full((1, 2, 16), 70.0, dtype=torch.float16)
    v = torch.randn(1, 2, 16).half()
    out, weights = ec.scaled_dot_product_attention(q, q, v)
    assert torch.isfinite(out).all() and torch.isfinite(weights).all()
    reference = torch.nn.functional.scaled_dot_product_attention(q.double(), q.double(), v.double())
    assert (out.double() - reference).abs().max() < 1e-2


@pytest.mark.parametrize("dtype, limit", [(torch.float16, 3e-3), (torch.bfloat16, 2e-2)])
def test_half_precision_layer_norm_is_as_accurate_as_torch(dtype, limit):
    torch.manual_seed(0)
    x = (torch.randn(8, 768) + 100).to(dtype)  # a large mean: the hard case in half precision
    reference = torch.nn.functional.layer_norm(x.double(), (768,))
    ours, theirs = ec.LayerNorm(768).to(dtype)(x), torch.nn.LayerNorm(768).to(dtype)(x)
    assert ours.dtype == dtype
    assert (ours.double() - reference).abs().max() <= max(limit, (theirs.double() - reference).abs().max())


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


@pytest.mark.parametrize("norm_first", [False, True])
def test_a_block_and_an_encoder_return_the_weights_of_their_own_pass(norm_first):
    torch.manual_seed(0)
    cfg = ec.EncoderConfig(vocab_size=30, max_len=8, d_model=16, n_heads=2, d_ff=32, n_layers=2, dropout=0.3,
                           norm_first=norm_first)
    enc = ec.Encoder(cfg).train()
    ids = torch.randint(1, 30, (3, 6))
    torch.manual_seed(1)
    out, maps = enc.forward_with_weights(ids)
    assert len(maps) == 2 and all(m.shape == (3, 2, 6, 6) for m in maps)
    # Replay the same pass by hand, layer by layer, with the same random draws: the weights each layer
    # returns are those its attention used, and the outputs agree.
    torch.manual_seed(1)
    x = enc.embeddings(ids)
    for layer, weights in zip(enc.layers, maps):
        x, own = layer.forward_with_weights(x)
        torch.testing.assert_close(own, weights)
    torch.testing.assert_close(x if enc.final_norm is None else enc.final_norm(x), out)
    # attention_maps: one eval-mode pass (no dropout), the mode given back; equal to the eval forward's weights
    maps = enc.attention_maps(ids)
    assert enc.training
    enc.eval()
    out, eval_maps = enc.forward_with_weights(ids)
    torch.testing.assert_close(enc(ids), out)
    for got, want in zip(maps, eval_maps):
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(got.sum(-1), torch.ones(3, 2, 6))
