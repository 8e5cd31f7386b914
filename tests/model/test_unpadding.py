"""Unpadding: the packed path computes what the padded one does at every real token, on both implementations,
with every switch of the modern encoder, wherever the padding sits; pack and unpack are inverses."""

from __future__ import annotations

import pytest
import torch

import encoder_course as ec
from encoder_course.unpadding import Packed, pack, packed_attention, real_tokens, unpack

SWITCHES = [dict(), dict(positions="rotary"), dict(positions="learned", activation="geglu", bias=False),
            dict(window=4, global_every=2, n_layers=3), dict(norm_first=True, embedding_norm=True),
            dict(positions="rotary", activation="geglu", bias=False, window=3, global_every=3, n_layers=4,
                 norm_first=True)]


def _ids():
    torch.manual_seed(1)
    ids = torch.randint(1, 60, (4, 13))
    ids[0, 9:] = 0  # right padding
    ids[1, :5] = 0  # left padding
    ids[2, 4:7] = 0  # padding in the middle
    return ids  # row 3: no padding


@pytest.mark.parametrize("switches", SWITCHES)
@pytest.mark.parametrize("implementation", ["fused", "eager"])
def test_the_unpadded_encoder_equals_the_padded_one_at_every_real_token(switches, implementation):
    config = ec.EncoderConfig(vocab_size=60, max_len=16, d_model=32, n_heads=4, d_ff=48, dropout=0.0,
                              implementation=implementation, **{"n_layers": 2, **switches})
    torch.manual_seed(0)
    padded = ec.Encoder(config).eval()
    unpadded = ec.Encoder(config.replace(unpad=True)).eval()
    unpadded.load_state_dict(padded.state_dict())
    ids = _ids()
    real = ids != 0
    for mask in (real, real[:, None, None, :]):
        got, want = unpadded(ids, mask), padded(ids, mask)
        torch.testing.assert_close(got[real], want[real], atol=2e-6, rtol=0)
        assert torch.equal(got[~real], torch.zeros_like(got[~real]))  # zeros at the padding


def test_unpadded_gradients_equal_the_padded_ones():
    config = ec.EncoderConfig(vocab_size=60, max_len=16, d_model=32, n_heads=4, d_ff=48, n_layers=2, dropout=0.0,
                              positions="rotary", window=4, global_every=2)
    torch.manual_seed(0)
    padded, unpadded = ec.Encoder(config), ec.Encoder(config.replace(unpad=True))
    unpadded.load_state_dict(padded.state_dict())
    ids = _ids()
    real = ids != 0
    (padded(ids, real)[real] ** 2).sum().backward()
    (unpadded(ids, real)[real] ** 2).sum().backward()
    for (name, a), b in zip(padded.named_parameters(), unpadded.parameters()):
        torch.testing.assert_close(a.grad, b.grad, atol=2e-5, rtol=1e-4, msg=name)


def test_sentences_of_one_length_are_packed_side_by_side_and_attended_together():
    torch.manual_seed(2)
    ids = torch.randint(1, 60, (6, 11))
    for row, n in enumerate([5, 9, 5, 11, 9, 5]):  # three lengths, interleaved in the batch
        ids[row, n:] = 0
    real = ids != 0
    packed = Packed.from_mask(real)
    assert sorted((count, n) for _, count, n, _ in packed.groups) == [(1, 11), (2, 9), (3, 5)]
    for start, count, n, _ in packed.groups:  # each group one slice, its sentences' rows whole and in order
        rows = (packed.index[start:start + count * n] // 11).view(count, n)
        assert (rows == rows[:, :1]).all() and rows[:, 0].tolist() == sorted(set(rows[:, 0].tolist()))
        assert all(real[r].sum() == n for r in rows[:, 0].tolist())
    assert sorted(packed.index.tolist()) == real.reshape(-1).nonzero().squeeze(1).tolist()  # every real token once
    config = ec.EncoderConfig(vocab_size=60, max_len=16, d_model=32, n_heads=4, d_ff=48, dropout=0.0, n_layers=2,
                              positions="rotary", window=4, global_every=2)
    torch.manual_seed(0)
    padded = ec.Encoder(config).eval()
    unpadded = ec.Encoder(config.replace(unpad=True)).eval()
    unpadded.load_state_dict(padded.state_dict())
    torch.testing.assert_close(unpadded(ids, real)[real], padded(ids, real)[real], atol=2e-6, rtol=0)


def test_a_row_of_padding_only_and_no_mask_are_handled():
    config = ec.EncoderConfig(vocab_size=60, max_len=16, d_model=32, n_heads=4, d_ff=48, dropout=0.0, unpad=True)
    model = ec.Encoder(config).eval()
    ids = _ids()
    real = ids != 0
    real[3] = False
    out = model(ids, real)
    assert torch.equal(out[3], torch.zeros_like(out[3])) and torch.isfinite(out).all()
    padded = ec.Encoder(config.replace(unpad=False)).eval()
    padded.load_state_dict(model.state_dict())
    torch.testing.assert_close(model(ids), padded(ids), atol=2e-6, rtol=0)  # no mask: every token real


def test_a_mask_over_pairs_cannot_be_unpadded():
    model = ec.Encoder(ec.EncoderConfig(vocab_size=60, max_len=16, d_model=32, n_heads=4, d_ff=48, unpad=True))
    ids = _ids()
    with pytest.raises(ValueError, match="padding mask"):
        model(ids, ec.causal_mask(13)[None, None])


def test_pack_and_unpack_are_inverses_at_the_real_tokens():
    real = _ids() != 0
    packed = Packed.from_mask(real)
    assert packed.tokens == int(real.sum()) and packed.lengths == tuple(real.sum(1).tolist())
    assert packed.positions.tolist() == real.nonzero()[:, 1].tolist()  # each token's position in its row
    x = torch.randn(4, 13, 5)
    assert pack(x, packed).shape == (1, packed.tokens, 5)
    back = unpack(pack(x, packed), packed)
    assert torch.equal(back[real], x[real]) and not back[~real].any()


def test_the_dense_mask_is_block_diagonal_and_gives_the_same_attention_as_the_loop():
    real = _ids() != 0
    table = ec.sliding_window_mask(13, 4)
    for packed in (Packed.from_mask(real), Packed.from_mask(real).with_window(table)):
        dense = packed.dense_mask()[0, 0]  # (T, T)
        sentence = packed.index // 13  # each token's row in the padded batch
        assert not (dense & (sentence[:, None] != sentence[None, :])).any()  # never across sentences
        if packed.window is not None:  # within a sentence: the window of the padded layout
            pos = packed.positions
            same = sentence[:, None] == sentence[None, :]
            assert torch.equal(dense, same & table[pos][:, pos])
        q, k, v = (torch.randn(1, 2, packed.tokens, 8) for _ in range(3))
        looped = packed_attention(q, k, v, packed, lambda a, b, c, m: ec.scaled_dot_product_attention(a, b, c, m)[0])
        whole = ec.scaled_dot_product_attention(q, k, v, packed.dense_mask())[0]
        torch.testing.assert_close(looped, whole, atol=1e-6, rtol=0)


def test_a_block_that_takes_masks_only_gets_the_packed_sequences_whole_mask():
    class MaskOnlyBlock(torch.nn.Module):  # a learner's block: forward(x, mask) and nothing else
        def __init__(self, d_model, n_heads, d_ff, **kwargs):
            super().__init__()
            self.inner = ec.EncoderBlock(d_model, n_heads, d_ff, dropout=0.0, implementation="eager")

        def forward(self, x, mask=None):
            assert isinstance(mask, torch.Tensor)  # never a Packed
            return self.inner(x, mask)

    config = ec.EncoderConfig(vocab_size=60, max_len=16, d_model=32, n_heads=4, d_ff=48, dropout=0.0)
    parts = ec.EncoderParts(encoder_block=MaskOnlyBlock)
    padded = ec.Encoder(config, parts).eval()
    unpadded = ec.Encoder(config.replace(unpad=True), parts).eval()
    unpadded.load_state_dict(padded.state_dict())
    ids = _ids()
    real = ids != 0
    torch.testing.assert_close(unpadded(ids, real)[real], padded(ids, real)[real], atol=2e-6, rtol=0)


def test_real_tokens_reads_padding_masks_only():
    real = _ids() != 0
    assert torch.equal(real_tokens(real, 4, 13), real)
    assert torch.equal(real_tokens(real[:, None, None, :], 4, 13), real)
    assert real_tokens(None, 2, 3).all()
    with pytest.raises(ValueError, match="padding mask"):
        real_tokens(torch.ones(4, 1, 13, 13, dtype=torch.bool), 4, 13)
