"""encoder_course.attention: scaled_dot_product_attention and fused_attention equal torch's, in every dtype."""

import pytest
import torch
import torch.nn.functional as F
from parity_helpers import ATOL

import encoder_course as ec


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


def test_attention_rows_sum_to_one_and_masked_keys_get_zero():
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 6, 8), torch.randn(2, 3, 6, 4)
    mask = torch.tensor([True, True, True, True, False, False])
    _, w = ec.scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, 5))
    assert torch.all(w[..., 4:] == 0)


def test_half_precision_attention_does_not_overflow():
    # q.k = 16 * 70 * 70 = 78,400 is above float16's largest value (65,504); divided by sqrt(16) it fits.
    q = torch.full((1, 2, 16), 70.0, dtype=torch.float16)
    v = torch.randn(1, 2, 16).half()
    out, weights = ec.scaled_dot_product_attention(q, q, v)
    assert torch.isfinite(out).all() and torch.isfinite(weights).all()
    reference = torch.nn.functional.scaled_dot_product_attention(q.double(), q.double(), v.double())
    assert (out.double() - reference).abs().max() < 1e-2


def test_half_precision_step_by_step_attention_does_not_overflow():
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 6, 64) * 1e3).half(), (torch.randn(1, 2, 6, 64) * 1e3).half(), \
        torch.randn(1, 2, 6, 64).half()
    out, weights = ec.scaled_dot_product_attention(q, k, v)
    assert out.dtype == weights.dtype == torch.float16
    assert torch.isfinite(out).all() and torch.isfinite(weights).all()
    torch.testing.assert_close(out, ec.fused_attention(q, k, v), atol=2e-3, rtol=0)
    torch.testing.assert_close(out.float(), ec.scaled_dot_product_attention(q.float(), k.float(), v.float())[0],
                               atol=2e-3, rtol=0)


# ---- bad input: each error says what was expected and what came ----

def test_q_and_k_must_share_their_width():
    with pytest.raises(ValueError, match="share their last dimension"):
        ec.scaled_dot_product_attention(torch.randn(2, 4), torch.randn(2, 5), torch.randn(2, 5))


def test_attention_mask_errors_name_the_shapes():
    q = torch.randn(2, 4, 8)
    with pytest.raises(TypeError, match="torch.bool"):
        ec.scaled_dot_product_attention(q, q, q, torch.ones(2, 4, 4))
    with pytest.raises(ValueError, match=r"\(2, 3, 4\).*\(2, 4, 4\)"):
        ec.scaled_dot_product_attention(q, q, q, torch.ones(2, 3, 4, dtype=torch.bool))


def test_attention_rejects_mixed_dtypes():
    q = torch.randn(2, 4, 8)
    with pytest.raises(TypeError, match="q, k and v must share one dtype.*float64"):
        ec.scaled_dot_product_attention(q, q.double(), q)


def test_keep_dtype_holds_half_precision_scores_and_gives_the_same_attention():
    # Notebook 09's GPU sweep times the naive path with keep_dtype=True: its peak is two half-precision
    # (B, H, L, L) tensors and the output; by default the scores and weights are taken in float32.
    from encoder_course.measure import cost

    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 64, 16).bfloat16() for _ in range(3))
    scores = cost.score_bytes(64, n_heads=2, dtype=torch.bfloat16)
    with torch.no_grad():
        kept = cost.measure_peak_bytes(lambda: ec.scaled_dot_product_attention(q, k, v, keep_dtype=True))
        default = cost.measure_peak_bytes(ec.scaled_dot_product_attention, q, k, v)
        out, weights = ec.scaled_dot_product_attention(q, k, v, keep_dtype=True)
    assert kept == 2 * scores + q.nbytes
    assert default == 4 * scores + 8 * q.nbytes  # float32 scores and weights, float32 copies of q, k, v and out
    assert out.dtype == weights.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), ec.scaled_dot_product_attention(q.float(), k.float(), v.float())[0],
                               atol=3e-2, rtol=0)
    big = torch.full((1, 2, 16), 70.0, dtype=torch.float16)  # q.k = 78,400 would overflow float16
    assert torch.isfinite(ec.scaled_dot_product_attention(big, big, big, keep_dtype=True)[0]).all()
