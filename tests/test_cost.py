"""encoder_course.cost: formulas against torch's FLOP counter and real tensors, chunked attention,
the timing routine on CPU, the sweep helpers, and the benchmark and GPU scripts on tiny sizes."""

import json
import time

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

import encoder_course as ec
from encoder_course import attention as attention_module
from encoder_course import cost


# ---- formulas vs torch's FLOP counter ----

def test_bert_base_layer_figures_at_512():
    f = ec.layer_flops(512, 768, 3072)
    # multiply-accumulates: QK^T 201M, AV 201M, projections 1.21G, FFN 2.42G (FLOPs are twice these)
    assert f["scores"] // 2 == f["weighted_values"] // 2 == 201_326_592
    assert f["projections"] // 2 == 1_207_959_552
    assert f["ffn"] // 2 == 2_415_919_104
    assert f["total"] == 8_053_063_680
    assert f["ffn"] > f["projections"] > f["scores"]


def test_counter_on_a_real_naive_block_equals_the_formula_and_counts_nothing_else():
    torch.manual_seed(0)
    block = ec.EncoderBlock(768, 12, 3072, fast=False).eval()
    x = torch.randn(1, 512, 768)  # (B, L, d_model)
    counter = FlopCounterMode(display=False)
    with counter, torch.inference_mode():
        block(x)
    f = ec.layer_flops(512, 768, 3072)
    assert counter.get_total_flops() == f["total"] == 8_053_063_680
    by_op = {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}
    # Only the matrix products are counted: linear layers (addmm) and the two attention bmm's.
    assert by_op == {"aten.addmm": f["projections"] + f["ffn"], "aten.bmm": f["scores"] + f["weighted_values"]}


def test_fast_block_counted_under_the_math_backend():
    block = ec.EncoderBlock(64, 4, 256, fast=True).eval()
    x = torch.randn(2, 40, 64)
    with sdpa_kernel(SDPBackend.MATH), torch.inference_mode():
        assert cost.measure_flops(block, x) == ec.layer_flops(40, 64, 256, batch=2)["total"]


@pytest.mark.parametrize("seq_len", [1, 7, 128, 4608, 16384])
@pytest.mark.parametrize("d_model,n_heads", [(768, 12), (384, 6)])
def test_measured_components_equal_formula(seq_len, d_model, n_heads):
    measured = cost.measured_layer_flops(seq_len, d_model, n_heads, 4 * d_model, batch=2)
    assert measured == ec.layer_flops(seq_len, d_model, 4 * d_model, batch=2)


def test_measured_on_cpu_equals_measured_on_meta():
    assert cost.measured_layer_flops(16, 32, 4, 64, device="cpu") == cost.measured_layer_flops(16, 32, 4, 64)


def test_measure_flops_of_a_matmul():
    a, b = torch.randn(5, 7), torch.randn(7, 3)
    assert cost.measure_flops(torch.mm, a, b) == 2 * 5 * 7 * 3
    with pytest.raises(TypeError):
        cost.measure_flops(42)


def test_crossover_is_where_the_quadratic_part_equals_the_rest():
    for d, d_ff in ((768, 3072), (512, 2048), (384, 1536), (64, 100)):
        L = ec.crossover_length(d, d_ff)
        f = ec.layer_flops(L, d, d_ff)
        assert f["scores"] + f["weighted_values"] == f["projections"] + f["ffn"]
        before, after = ec.layer_flops(L - 1, d, d_ff), ec.layer_flops(L + 1, d, d_ff)
        assert before["scores"] + before["weighted_values"] < before["projections"] + before["ffn"]
        assert after["scores"] + after["weighted_values"] > after["projections"] + after["ffn"]
    assert ec.crossover_length(768, 3072) == 4608 == 6 * 768


def test_attention_flops_match_counter():
    q, k, v = (torch.randn(2, 3, 50, 16) for _ in range(3))
    counted = cost.measure_flops(lambda: ec.scaled_dot_product_attention(q, k, v))
    assert counted == cost.attention_flops(50, 16, n_heads=3, batch=2)


# ---- bytes vs real tensors ----

@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_score_bytes_equal_nbytes_of_materialised_weights(dtype):
    q = torch.randn(2, 3, 33, 8, dtype=dtype)
    _, weights = ec.scaled_dot_product_attention(q, q, q)  # (B, H, L, L)
    assert weights.nbytes == ec.score_bytes(33, n_heads=3, batch=2, dtype=dtype)
    assert ec.bytes_per_element(dtype) == weights.element_size()


def test_one_head_at_4096_in_float16():
    scores = torch.empty(4096, 4096, dtype=torch.float16)
    assert scores.numel() == 16_777_216
    assert scores.nbytes == ec.score_bytes(4096, dtype=torch.float16) == 32 * 2**20
    assert ec.score_bytes(4096, n_heads=16, dtype=torch.float16) == 512 * 2**20


# ---- chunked attention ----

def _full(q, k, v, mask=None):
    return ec.scaled_dot_product_attention(q, k, v, mask)[0]


@pytest.mark.parametrize("chunk_size", [1, 3, 8, 17, 100])
def test_chunked_equals_full_without_mask(chunk_size):
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 17, 8), torch.randn(2, 3, 11, 8), torch.randn(2, 3, 11, 5)
    out = cost.chunked_attention(q, k, v, chunk_size=chunk_size)
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
        out = cost.chunked_attention(q, k, v, mask, chunk_size=chunk_size)
        full = _full(q, k, v, mask)
        assert not out.isnan().any(), name
        torch.testing.assert_close(out, full, rtol=1e-5, atol=1e-6, msg=name)
    # fully masked query rows give exactly zero
    rows = masks["query rows"]
    out = cost.chunked_attention(q, k, v, rows, chunk_size=chunk_size)
    dead = ~rows[..., 0]  # (B, 1, L)
    assert (out[dead.expand(B, H, L)] == 0).all()


def test_chunked_holds_only_a_slice_of_the_scores(monkeypatch):
    shapes = []
    original = attention_module.scaled_dot_product_attention

    def spy(q, k, v, mask=None):
        out, weights = original(q, k, v, mask)
        shapes.append(tuple(weights.shape))
        return out, weights

    monkeypatch.setattr(attention_module, "scaled_dot_product_attention", spy)
    q = torch.randn(1, 2, 100, 8)
    cost.chunked_attention(q, q, q, chunk_size=32)
    assert shapes == [(1, 2, 32, 100)] * 3 + [(1, 2, 4, 100)]


def test_chunked_attention_errors_and_inputs_unchanged():
    q = torch.randn(1, 4, 8)
    copy = q.clone()
    cost.chunked_attention(q, q, q, chunk_size=3)
    assert torch.equal(q, copy)
    with pytest.raises(ValueError):
        cost.chunked_attention(q, q, q, chunk_size=0)
    with pytest.raises(TypeError):
        cost.chunked_attention(q, q, q, chunk_size=2.5)
    with pytest.raises(TypeError):
        cost.chunked_attention(q, q, q, mask=torch.ones(4, 4))
    with pytest.raises(ValueError):
        cost.chunked_attention(q, torch.randn(1, 4, 7), q)


def test_chunked_is_exported():
    assert ec.chunked_attention is cost.chunked_attention


# ---- timing ----

def test_time_fn_on_cpu_returns_sane_numbers():
    calls = []

    def work(x, scale=1.0):
        calls.append(1)
        time.sleep(0.002)
        return x * scale

    result = cost.time_fn(work, torch.ones(3), warmup=2, repeats=5, scale=2.0)
    assert len(calls) == 7
    assert len(result["runs_s"]) == 5 and result["repeats"] == 5 and result["warmup"] == 2
    assert result["min_s"] <= result["median_s"] <= max(result["runs_s"])
    assert result["min_s"] >= 0.002
    assert result["median_s"] < 5.0
    assert result["device"] == "cpu"
    assert result["peak_bytes"] is None and result["baseline_bytes"] is None


def test_time_fn_measures_the_call_not_the_warmup():
    slow_first = iter([0.2, 0.0, 0.0, 0.0])
    result = cost.time_fn(lambda: time.sleep(next(slow_first)), warmup=1, repeats=3)
    assert result["median_s"] < 0.2  # the slow call was the (untimed) warm-up


def test_time_fn_errors():
    with pytest.raises(TypeError):
        cost.time_fn(3)
    with pytest.raises(ValueError):
        cost.time_fn(lambda: None, repeats=0)
    with pytest.raises(ValueError):
        cost.time_fn(lambda: None, warmup=-1)
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA"):
            cost.time_fn(lambda: None, device="cuda")


def test_loglog_slope():
    xs = [128, 256, 512, 1024]
    assert cost.loglog_slope(xs, [3 * x**2 for x in xs]) == pytest.approx(2.0)
    assert cost.loglog_slope(xs, [x for x in xs]) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        cost.loglog_slope([1], [1])
    with pytest.raises(ValueError):
        cost.loglog_slope([1, 2], [0, 1])


def test_attention_sweep_rows():
    rows = cost.attention_sweep([16, 32], methods=("naive", "sdpa", "chunked"), n_heads=2, chunk_size=8,
                                warmup=0, repeats=2, max_score_bytes=2 * 32 * 32 * 4 - 1)
    assert [(r["method"], r["seq_len"]) for r in rows] == [
        ("naive", 16), ("sdpa", 16), ("chunked", 16), ("naive", 32), ("sdpa", 32), ("chunked", 32)]
    status = {(r["method"], r["seq_len"]): r["status"] for r in rows}
    assert status[("naive", 32)] == "skipped"  # 8 KiB of scores > the budget
    assert all(s == "ok" for key, s in status.items() if key != ("naive", 32))
    for r in rows:
        assert r["flops"] == 4 * 2 * r["seq_len"] ** 2 * 64
        assert r["score_bytes"] == ec.score_bytes(r["seq_len"], 2)
        if r["status"] == "ok":
            assert r["median_s"] > 0 and r["tflops_per_s"] > 0
    with pytest.raises(ValueError):
        cost.attention_sweep([16], methods=("flash",))


# ---- the scripts, on tiny sizes ----

def test_bench_stacks_agree_and_benchmark_runs():
    from encoder_course import bench

    small = dict(d_model=32, n_heads=4, d_ff=64, n_layers=2)
    results = bench.benchmark(shapes=((2, 8),), warmup=0, repeats=1, config=small)
    (r,) = results
    assert r["max_abs_diff_fast"] < 1e-4 and r["max_abs_diff_naive"] < 1e-4
    assert set(r["median_s"]) == {"torch", "ours_fast", "ours_naive"}
    assert r["ratio_fast"] > 0


def test_gpu_sweep_script_on_cpu(tmp_path):
    from encoder_course import gpu_sweep

    out = tmp_path / "gpu_results.json"
    gpu_sweep.main(["--allow-cpu", "--out", str(out), "--min-len", "16", "--max-len", "32",
                    "--heads", "2", "--d-head", "8", "--repeats", "1", "--warmup", "0"])
    record = json.loads(out.read_text())
    assert {"gpu", "date", "torch", "settings", "summary", "rows"} <= set(record)
    assert {r["method"] for r in record["rows"]} == {"sdpa", "naive", "chunked"}
    assert gpu_sweep.find_results([str(tmp_path / "missing.json"), str(out)]) == record
    assert gpu_sweep.find_results([str(tmp_path / "missing.json")]) is None
