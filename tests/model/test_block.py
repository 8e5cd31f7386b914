"""encoder_course.block: EncoderBlock equals nn.TransformerEncoderLayer (post-LN, pre-LN); dropout only in training."""

import pytest
import torch
from parity_helpers import ATOL, random_padding, randomise
from torch import nn

import encoder_course as ec
from encoder_course import interop


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


def test_dropout_only_in_training():
    torch.manual_seed(0)
    block = ec.EncoderBlock(16, 2, 32, dropout=0.5)
    x = torch.randn(2, 5, 16)
    block.eval()
    assert torch.equal(block(x), block(x))
    block.train()
    assert not torch.equal(block(x), block(x))
