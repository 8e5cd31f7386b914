"""The from-scratch modules equal PyTorch's own, within 1e-5, after copying weights."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import encoder_course as ec
from encoder_course import interop

ATOL = 1e-5


def randomise(module: nn.Module, seed: int = 0) -> nn.Module:
    """Give every parameter random values (norms included), so defaults hide nothing."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
    return module


def random_padding(batch: int, length: int, seed: int = 1) -> torch.Tensor:
    """A (B, 1, 1, L) padding mask with a different number of real tokens per row (at least one)."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, length + 1, (batch,), generator=g)
    lengths[0] = length
    ids = (torch.arange(length)[None, :] < lengths[:, None]).long()  # 1 = real, 0 = pad
    return ec.padding_mask(ids, pad_id=0)


@pytest.mark.parametrize("shape", [(5, 8), (2, 7, 16), (3, 4, 6, 8)])
@pytest.mark.parametrize("masked", [False, True])
def test_attention_matches_torch_sdpa(shape, masked):
    torch.manual_seed(0)
    *lead, length, d = shape
    q = torch.randn(*lead, length, d)
    k = torch.randn(*lead, length + 2, d)
    v = torch.randn(*lead, length + 2, d + 3)  # d_v != d_k
    mask = None
    if masked:
        mask = torch.rand(*lead, length, length + 2) > 0.3
        mask[..., 0] = True  # every row keeps one key: torch's reference is defined there
    ours, weights = ec.scaled_dot_product_attention(q, k, v, mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert ours.shape == (*lead, length, d + 3)
    assert weights.shape == (*lead, length, length + 2)
    torch.testing.assert_close(ours, ref, atol=ATOL, rtol=0)
    fused = ec.fused_attention(q, k, v, mask)
    torch.testing.assert_close(fused, ours, atol=ATOL, rtol=0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1]), atol=1e-6, rtol=0)


def test_attention_gradcheck_float64():
    torch.manual_seed(0)
    q = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    k = torch.randn(2, 5, 4, dtype=torch.float64, requires_grad=True)
    v = torch.randn(2, 5, 3, dtype=torch.float64, requires_grad=True)
    mask = torch.ones(2, 3, 5, dtype=torch.bool)
    mask[1, :, 3:] = False
    assert torch.autograd.gradcheck(lambda a, b, c: ec.scaled_dot_product_attention(a, b, c, mask)[0], (q, k, v))
    assert torch.autograd.gradcheck(lambda a, b, c: ec.scaled_dot_product_attention(a, b, c)[1], (q, k, v))


def test_fully_masked_row_is_zero_not_nan():
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 3, 4), torch.randn(1, 3, 4), torch.randn(1, 3, 4)
    mask = torch.tensor([[[False, False, False], [True, False, False], [True, True, True]]])
    for out in (ec.scaled_dot_product_attention(q, k, v, mask)[0], ec.fused_attention(q, k, v, mask)):
        assert not torch.isnan(out).any()
        assert torch.equal(out[0, 0], torch.zeros(4))
    _, weights = ec.scaled_dot_product_attention(q, k, v, mask)
    assert torch.equal(weights[0, 0], torch.zeros(3))
    torch.testing.assert_close(weights[0, 1], torch.tensor([1.0, 0.0, 0.0]))


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


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["gelu", "relu"])
@pytest.mark.parametrize("implementation", ["fused", "eager"])
def test_block_matches_transformer_encoder_layer(norm_first, activation, implementation):
    torch.manual_seed(0)
    d_model, heads, d_ff, batch, length = 32, 4, 64, 3, 6
    ours = randomise(ec.EncoderBlock(d_model, heads, d_ff, dropout=0.1, norm_first=norm_first,
                                     activation=activation, implementation=implementation)).eval()
    theirs = interop.to_torch_layer(ours)
    assert isinstance(theirs, nn.TransformerEncoderLayer) and theirs.norm_first == norm_first
    x = torch.randn(batch, length, d_model)
    mask = random_padding(batch, length)
    ref = theirs(x, src_key_padding_mask=interop.to_torch_padding_mask(mask))
    out = ours(x, mask)
    real = mask[:, 0, 0, :]  # torch's fast path may leave padded positions different: compare real tokens
    torch.testing.assert_close(out[real], ref[real], atol=ATOL, rtol=0)
    # Without a mask every position counts.
    torch.testing.assert_close(ours(x), theirs(x), atol=ATOL, rtol=0)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_stack_matches_nn_transformer_encoder(norm_first):
    torch.manual_seed(0)
    cfg = ec.EncoderConfig(vocab_size=50, max_len=16, d_model=32, n_heads=4, d_ff=64, n_layers=3,
                           dropout=0.1, norm_first=norm_first, activation="gelu")
    ours = randomise(ec.Encoder(cfg)).eval()
    theirs = interop.to_torch_encoder(ours.layers, ours.final_norm).eval()
    assert isinstance(theirs, nn.TransformerEncoder) and len(theirs.layers) == 3
    assert (ours.final_norm is not None) == norm_first == (theirs.norm is not None)
    ids = torch.randint(1, 50, (2, 9))
    ids[1, 6:] = 0
    mask = ec.padding_mask(ids, 0)
    x = ours.embeddings(ids)
    ref = theirs(x, src_key_padding_mask=interop.to_torch_padding_mask(mask))
    out = ours(ids, mask)
    real = mask[:, 0, 0, :]
    torch.testing.assert_close(out[real], ref[real], atol=ATOL, rtol=0)


def test_fused_and_eager_implementations_agree_in_a_whole_encoder():
    torch.manual_seed(0)
    cfg = ec.EncoderConfig(vocab_size=100, max_len=32, d_model=48, n_heads=6, d_ff=96, n_layers=2)
    fused = randomise(ec.Encoder(cfg)).eval()
    assert cfg.implementation == "fused"  # the default
    eager = ec.Encoder(cfg.replace(implementation="eager")).eval()
    eager.load_state_dict(fused.state_dict())
    ids = torch.randint(1, 100, (3, 20))
    ids[0, 12:] = 0
    mask = ec.padding_mask(ids, 0)
    torch.testing.assert_close(fused(ids, mask), eager(ids, mask), atol=ATOL, rtol=0)
    weights = fused.attention_maps(ids, mask)
    assert len(weights) == 2 and weights[0].shape == (3, 6, 20, 20)
    torch.testing.assert_close(weights[0].sum(-1), torch.ones(3, 6, 20), atol=1e-6, rtol=0)
    assert (weights[0][0, :, :, 12:] == 0).all()  # padding keys get no weight
