"""encoder_course.pooling: mean_pool averages over the real tokens only, and gives zeros where there is none."""

import torch

import encoder_course as ec


def test_mean_pool_averages_the_real_tokens_by_hand():
    hidden = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, -100.0]],  # the last token is padding
                           [[0.0, 6.0], [2.0, 0.0], [4.0, 3.0]]])  # (B=2, L=3, d=2)
    ids = torch.tensor([[7, 8, 0], [7, 8, 9]])
    pooled = ec.mean_pool(hidden, ec.padding_mask(ids, 0))
    assert pooled.shape == (2, 2)
    torch.testing.assert_close(pooled, torch.tensor([[(1.0 + 3.0) / 2, (2.0 + 4.0) / 2],
                                                     [(0.0 + 2.0 + 4.0) / 3, (6.0 + 0.0 + 3.0) / 3]]))
    # Without a mask every token counts, the padding too.
    torch.testing.assert_close(ec.mean_pool(hidden), hidden.mean(dim=1))
    assert not torch.allclose(ec.mean_pool(hidden)[0], pooled[0])


def test_mean_pool_of_a_sequence_with_no_real_token_is_zero():
    hidden = torch.randn(2, 4, 3)
    mask = torch.tensor([[False] * 4, [True, True, False, False]])
    pooled = ec.mean_pool(hidden, mask)
    assert torch.equal(pooled[0], torch.zeros(3))  # zeros, not NaN from 0 / 0
    torch.testing.assert_close(pooled[1], hidden[1, :2].mean(0))


def test_more_padding_does_not_change_the_sentence_vector():
    torch.manual_seed(0)
    enc = ec.Encoder(ec.EncoderConfig(vocab_size=30, max_len=40, d_model=16, n_heads=2, d_ff=32, n_layers=1)).eval()
    sentence = torch.randint(1, 30, (1, 5))
    vectors = []
    with torch.no_grad():
        for pads in (0, 3, 30):
            ids = torch.cat([sentence, torch.zeros(1, pads, dtype=torch.long)], dim=1)
            mask = ec.padding_mask(ids, 0)
            vectors.append(ec.mean_pool(enc(ids, mask), mask))
    torch.testing.assert_close(vectors[1], vectors[0], atol=1e-5, rtol=0)
    torch.testing.assert_close(vectors[2], vectors[0], atol=1e-5, rtol=0)
