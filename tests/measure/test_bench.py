"""encoder_course.measure.bench: the CPU benchmark's three stacks agree, and it runs on tiny sizes."""

import argparse

import pytest

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


def test_the_command_takes_shapes_and_layers_and_names_the_machine(capsys):
    assert bench._shapes("8x128,1x16, 32X512") == ((8, 128), (1, 16), (32, 512))
    for wrong in ("8x128,", "8", "0x16", "ax2", "1x2x3"):
        with pytest.raises(argparse.ArgumentTypeError):
            bench._shapes(wrong)
    assert bench.main(["--layers", "1", "--shapes", "1x4,2x3", "--repeats", "1", "--warmup", "0"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "cores" in out[0] and "torch" in out[0]  # the machine, first
    assert out[1].startswith("1 BERT-base layers")
    assert sum(line.split()[:3] in (["1", "x", "4"], ["2", "x", "3"]) for line in out) == 4  # median and min each


def test_unpadding_times_gives_each_batch_the_three_paths_side_by_side(monkeypatch):
    from encoder_course.encoder import EncoderConfig
    from encoder_course.measure import modern, timing

    rounds = []
    real_side_by_side = timing.time_side_by_side

    def counted(calls, **kwargs):
        rounds.append((tuple(calls), kwargs["rounds"]))
        return real_side_by_side(calls, **kwargs)

    monkeypatch.setattr(modern, "time_side_by_side", counted)
    config = EncoderConfig(vocab_size=50, max_len=16, d_model=32, n_heads=4, d_ff=64, n_layers=2)
    batches = modern.corpus_batches([[5, 6, 7], [8, 9], [10, 11, 12, 13, 14], [7, 7]], 2, 2)
    rows = modern.unpadding_times(batches, config, repeats=2)
    assert [r["shape"] for r in rows] == [(2, 3), (2, 5)]
    assert [round(r["padding"], 6) for r in rows] == [round(1 / 6, 6), 0.3]
    assert rounds == [(("padded_ms", "unpadded_ms", "torch_ms"), 2)] * 2  # in turn, round after round
    for r in rows:
        assert r["speedup"] == r["padded_ms"] / r["unpadded_ms"] and r["vs_torch"] == r["torch_ms"] / r["unpadded_ms"]
