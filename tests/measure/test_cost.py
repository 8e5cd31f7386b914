"""encoder_course.measure.cost: FLOP and memory formulas against torch's FLOP counter and real tensors."""

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

import encoder_course as ec
from encoder_course.measure import cost

# ---- formulas vs torch's FLOP counter ----

def test_bert_base_layer_figures_at_512():
    f = cost.layer_flops(512, 768, 3072)
    # multiply-accumulates: QK^T 201M, AV 201M, projections 1.21G, FFN 2.42G (FLOPs are twice these)
    assert f["scores"] // 2 == f["weighted_values"] // 2 == 201_326_592
    assert f["projections"] // 2 == 1_207_959_552
    assert f["ffn"] // 2 == 2_415_919_104
    assert f["total"] == 8_053_063_680
    assert f["ffn"] > f["projections"] > f["scores"]


def test_counter_on_a_real_naive_block_equals_the_formula_and_counts_nothing_else():
    torch.manual_seed(0)
    block = ec.EncoderBlock(768, 12, 3072, implementation="eager").eval()
    x = torch.randn(1, 512, 768)  # (B, L, d_model)
    counter = FlopCounterMode(display=False)
    with counter, torch.inference_mode():
        block(x)
    f = cost.layer_flops(512, 768, 3072)
    assert counter.get_total_flops() == f["total"] == 8_053_063_680
    by_op = {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}
    # Only the matrix products are counted: linear layers (addmm) and the two attention bmm's.
    assert by_op == {"aten.addmm": f["projections"] + f["ffn"], "aten.bmm": f["scores"] + f["weighted_values"]}


def test_fused_block_counted_under_the_math_backend():
    block = ec.EncoderBlock(64, 4, 256, implementation="fused").eval()
    x = torch.randn(2, 40, 64)
    with sdpa_kernel(SDPBackend.MATH), torch.inference_mode():
        assert cost.measure_flops(block, x) == cost.layer_flops(40, 64, 256, batch=2)["total"]


@pytest.mark.parametrize("seq_len", [1, 7, 128, 4608, 16384])
@pytest.mark.parametrize("d_model,n_heads", [(768, 12), (384, 6)])
def test_measured_components_equal_formula(seq_len, d_model, n_heads):
    measured = cost.measured_layer_flops(seq_len, d_model, n_heads, 4 * d_model, batch=2)
    assert measured == cost.layer_flops(seq_len, d_model, 4 * d_model, batch=2)


def test_measured_on_cpu_equals_measured_on_meta():
    assert cost.measured_layer_flops(16, 32, 4, 64, device="cpu") == cost.measured_layer_flops(16, 32, 4, 64)


def test_measure_flops_of_a_matmul():
    a, b = torch.randn(5, 7), torch.randn(7, 3)
    assert cost.measure_flops(torch.mm, a, b) == 2 * 5 * 7 * 3
    with pytest.raises(TypeError):
        cost.measure_flops(42)


def test_crossover_is_where_the_quadratic_part_equals_the_rest():
    for d, d_ff in ((768, 3072), (512, 2048), (384, 1536), (64, 100)):
        L = cost.crossover_length(d, d_ff)
        f = cost.layer_flops(L, d, d_ff)
        assert f["scores"] + f["weighted_values"] == f["projections"] + f["ffn"]
        before, after = cost.layer_flops(L - 1, d, d_ff), cost.layer_flops(L + 1, d, d_ff)
        assert before["scores"] + before["weighted_values"] < before["projections"] + before["ffn"]
        assert after["scores"] + after["weighted_values"] > after["projections"] + after["ffn"]
    assert cost.crossover_length(768, 3072) == 4608 == 6 * 768


def test_attention_flops_match_counter():
    q, k, v = (torch.randn(2, 3, 50, 16) for _ in range(3))
    counted = cost.measure_flops(lambda: ec.scaled_dot_product_attention(q, k, v))
    assert counted == cost.attention_flops(50, 16, n_heads=3, batch=2)


# ---- bytes vs real tensors ----

@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_score_bytes_equal_nbytes_of_materialised_weights(dtype):
    q = torch.randn(2, 3, 33, 8, dtype=dtype)
    _, weights = ec.scaled_dot_product_attention(q, q, q)  # (B, H, L, L)
    assert weights.nbytes == cost.score_bytes(33, n_heads=3, batch=2, dtype=dtype)
    assert cost.bytes_per_element(dtype) == weights.element_size()


def test_one_head_at_4096_in_float16():
    scores = torch.empty(4096, 4096, dtype=torch.float16)
    assert scores.numel() == 16_777_216
    assert scores.nbytes == cost.score_bytes(4096, dtype=torch.float16) == 32 * 2**20
    assert cost.score_bytes(4096, n_heads=16, dtype=torch.float16) == 512 * 2**20


# ---- memory measured on real calls (CPU included) ----

def test_peak_bytes_count_new_tensors_not_views_or_in_place_results():
    x = torch.randn(64, 64)
    assert cost.measure_peak_bytes(lambda: x * 2 + 1) == 2 * x.nbytes  # x * 2 is alive while + 1 runs
    assert cost.measure_peak_bytes(lambda: (x.t(), x.view(-1), x[:8])) == 0  # views allocate nothing
    y = x.clone()
    assert cost.measure_peak_bytes(lambda: y.add_(1).mul_(2)) == 0  # in place
    assert cost.measure_peak_bytes(lambda: x.sum()) == 4  # one float32 number
    with pytest.raises(TypeError, match="callable"):
        cost.measure_peak_bytes(3)


def test_tracker_frees_what_is_freed():
    x = torch.randn(1000)
    with cost.AllocationTracker() as tracker:
        a = x * 2
        b = a + 1
        del a
        c = b * 3  # noqa: F841
    assert tracker.peak_bytes == 2 * x.nbytes
    assert tracker.current_bytes == 2 * x.nbytes  # b and c are alive
    del b
    assert tracker.current_bytes == x.nbytes


def test_naive_attention_holds_scores_and_weights_chunked_and_fused_do_not():
    from encoder_course import blockwise

    L, d = 1024, 64
    q, k, v = (torch.randn(1, 2, L, d) for _ in range(3))  # (B, H, L, d_head)
    scores = cost.score_bytes(L, n_heads=2)
    out = q.nbytes
    with torch.no_grad():
        naive = cost.measure_peak_bytes(ec.scaled_dot_product_attention, q, k, v)
        chunked = cost.measure_peak_bytes(ec.chunked_attention, q, k, v, chunk_size=128)
        online = cost.measure_peak_bytes(blockwise.online_softmax_attention, q, k, v, block_size=128)
        fused = cost.measure_peak_bytes(torch.nn.functional.scaled_dot_product_attention, q, k, v)
    assert naive == 2 * scores + out  # scores and weights are alive at once, then the output
    assert chunked < 2 * scores * 128 // L + 2 * out
    assert online < 8 * scores * 128 // L + 4 * out
    assert fused < 2 * out


def test_saved_for_backward_keeps_the_attention_weights_of_the_step_by_step_path():
    torch.manual_seed(0)
    B, H, L, d, n = 2, 4, 48, 32, 3
    config = ec.EncoderConfig(vocab_size=50, max_len=L, d_model=d, n_heads=H, d_ff=72, n_layers=n, dropout=0.0)
    ids = torch.randint(1, 50, (B, L))
    weights_saved = {}
    for fast in (False, True):
        model = ec.Encoder(config.replace(implementation="fused" if fast else "eager")).train()
        saved = cost.saved_for_backward(model, ids)
        parameter_shapes = {tuple(p.shape) for p in model.parameters()}  # none is an activation's shape here
        assert saved and all(s["bytes"] > 0 for s in saved)
        assert not any(s["shape"] in parameter_shapes for s in saved)  # parameters existed before: not counted
        weights_saved[fast] = [s for s in saved if s["shape"] == (B, H, L, L)]
    assert len(weights_saved[False]) == n  # one (B, H, L, L) tensor of weights per layer
    assert sum(s["bytes"] for s in weights_saved[False]) == n * cost.score_bytes(L, H, B)
    assert weights_saved[True] == []  # the fused kernel keeps no L x L matrix


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_peak_bytes_agree_with_cuda_allocator():
    L = 4096
    q, k, v = (torch.randn(1, 4, L, 64, device="cuda") for _ in range(3))
    with torch.no_grad():
        ec.scaled_dot_product_attention(q, k, v)  # warm-up: the first call also allocates cuBLAS's workspace
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        tracked = cost.measure_peak_bytes(ec.scaled_dot_product_attention, q, k, v)
        allocated = torch.cuda.max_memory_allocated() - base
    assert abs(tracked - allocated) <= 0.02 * allocated
