"""encoder_course.measure.bench: the CPU benchmark's three stacks agree, and it runs on tiny sizes."""

from encoder_course.measure import bench


def test_bench_stacks_agree_and_benchmark_runs():
    small = dict(d_model=32, n_heads=4, d_ff=64, n_layers=2)
    results = bench.benchmark(shapes=((2, 8),), warmup=0, repeats=1, config=small)
    (r,) = results
    assert r["max_abs_diff_fused"] < 1e-4 and r["max_abs_diff_eager"] < 1e-4
    assert set(r["median_s"]) == {"torch", "ours_fused", "ours_eager"}
    med = r["median_s"]
    assert all(t > 0 for t in med.values())
    assert r["ratio_fused"] == med["ours_fused"] / med["torch"] and r["ratio_eager"] == med["ours_eager"] / med["torch"]
