"""encoder_course.blockwise: chunked attention (query blocks) and online-softmax attention (key blocks)
equal full attention, hold only a slice of the scores, and handle masks and fully masked rows."""

import pytest
import torch

import encoder_course as ec
from encoder_course import blockwise


def _full(q, k, v, mask=None):
    return ec.scaled_dot_product_attention(q, k, v, mask)[0]


@pytest.mark.parametrize("chunk_size", [1, 3, 8, 17, 100])
def test_chunked_equals_full_without_mask(chunk_size):
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 17, 8), torch.randn(2, 3, 11, 8), torch.randn(2, 3, 11, 5)
    out = blockwise.chunked_attention(q, k, v, chunk_size=chunk_size)
    assert out.shape == (2, 3, 17, 5)
    torch.testing.assert_close(out, _full(q, k, v), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("chunk_size", [1, 4, 16])
def test_chunked_equals_full_with_masks(chunk_size):
    torch.manual_seed(1)
    B, H, L = 3, 2, 13
    q, k, v = (torch.randn(B, H, L, 8) for _ in range(3))
    ids = torch.tensor([[5] * 13, [5] * 9 + [0] * 4, [5] * 2 + [0] * 11])
    masks = {
        "padding": ec.padding_mask(ids, 0),  # (B, 1, 1, L)
        "causal": ec.causal_mask(L),  # (L, L)
        "random full": torch.rand(B, H, L, L) > 0.5,  # (B, H, L, L), some rows fully masked
        "query rows": torch.rand(B, 1, L, 1) > 0.3,  # (B, 1, L, 1): whole query rows masked
    }
    for name, mask in masks.items():
        out = blockwise.chunked_attention(q, k, v, mask, chunk_size=chunk_size)
        full = _full(q, k, v, mask)
        assert not out.isnan().any(), name
        torch.testing.assert_close(out, full, rtol=1e-5, atol=1e-6, msg=name)
    # fully masked query rows give exactly zero
    rows = masks["query rows"]
    out = blockwise.chunked_attention(q, k, v, rows, chunk_size=chunk_size)
    dead = ~rows[..., 0]  # (B, 1, L)
    assert (out[dead.expand(B, H, L)] == 0).all()


def test_chunked_holds_only_a_slice_of_the_scores(monkeypatch):
    shapes = []
    original = blockwise.scaled_dot_product_attention

    def spy(q, k, v, mask=None, **options):
        out, weights = original(q, k, v, mask, **options)
        shapes.append(tuple(weights.shape))
        return out, weights

    monkeypatch.setattr(blockwise, "scaled_dot_product_attention", spy)
    q = torch.randn(1, 2, 100, 8)
    blockwise.chunked_attention(q, q, q, chunk_size=32)
    assert shapes == [(1, 2, 32, 100)] * 3 + [(1, 2, 4, 100)]


def test_chunked_attention_errors_and_inputs_unchanged():
    q = torch.randn(1, 4, 8)
    copy = q.clone()
    blockwise.chunked_attention(q, q, q, chunk_size=3)
    assert torch.equal(q, copy)
    with pytest.raises(ValueError):
        blockwise.chunked_attention(q, q, q, chunk_size=0)
    with pytest.raises(TypeError):
        blockwise.chunked_attention(q, q, q, chunk_size=2.5)
    with pytest.raises(TypeError):
        blockwise.chunked_attention(q, q, q, mask=torch.ones(4, 4))
    with pytest.raises(ValueError):
        blockwise.chunked_attention(q, torch.randn(1, 4, 7), q)


def test_blockwise_attention_with_zero_queries_returns_an_empty_result():
    q, k, v = torch.randn(2, 0, 8), torch.randn(2, 5, 8), torch.randn(2, 5, 3)
    for out in (ec.chunked_attention(q, k, v, chunk_size=2), blockwise.online_softmax_attention(q, k, v)):
        assert out.shape == (2, 0, 3)


def test_chunked_is_exported():
    assert ec.chunked_attention is blockwise.chunked_attention
    assert ec.online_softmax_attention is blockwise.online_softmax_attention


# ---- online softmax over key blocks ----

@pytest.mark.parametrize("block_size", [1, 3, 4, 13, 100])
def test_online_softmax_equals_full_attention(block_size):
    torch.manual_seed(2)
    B, H, L_q, L_k = 2, 3, 7, 13
    q, k, v = torch.randn(B, H, L_q, 8), torch.randn(B, H, L_k, 8), torch.randn(B, H, L_k, 5)
    ids = torch.tensor([[5] * 13, [5] * 4 + [0] * 9])
    masks = {
        "none": None,
        "padding": ec.padding_mask(ids, 0),  # (B, 1, 1, L_k)
        "random, some rows fully masked": torch.rand(B, 1, L_q, L_k) > 0.6,
        "first block masked": torch.arange(L_k) >= 5,  # (L_k,): broadcasts over every query
    }
    for name, mask in masks.items():
        out = blockwise.online_softmax_attention(q, k, v, mask, block_size=block_size)
        assert out.shape == (B, H, L_q, 5), name
        torch.testing.assert_close(out, _full(q, k, v, mask), rtol=1e-5, atol=1e-6, msg=name)


def test_online_softmax_fully_masked_rows_are_zero_and_large_scores_stay_finite():
    torch.manual_seed(3)
    q, k, v = torch.randn(1, 4, 16) * 30, torch.randn(1, 9, 16) * 30, torch.randn(1, 9, 3)
    mask = torch.ones(1, 4, 9, dtype=torch.bool)
    mask[0, 1] = False  # query 1 may attend to nothing
    out = blockwise.online_softmax_attention(q, k, v, mask, block_size=2)
    assert torch.isfinite(out).all()
    assert (out[0, 1] == 0).all()
    torch.testing.assert_close(out, _full(q, k, v, mask), rtol=1e-5, atol=1e-5)


def test_online_softmax_gradients_equal_full_attention():
    torch.manual_seed(4)
    inputs = [torch.randn(2, 5, 8, requires_grad=True), torch.randn(2, 11, 8, requires_grad=True),
              torch.randn(2, 11, 4, requires_grad=True)]
    mask = torch.rand(2, 5, 11) > 0.3
    weights = torch.randn(2, 5, 4)
    (blockwise.online_softmax_attention(*inputs, mask, block_size=4) * weights).sum().backward()
    got = [t.grad.clone() for t in inputs]
    for t in inputs:
        t.grad = None
    (_full(*inputs, mask) * weights).sum().backward()
    for g, t in zip(got, inputs):
        torch.testing.assert_close(g, t.grad, rtol=1e-4, atol=1e-5)


def test_online_softmax_errors_and_inputs_unchanged():
    q = torch.randn(1, 4, 8)
    copy = q.clone()
    blockwise.online_softmax_attention(q, q, q, block_size=3)
    assert torch.equal(q, copy)
    with pytest.raises(ValueError, match="block_size must be a positive int"):
        blockwise.online_softmax_attention(q, q, q, block_size=0)
    with pytest.raises(TypeError, match="torch.bool"):
        blockwise.online_softmax_attention(q, q, q, mask=torch.ones(4, 4))


@pytest.mark.parametrize("length,window", [(17, 4), (16, 8), (5, 1), (9, 3), (30, 64), (33, 10), (1, 2)])
def test_sliding_window_attention_equals_masked_full_attention(length, window):
    torch.manual_seed(length * window)
    q, k, v = torch.randn(3, 2, length, 8), torch.randn(3, 2, length, 8), torch.randn(3, 2, length, 6)
    real = torch.ones(3, length, dtype=torch.bool)
    real[0, (length + 1) // 2:] = False
    real[2, :] = False  # no real key at all: zeros
    mask = ec.sliding_window_mask(length, window)[None, None] & real[:, None, None, :]
    torch.testing.assert_close(ec.sliding_window_attention(q, k, v, window, real[:, None, :]),
                               ec.scaled_dot_product_attention(q, k, v, mask)[0], atol=1e-6, rtol=0)
    torch.testing.assert_close(ec.sliding_window_attention(q, k, v, window),
                               ec.scaled_dot_product_attention(q, k, v, ec.sliding_window_mask(length, window))[0],
                               atol=1e-6, rtol=0)
