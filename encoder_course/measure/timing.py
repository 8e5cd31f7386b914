"""Timing: how long a call takes (CPU or GPU), how time grows with length, and the GPU sweep.

* :func:`time_fn` times one callable (warm-up, then the median of several runs; CUDA events on a GPU);
  :func:`time_side_by_side` times several in turn, round after round.
* :func:`attention_sweep` times attention alone over sequence lengths for several implementations.
* :func:`allocation_sweep` times naive attention against the same arithmetic in buffers allocated once,
  and counts the fresh memory (page faults) a naive call takes: why its CPU slope can exceed 2.
* :func:`run_sweep` and ``python -m encoder_course.measure.timing`` run the sweep notebook 09 shows on a GPU
  (bf16, fp16 where the card has no bf16, batch 1, 16 heads of width 64) and save it as JSON with the
  GPU's name, the date and the versions::

      python -m encoder_course.measure.timing --out encoder_course/data/gpu_results.json

  Either command draws a PNG next to the JSON (:func:`save_figure`). ``python -m encoder_course.measure.gpu``
  (the GPU script) runs the same sweep and also times notebook 13's unpadding on the GPU
  (``--unpadding-batches``, stored under ``"unpadding"``).

  Every row holds the median time, the peak memory (``torch.cuda.max_memory_allocated``) and the
  achieved TFLOP/s (``4 B H L^2 d_head`` FLOPs over the median). The naive and chunked versions keep
  the half-precision dtype throughout (``keep_dtype=True``), see :func:`attention_sweep`.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import platform
import statistics
import time

import torch
import torch.nn.functional as F

from .._validate import require_positive_int, require_qkv
from ..attention import scaled_dot_product_attention
from ..blockwise import chunked_attention
from .cost import attention_flops, score_bytes


def _infer_device(args, kwargs) -> torch.device:
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            return value.device
    return torch.device("cpu")


def time_fn(fn, *args, warmup: int = 2, repeats: int = 5, device=None, **kwargs) -> dict:
    """Time ``fn(*args, **kwargs)``: warm-up calls, then the median of several timed calls.

    On CUDA the calls are queued asynchronously, so each run is timed with a pair of CUDA events
    around the call and the device is synchronised before reading them; the peak memory is
    ``torch.cuda.max_memory_allocated`` over the timed runs (after ``reset_peak_memory_stats``).
    On CPU (and on Apple's MPS, synchronised around each call) the runs are timed with
    ``time.perf_counter`` and ``peak_bytes`` is None: torch's CPU allocations bypass Python's
    ``tracemalloc``, and the process's resident size is too coarse (the allocator keeps freed
    pages) to attribute to one call. Measure a call's memory with
    :func:`encoder_course.measure.cost.measure_peak_bytes` instead, which counts the bytes of the tensors it creates.

    Args:
        fn: the callable to time; its return value is discarded.
        *args, **kwargs: passed to ``fn``.
        warmup: untimed calls first (allocator, kernel selection, caches).
        repeats: timed calls; the median is robust to one slow run.
        device: ``"cpu"``, ``"cuda"`` or a ``torch.device``; by default the device of the first
            tensor argument (CPU when there is none).

    Returns:
        a dict with ``median_s``, ``min_s``, ``runs_s`` (every timed run, in seconds),
        ``repeats``, ``warmup``, ``device`` (a string), ``peak_bytes`` (int on CUDA, None on CPU)
        and ``baseline_bytes`` (memory allocated before the runs on CUDA, None on CPU).
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    require_positive_int("repeats", repeats)
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be an int >= 0, got {warmup!r}")
    device = _infer_device(args, kwargs) if device is None else torch.device(device)
    on_cuda = device.type == "cuda"
    if on_cuda and not torch.cuda.is_available():
        raise RuntimeError("time_fn was asked to time on CUDA, but torch.cuda.is_available() is False")

    for _ in range(warmup):
        fn(*args, **kwargs)
    runs = []
    peak = baseline = None
    if on_cuda:
        torch.cuda.synchronize(device)
        baseline = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        for _ in range(repeats):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn(*args, **kwargs)
            end.record()
            end.synchronize()
            runs.append(start.elapsed_time(end) / 1000.0)  # elapsed_time is in milliseconds
        torch.cuda.synchronize(device)
        peak = torch.cuda.max_memory_allocated(device)
    else:
        # Apple's MPS queues its work as CUDA does, but has no events here: synchronise around each call.
        sync = torch.mps.synchronize if device.type == "mps" else (lambda: None)
        for _ in range(repeats):
            sync()
            t0 = time.perf_counter()
            fn(*args, **kwargs)
            sync()
            runs.append(time.perf_counter() - t0)
    return {
        "median_s": statistics.median(runs),
        "min_s": min(runs),
        "runs_s": runs,
        "repeats": repeats,
        "warmup": warmup,
        "device": str(device),
        "peak_bytes": peak,
        "baseline_bytes": baseline,
    }


def time_side_by_side(calls: dict, warmup: int = 1, rounds: int = 5, device=None) -> dict:
    """Time several callables in turn, round after round, so that a slow spell of a shared machine falls on all
    of them alike: ``{name: [seconds of each round]}``. Compare them by their fastest rounds (``min``), which
    a busy machine inflates least. ``device`` as :func:`time_fn`'s (a GPU is synchronised around each call)."""
    require_positive_int("rounds", rounds)
    for call in calls.values():
        time_fn(call, warmup=warmup, repeats=1, device=device)
    runs = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            runs[name] += time_fn(call, warmup=0, repeats=1, device=device)["runs_s"]
    return runs


def loglog_slope(xs, ys) -> float:
    """Least-squares slope of ``log y`` against ``log x``: the exponent ``p`` in ``y ~ x^p``."""
    xs, ys = list(xs), list(ys)
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError(f"need at least two (x, y) pairs of equal count, got {len(xs)} x and {len(ys)} y")
    if min(xs) <= 0 or min(ys) <= 0:
        raise ValueError("log-log slope needs positive x and y values")
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    sxx = sum((a - mx) ** 2 for a in lx)
    if sxx == 0:
        raise ValueError("all x values are equal; the slope is undefined")
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sxx


ATTENTION_METHODS = ("naive", "sdpa", "chunked")


def attention_sweep(lengths, *, methods=("naive", "sdpa"), d_head: int = 64, n_heads: int = 1,
                    batch: int = 1, dtype: torch.dtype = torch.float32, device="cpu",
                    warmup: int = 1, repeats: int = 3, chunk_size: int = 1024,
                    max_score_bytes: int | None = None, seed: int = 0) -> list[dict]:
    """Time attention alone over sequence lengths, for several implementations.

    Methods: ``"naive"`` (:func:`~encoder_course.scaled_dot_product_attention`, which
    materialises the ``(B, H, L, L)`` weights), ``"sdpa"`` (``F.scaled_dot_product_attention``,
    fused kernels where the device has them) and ``"chunked"`` (:func:`chunked_attention`).
    Naive and chunked run with ``keep_dtype=True``: in float16 or bfloat16 their scores and weights
    are held in that dtype, as a plain half-precision implementation holds them (so a naive call's
    peak is twice the score matrix plus the output), not in the float32 the model's own calls use.
    Runs under ``torch.inference_mode()``. Every call is warmed up first; then the timed runs go
    round all (length, method) pairs in turn, ``repeats`` times, so that a slow spell on a busy
    machine is spread over all of them instead of spoiling one point. A naive or chunked run whose
    score matrix (or chunk of it) would exceed ``max_score_bytes`` is skipped; on CUDA an
    out-of-memory error is caught and recorded.

    Returns:
        one dict per (length, method): ``method``, ``seq_len``, ``status`` (``"ok"``,
        ``"skipped"`` or ``"oom"``), ``median_s``, ``min_s``, ``runs_s``, ``peak_bytes`` (CUDA
        only: the most memory a call allocated on top of what was held before it, inputs excluded),
        ``flops`` (:func:`attention_flops`), ``tflops_per_s`` (flops / median / 1e12),
        ``score_bytes`` (of the full score matrix), plus the shape settings.
    """
    for method in methods:
        if method not in ATTENTION_METHODS:
            raise ValueError(f"method must be one of {ATTENTION_METHODS}, got {method!r}")
    device = torch.device(device)
    gen = torch.Generator().manual_seed(seed)
    rows, live = [], []
    for length in lengths:
        require_positive_int("length", length)
        q, k, v = (torch.randn(batch, n_heads, length, d_head, generator=gen).to(device=device, dtype=dtype)
                   for _ in range(3))  # (B, H, L, d_head) each
        for method in methods:
            row = {
                "method": method, "seq_len": int(length), "d_head": d_head, "n_heads": n_heads,
                "batch": batch, "dtype": str(dtype).replace("torch.", ""), "device": str(device),
                "flops": attention_flops(length, d_head, n_heads, batch),
                "score_bytes": score_bytes(length, n_heads, batch, dtype),
                "status": "ok", "median_s": None, "min_s": None, "runs_s": [], "peak_bytes": None,
                "tflops_per_s": None,
            }
            rows.append(row)
            held = {"naive": row["score_bytes"], "sdpa": 0,
                    "chunked": row["score_bytes"] * min(chunk_size, length) // length}[method]
            if max_score_bytes is not None and held > max_score_bytes:
                row["status"] = "skipped"
                continue
            if method == "naive":  # half precision kept: the scores and weights in the input's dtype
                def call(q=q, k=k, v=v):
                    return scaled_dot_product_attention(q, k, v, keep_dtype=True)
            elif method == "sdpa":
                def call(q=q, k=k, v=v):
                    return F.scaled_dot_product_attention(q, k, v)
            else:
                def call(q=q, k=k, v=v):
                    return chunked_attention(q, k, v, chunk_size=chunk_size, keep_dtype=True)
            live.append((row, call))

    def timed(row, call, n_warmup):
        try:
            result = time_fn(call, warmup=n_warmup, repeats=1, device=device)
        except torch.cuda.OutOfMemoryError:
            row["status"] = "oom"
            torch.cuda.empty_cache()
            return
        row["runs_s"].extend(result["runs_s"])
        if result["peak_bytes"] is not None:  # what the call added on top of what was already held
            extra = result["peak_bytes"] - result["baseline_bytes"]
            row["peak_bytes"] = max(row["peak_bytes"] or 0, extra)

    with torch.inference_mode():
        for row, call in live:  # warm-up (and a first run, discarded): allocator, kernels, caches
            timed(row, call, warmup)
            row["runs_s"].clear()
        for _ in range(repeats):
            for row, call in live:
                if row["status"] == "ok":
                    timed(row, call, 0)
    for row in rows:
        if row["status"] == "ok" and row["runs_s"]:
            row["median_s"] = statistics.median(row["runs_s"])
            row["min_s"] = min(row["runs_s"])
            row["tflops_per_s"] = row["flops"] / row["median_s"] / 1e12
    return rows


def attention_in_buffers(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scores: torch.Tensor,
                         weights: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """Naive attention's arithmetic written into buffers the caller allocated once: no new L x L tensor.

    The same steps as :func:`~encoder_course.scaled_dot_product_attention` without a mask (the scores,
    their scaling, the softmax, the weighted values), but each result goes into a buffer given by the
    caller instead of a tensor allocated by the call. Notebook 09 times it against the naive version,
    which allocates its ``(..., L_q, L_k)`` tensors anew at every call.

    Shape:
        q ``(..., L_q, d_k)``, k ``(..., L_k, d_k)``, v ``(..., L_k, d_v)``; scores and weights
        ``(..., L_q, L_k)``; out ``(..., L_q, d_v)``; returns ``out``.
    """
    require_qkv(q, k, v)
    torch.matmul(q, k.transpose(-2, -1), out=scores)  # (..., L_q, L_k)
    scores.mul_(1.0 / math.sqrt(q.shape[-1]))  # in place: one pass over the scores, as the division
    torch.softmax(scores, dim=-1, out=weights)  # (..., L_q, L_k), each row sums to 1
    return torch.matmul(weights, v, out=out)  # (..., L_q, d_v)


def fresh_memory_bytes(fn, *args, repeats: int = 3, **kwargs) -> int | None:
    """Bytes of fresh memory the operating system handed the process during one call of ``fn``.

    Counted as minor page faults (``resource.getrusage``) times the page size: a minor fault is the
    first touch of a page the process was given but had not used yet, which the operating system
    zeroes and maps on the spot. Memory the process's allocator already held and reuses costs no
    fault. One call first (not counted), then the fewest faults over ``repeats`` calls.

    Returns:
        bytes per call, or None where Python's ``resource`` module is missing (Windows).
    """
    try:
        import resource
    except ImportError:  # Windows: no getrusage
        return None
    require_positive_int("repeats", repeats)
    fn(*args, **kwargs)
    fewest = None
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        fn(*args, **kwargs)
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
        fewest = faults if fewest is None else min(fewest, faults)
    return fewest * resource.getpagesize()


def machine() -> dict:
    """What the figures were measured on (no paths, no host names)."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            lines = f.read().splitlines()
        for line in lines:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    try:
        import psutil

        memory_gib = round(psutil.virtual_memory().total / 2**30)
    except ImportError:
        memory_gib = None
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": memory_gib, "load_1min_before": load,
            "python": platform.python_version(), "torch": torch.__version__,
            "date": datetime.date.today().isoformat()}


@contextlib.contextmanager
def cpu_threads(n: int):
    """Run the block with ``n`` CPU threads, then restore the caller's setting."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def allocation_sweep(lengths, *, n_heads: int = 2, d_head: int = 64, repeats: int = 5, threads: int = 1,
                     seed: int = 0) -> list[dict]:
    """Naive attention against the same arithmetic in buffers allocated once, over L (CPU, float32).

    For each length: the fastest of ``repeats`` timed calls of each version (the calls go round all
    lengths and both versions in turn, as in :func:`attention_sweep`), and the fresh memory a naive
    call takes from the operating system (:func:`fresh_memory_bytes`). Runs under
    ``torch.inference_mode()`` with ``threads`` CPU threads (one by default: on a busy machine several
    threads wait for each other, which blurs a comparison of two versions), then restores the setting.

    Returns:
        one dict per length: ``seq_len``, ``score_bytes`` (one ``(B, H, L, L)`` float32 tensor),
        ``naive_s`` and ``buffers_s`` (fastest call, seconds), ``fresh_bytes`` (per naive call, or
        None) and ``same_output`` (the two versions agree to 1e-5).
    """
    require_positive_int("repeats", repeats)
    require_positive_int("threads", threads)
    gen = torch.Generator().manual_seed(seed)
    rows, calls = [], []
    with cpu_threads(threads), torch.inference_mode():
        for length in lengths:
            require_positive_int("length", length)
            q, k, v = (torch.randn(1, n_heads, length, d_head, generator=gen) for _ in range(3))  # (B, H, L, d_head)
            scores, weights = (torch.empty(1, n_heads, length, length) for _ in range(2))  # (B, H, L, L), once
            out = torch.empty(1, n_heads, length, d_head)  # (B, H, L, d_head)

            def naive(q=q, k=k, v=v):
                return scaled_dot_product_attention(q, k, v)[0]

            def buffers(q=q, k=k, v=v, scores=scores, weights=weights, out=out):
                return attention_in_buffers(q, k, v, scores, weights, out)

            same = torch.allclose(naive(), buffers(), atol=1e-5)
            rows.append({"seq_len": int(length), "score_bytes": score_bytes(length, n_heads),
                         "naive_s": None, "buffers_s": None, "fresh_bytes": fresh_memory_bytes(naive, repeats=2),
                         "same_output": bool(same)})
            calls.append((rows[-1], naive, buffers))
        for _ in range(repeats):
            for row, naive, buffers in calls:
                for key, fn in (("naive_s", naive), ("buffers_s", buffers)):
                    t0 = time.perf_counter()
                    fn()
                    elapsed = time.perf_counter() - t0
                    row[key] = elapsed if row[key] is None else min(row[key], elapsed)
    return rows


DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")  # encoder_course/data
DEFAULT_OUT = os.path.join(DATA_DIR, "gpu_results.json")


def _lengths(start: int, stop: int) -> list[int]:
    out, length = [], start
    while length <= stop:
        out.append(length)
        length *= 2
    return out


def run_sweep(max_len: int = 32768, naive_max_len: int | None = None, dtype: torch.dtype | None = None,
              n_heads: int = 16, d_head: int = 64, batch: int = 1, warmup: int = 3, repeats: int = 10,
              chunk_size: int = 1024, device: str = "cuda", min_len: int = 512,
              peak_tflops: float | None = None) -> dict:
    """Run the sweep and return the JSON-ready record (see the module docstring)."""
    dev = torch.device(device)
    if dtype is None:
        if dev.type == "cuda":
            dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        else:
            dtype = torch.float32
    if dev.type == "cuda":
        props = torch.cuda.get_device_properties(dev)
        gpu = {"name": props.name, "capability": f"{props.major}.{props.minor}",
               "total_memory_bytes": int(props.total_memory)}
    else:
        gpu = {"name": f"CPU ({platform.processor() or platform.machine()})", "capability": None,
               "total_memory_bytes": None}
    methods = ["sdpa", "naive", "chunked"]
    rows = []
    for length in _lengths(min_len, max_len):
        todo = [m for m in methods if not (m == "naive" and naive_max_len and length > naive_max_len)]
        new = attention_sweep([length], methods=todo, d_head=d_head, n_heads=n_heads, batch=batch,
                              dtype=dtype, device=dev, warmup=warmup, repeats=repeats, chunk_size=chunk_size)
        rows.extend(new)
        for row in new:
            if row["status"] == "oom" and row["method"] in methods:
                methods.remove(row["method"])  # longer inputs will not fit either
        if dev.type == "cuda":
            torch.cuda.empty_cache()

    def ok(method):
        return [r for r in rows if r["method"] == method and r["status"] == "ok"]

    summary = {}
    for method in ("sdpa", "naive", "chunked"):
        done = [r for r in ok(method) if r["seq_len"] >= 2048]
        if len(done) >= 2:
            summary[f"{method}_time_slope"] = loglog_slope([r["seq_len"] for r in done],
                                                           [r["median_s"] for r in done])
        if ok(method):
            summary[f"{method}_max_len"] = max(r["seq_len"] for r in ok(method))
    for length in (4096, 8192):
        hit = [r for r in ok("sdpa") if r["seq_len"] == length]
        if hit:
            summary[f"sdpa_tflops_per_s_at_{length}"] = hit[0]["tflops_per_s"]
            if peak_tflops:
                summary[f"sdpa_fraction_of_peak_at_{length}"] = hit[0]["tflops_per_s"] / peak_tflops
    return {
        "what": "attention alone (Q K^T, softmax, A V), forward, batch 1, inference mode",
        "gpu": gpu,
        "date": datetime.date.today().isoformat(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "settings": {"dtype": str(dtype).replace("torch.", ""), "n_heads": n_heads, "d_head": d_head,
                     "batch": batch, "warmup": warmup, "repeats": repeats, "chunk_size": chunk_size,
                     "peak_tflops_given": peak_tflops},
        "summary": summary,
        "rows": rows,
    }


def find_results(path: str | os.PathLike | None = None):
    """Load a stored GPU sweep (by default the one shipped with the package), or None if there is none."""
    path = DEFAULT_OUT if path is None else path
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def save_figure(record: dict, path: str) -> None:
    """A PNG of a stored record: attention time against L per method, and the unpadding timings if any."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    unpadding = record.get("unpadding", {}).get("rows", [])
    fig, axes = plt.subplots(1, 2 if unpadding else 1, figsize=(12 if unpadding else 6.5, 4), squeeze=False)
    ax = axes[0][0]
    for method in sorted({r["method"] for r in record["rows"]}):
        done = [r for r in record["rows"] if r["method"] == method and r["status"] == "ok"]
        ax.loglog([r["seq_len"] for r in done], [r["median_s"] * 1e3 for r in done], "o-", label=method)
    ax.set(xlabel="sequence length L", ylabel="median time (ms)",
           title=f"attention, {record['gpu']['name']}, {record['settings']['dtype']}")
    ax.legend()
    if unpadding:
        ax = axes[0][1]
        where = range(len(unpadding))
        for shift, key, label in ((-0.27, "padded_ms", "padded"), (0, "unpadded_ms", "unpadded"),
                                  (0.27, "torch_ms", "torch nested")):
            ax.bar([i + shift for i in where], [r[key] for r in unpadding], width=0.27, label=label)
        ax.set_xticks(list(where), [f"{r['padding']:.0%}" for r in unpadding])
        ax.set(xlabel="share of padding in the batch", ylabel="median time (ms)", title="unpadding, 4 layers")
        ax.legend()
    fig.suptitle(f"measured {record['date']}, torch {record['torch']}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None, *, unpadding=None) -> int:
    """The sweep's command; with ``unpadding`` (``measure.bench.unpadding_benchmark``, which the GPU script
    ``python -m encoder_course.measure.gpu`` passes) notebook 13's unpadding is timed too."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=DEFAULT_OUT, help="JSON file to write (default: the package's "
                        "data/gpu_results.json, which notebook 09 shows)")
    parser.add_argument("--max-len", type=int, default=32768, help="longest L for fused attention")
    parser.add_argument("--naive-max-len", type=int, default=None,
                        help="longest L for naive attention (default: until it runs out of memory)")
    parser.add_argument("--min-len", type=int, default=512)
    parser.add_argument("--dtype", choices=("bf16", "fp16", "fp32"), default=None,
                        help="default bf16, or fp16 on cards without bf16")
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--d-head", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--peak-tflops", type=float, default=None,
                        help="the card's dense peak for this dtype, from its data sheet, to report a fraction")
    if unpadding is not None:
        parser.add_argument("--unpadding-batches", type=int, default=6,
                            help="batches of 32 real passages for the unpadding speed-up (notebook 13); 0: skip it")
    parser.add_argument("--figure", default=None,
                        help="PNG of the results (default: the JSON's path with .png)")
    parser.add_argument("--allow-cpu", action="store_true", help="run on CPU (for testing the script only)")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available() and not args.allow_cpu:
        parser.error("CUDA is not available; this sweep is meant for a GPU (use --allow-cpu to test it)")
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, None: None}[args.dtype]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    record = run_sweep(max_len=args.max_len, naive_max_len=args.naive_max_len, dtype=dtype,
                       n_heads=args.heads, d_head=args.d_head, warmup=args.warmup, repeats=args.repeats,
                       device=device, min_len=args.min_len, peak_tflops=args.peak_tflops)
    if unpadding is not None and args.unpadding_batches:
        record["unpadding"] = {
            "what": "all-MiniLM-L6-v2's width, 4 layers, fp32, batches of 32 docstring passages in corpus order: "
                    "our padded path, our unpadded path and nn.TransformerEncoder's nested-tensor fast path",
            "rows": unpadding(batches=args.unpadding_batches, repeats=args.repeats, device=device)}
    folder = os.path.dirname(args.out)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
    print(f"{record['gpu']['name']}, {record['settings']['dtype']}, {record['date']}")
    for row in record["rows"]:
        t = f"{row['median_s'] * 1e3:9.3f} ms" if row["status"] == "ok" else f"{row['status']:>12}"
        tf = f"{row['tflops_per_s']:7.1f} TFLOP/s" if row["tflops_per_s"] else ""
        print(f"{row['method']:>8} L={row['seq_len']:>6} {t} {tf}")
    for key, value in record["summary"].items():
        print(f"{key}: {value:.3f}" if isinstance(value, float) else f"{key}: {value}")
    for row in record.get("unpadding", {}).get("rows", []):
        print(f"batch {tuple(row['shape'])}, {row['padding']:.0%} padding: padded {row['padded_ms']:.2f} ms, "
              f"unpadded {row['unpadded_ms']:.2f} ms ({row['speedup']:.1f}x), torch nested {row['torch_ms']:.2f} ms")
    figure = args.figure or os.path.splitext(args.out)[0] + ".png"
    save_figure(record, figure)
    print(f"wrote {args.out} and {figure}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
