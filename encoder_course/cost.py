"""Analytic cost of an encoder layer: FLOPs per component and bytes of the score matrices.

A multiply-accumulate counts as 2 FLOPs, as torch's ``FlopCounterMode`` counts a matmul.
Softmax, LayerNorm, activations, biases and residual adds are left out: they are O(L d) or
O(L^2) elementwise work, small next to the matrix products.
"""

from __future__ import annotations

import torch

from ._validate import require_positive_int


def layer_flops(seq_len: int, d_model: int, d_ff: int, batch: int = 1, gated: bool = False) -> dict[str, int]:
    """Forward FLOPs of one encoder layer's matrix products, per component.

    Args:
        seq_len: L.
        d_model: model width.
        d_ff: feed-forward hidden width.
        batch: number of sequences.
        gated: a gated FFN (SwiGLU) has a third ``d_model x d_ff`` matrix.

    Returns:
        a dict ``projections`` (Q, K, V, O: 8 L d^2), ``scores`` (Q K^T: 2 L^2 d),
        ``weighted_values`` (A V: 2 L^2 d), ``ffn`` (4 L d d_ff, 6 L d d_ff gated), and ``total``.
        The head count does not appear: heads split d_model, they do not add work.
    """
    for name, value in (("seq_len", seq_len), ("d_model", d_model), ("d_ff", d_ff), ("batch", batch)):
        require_positive_int(name, value)
    L, d, b = seq_len, d_model, batch
    out = {
        "projections": b * 8 * L * d * d,
        "scores": b * 2 * L * L * d,
        "weighted_values": b * 2 * L * L * d,
        "ffn": b * (6 if gated else 4) * L * d * d_ff,
    }
    out["total"] = sum(out.values())
    return out


def crossover_length(d_model: int, d_ff: int) -> int:
    """The L where attention's quadratic part (4 L^2 d) equals the rest of the layer (8 L d^2 + 4 L d d_ff).

    Solving 4 L^2 d = 8 L d^2 + 4 L d d_ff gives L = 2 d + d_ff, i.e. 6 d when d_ff = 4 d.
    """
    require_positive_int("d_model", d_model)
    require_positive_int("d_ff", d_ff)
    return 2 * d_model + d_ff


def bytes_per_element(dtype: torch.dtype) -> int:
    """Size of one element of ``dtype`` in bytes."""
    return torch.empty((), dtype=dtype).element_size()


def score_bytes(seq_len: int, n_heads: int = 1, batch: int = 1, dtype: torch.dtype = torch.float32) -> int:
    """Bytes to hold the ``(B, H, L, L)`` score (or weight) matrices of one layer.

    Example: one head at L = 4096 in float16 is 4096^2 x 2 bytes = 32 MiB.
    """
    for name, value in (("seq_len", seq_len), ("n_heads", n_heads), ("batch", batch)):
        require_positive_int(name, value)
    return batch * n_heads * seq_len * seq_len * bytes_per_element(dtype)


# ---------------------------------------------------------------------------------------------
# Measuring: time, peak memory and FLOPs of real calls
# ---------------------------------------------------------------------------------------------


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
    On CPU the runs are timed with ``time.perf_counter`` and ``peak_bytes`` is None: torch's CPU
    allocations bypass Python's ``tracemalloc``, and the process's resident size is too coarse
    (the allocator keeps freed pages) to attribute to one call. Compute the bytes of the big
    tensors with :func:`score_bytes` instead.

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
    import statistics
    import time

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
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn(*args, **kwargs)
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


def measure_flops(fn, *args, **kwargs) -> int:
    """FLOPs that torch's ``FlopCounterMode`` counts while ``fn(*args, **kwargs)`` runs.

    The counter sees matrix products (``mm``, ``addmm``, ``bmm``, attention kernels) and counts a
    multiply-accumulate as 2 FLOPs, as :func:`layer_flops` does. It works on ``meta`` tensors too,
    which have shapes but no data, so long sequences can be counted without memory or time.
    On CPU, ``F.scaled_dot_product_attention`` dispatches to a fused kernel the counter does not
    count (0 FLOPs): count the step-by-step path, or run under
    ``torch.nn.attention.sdpa_kernel(SDPBackend.MATH)``.
    """
    from torch.utils.flop_counter import FlopCounterMode

    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    counter = FlopCounterMode(display=False)
    with counter:
        fn(*args, **kwargs)
    return int(counter.get_total_flops())


def measured_layer_flops(seq_len: int, d_model: int, n_heads: int, d_ff: int, batch: int = 1,
                         device="meta") -> dict[str, int]:
    """:func:`layer_flops`' components, counted by ``FlopCounterMode`` on a real layer.

    Builds a step-by-step :class:`~encoder_course.EncoderBlock` (``fast=False``, no dropout) and
    counts the matrix products of its parts: the four projections, ``Q K^T``, ``A V`` and the FFN,
    and ``total`` for one whole forward pass of the block. On the default ``meta`` device the
    tensors have shapes but no data, so this is instant and needs no memory at any length.

    Returns:
        a dict with the keys of :func:`layer_flops`.
    """
    from .attention import scaled_dot_product_attention
    from .block import EncoderBlock
    from .multi_head import split_heads

    for name, value in (("seq_len", seq_len), ("d_model", d_model), ("n_heads", n_heads),
                        ("d_ff", d_ff), ("batch", batch)):
        require_positive_int(name, value)
    with torch.device(device):
        block = EncoderBlock(d_model, n_heads, d_ff, dropout=0.0, fast=False).eval()
        x = torch.randn(batch, seq_len, d_model)  # (B, L, d_model)
    attn = block.attn
    with torch.no_grad():
        q = split_heads(attn.w_q(x), n_heads)  # (B, H, L, d_head)
        k = split_heads(attn.w_k(x), n_heads)  # (B, H, L, d_head)
        v = split_heads(attn.w_v(x), n_heads)  # (B, H, L, d_head)
        _, weights = scaled_dot_product_attention(q, k, v)  # (B, H, L, L)
        out = {
            "projections": measure_flops(lambda: [w(x) for w in (attn.w_q, attn.w_k, attn.w_v, attn.w_o)]),
            "scores": measure_flops(lambda: q @ k.transpose(-2, -1)),  # (B, H, L, L)
            "weighted_values": measure_flops(lambda: weights @ v),  # (B, H, L, d_head)
            "ffn": measure_flops(block.ffn, x),
            "total": measure_flops(block, x),
        }
    return out


def chunked_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                      mask: torch.Tensor | None = None, chunk_size: int = 1024) -> torch.Tensor:
    """Attention computed a block of queries at a time; the same output as full attention.

    Each query row's softmax needs only its own scores, so the queries can be split into chunks:
    each chunk builds a ``(..., chunk_size, L_k)`` slice of the scores, uses it and drops it.
    Peak memory for scores falls from ``L_q x L_k`` to ``chunk_size x L_k`` per head; the FLOPs
    are unchanged (every query still meets every key). Fully masked query rows give zeros.

    Args:
        q, k, v, mask: as :func:`~encoder_course.scaled_dot_product_attention`.
        chunk_size: queries per chunk.

    Shape:
        q ``(..., L_q, d_k)``, k ``(..., L_k, d_k)``, v ``(..., L_k, d_v)``, mask broadcastable to
        ``(..., L_q, L_k)``; returns ``(..., L_q, d_v)``.
    """
    from ._validate import check_mask
    from .attention import _check_qkv, _scores_shape, scaled_dot_product_attention

    _check_qkv(q, k, v)
    require_positive_int("chunk_size", chunk_size)
    if mask is not None:
        check_mask(mask, _scores_shape(q, k))
    length_q = q.shape[-2]
    pieces = []
    for start in range(0, length_q, chunk_size):
        stop = min(start + chunk_size, length_q)
        chunk_mask = mask
        if mask is not None and mask.dim() >= 2 and mask.shape[-2] != 1:
            chunk_mask = mask[..., start:stop, :]  # (..., chunk, L_k): this chunk's query rows
        out, _ = scaled_dot_product_attention(q[..., start:stop, :], k, v, chunk_mask)  # (..., chunk, d_v)
        pieces.append(out)
    return torch.cat(pieces, dim=-2)  # (..., L_q, d_v)


def attention_flops(seq_len: int, d_head: int, n_heads: int = 1, batch: int = 1) -> int:
    """FLOPs of ``Q K^T`` plus ``A V`` for ``n_heads`` heads of width ``d_head``: ``4 B H L^2 d_head``."""
    for name, value in (("seq_len", seq_len), ("d_head", d_head), ("n_heads", n_heads), ("batch", batch)):
        require_positive_int(name, value)
    return 4 * batch * n_heads * seq_len * seq_len * d_head


def loglog_slope(xs, ys) -> float:
    """Least-squares slope of ``log y`` against ``log x``: the exponent ``p`` in ``y ~ x^p``."""
    import math

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
    import statistics

    import torch.nn.functional as F

    from .attention import scaled_dot_product_attention

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
            if method == "naive":
                def call(q=q, k=k, v=v):
                    return scaled_dot_product_attention(q, k, v)
            elif method == "sdpa":
                def call(q=q, k=k, v=v):
                    return F.scaled_dot_product_attention(q, k, v)
            else:
                def call(q=q, k=k, v=v):
                    return chunked_attention(q, k, v, chunk_size=chunk_size)
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
