"""The cost of an encoder layer: FLOPs and bytes by formula, and both measured on real calls.

A multiply-accumulate counts as 2 FLOPs, as torch's ``FlopCounterMode`` counts a matmul.
Softmax, LayerNorm, activations, biases and residual adds are left out: they are O(L d) or
O(L^2) elementwise work, small next to the matrix products.

Measured: :func:`measure_flops` (torch's FLOP counter), :func:`measure_peak_bytes` (the most
bytes a call's tensors hold at once, on any device, the CPU included) and
:func:`saved_for_backward` (what autograd keeps for the backward pass). Notebook 09 uses them.
"""

from __future__ import annotations

import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from .._validate import require_positive_int


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


def attention_flops(seq_len: int, d_head: int, n_heads: int = 1, batch: int = 1) -> int:
    """FLOPs of ``Q K^T`` plus ``A V`` for ``n_heads`` heads of width ``d_head``: ``4 B H L^2 d_head``."""
    for name, value in (("seq_len", seq_len), ("d_head", d_head), ("n_heads", n_heads), ("batch", batch)):
        require_positive_int(name, value)
    return 4 * batch * n_heads * seq_len * seq_len * d_head


# Counting FLOPs and bytes of real calls


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

    Builds a step-by-step :class:`~encoder_course.EncoderBlock` (``implementation="eager"``, no dropout) and
    counts the matrix products of its parts: the four projections, ``Q K^T``, ``A V`` and the FFN,
    and ``total`` for one whole forward pass of the block. On the default ``meta`` device the
    tensors have shapes but no data, so this is instant and needs no memory at any length.

    Returns:
        a dict with the keys of :func:`layer_flops`.
    """
    from ..attention import scaled_dot_product_attention
    from ..block import EncoderBlock
    from ..multi_head import split_heads

    for name, value in (("seq_len", seq_len), ("d_model", d_model), ("n_heads", n_heads),
                        ("d_ff", d_ff), ("batch", batch)):
        require_positive_int(name, value)
    with torch.device(device):
        block = EncoderBlock(d_model, n_heads, d_ff, dropout=0.0, implementation="eager").eval()
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


# Measuring memory: the bytes of the tensors a call creates, on any device (the CPU included)


class AllocationTracker(TorchDispatchMode):
    """Counts the bytes of the tensors that operations create while it is active: now, and at most.

    Every operation PyTorch runs passes through a dispatch mode. For each tensor an operation returns
    on a storage that none of its inputs had (a new allocation, not a view or an in-place result),
    the tracker adds the storage's bytes, and it takes them off again when that storage is freed
    (``weakref.finalize``). It works on every device, the CPU included, where torch's allocations are
    invisible to Python's ``tracemalloc`` (notebook 09). Tensors that existed before (inputs,
    parameters) are not counted, nor are ``meta`` tensors (they have no storage). What it cannot
    see: scratch memory that a fused kernel allocates and frees inside one operation, and what the
    allocator adds (caching, rounding), which ``torch.cuda.max_memory_allocated`` does include.

    Attributes:
        current_bytes: bytes of the tracked tensors alive now.
        peak_bytes: the most that were alive at once.
        live: ``{storage address: bytes}`` of the tracked storages alive now.

    Example::

        with AllocationTracker() as tracker:
            out = f(x)
        tracker.peak_bytes
    """

    def __init__(self):
        super().__init__()
        self.live: dict[int, int] = {}
        self.current_bytes = 0
        self.peak_bytes = 0

    def _free(self, key: int) -> None:
        self.current_bytes -= self.live.pop(key, 0)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = {t.untyped_storage().data_ptr() for t in tree_flatten((args, kwargs))[0]
                  if isinstance(t, torch.Tensor) and t.device.type != "meta"}
        for t in tree_flatten(out)[0]:
            if not isinstance(t, torch.Tensor) or t.device.type == "meta":
                continue
            storage = t.untyped_storage()
            key, size = storage.data_ptr(), storage.nbytes()
            if size == 0 or key in inputs or key in self.live:  # a view, an in-place result, or known
                continue
            self.live[key] = size
            self.current_bytes += size
            self.peak_bytes = max(self.peak_bytes, self.current_bytes)
            weakref.finalize(storage, self._free, key)
        return out


def measure_peak_bytes(fn, *args, **kwargs) -> int:
    """The most bytes that tensors created by ``fn(*args, **kwargs)`` held at once, measured.

    Inputs and parameters that existed before the call are not counted; everything the call
    allocates is, until it is freed (see :class:`AllocationTracker` for what it cannot see).
    Example: naive attention at L = 2048, one head, float32 holds the scores (16 MiB), the
    weights (16 MiB) and the output at once: about 32.5 MiB.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    tracker = AllocationTracker()
    with tracker:
        result = fn(*args, **kwargs)  # noqa: F841  (kept alive until the peak is read)
    return tracker.peak_bytes


def saved_for_backward(fn, *args, **kwargs) -> list[dict]:
    """What autograd keeps from ``fn(*args, **kwargs)`` for the backward pass, one entry per storage.

    A training forward pass keeps some of its intermediate tensors until ``backward()`` (softmax,
    for one, keeps its output: the attention weights). Only tensors the call created count; the
    parameters and inputs that autograd also keeps existed before and are left out. The tensors stay
    alive as long as the returned graph does; here they are measured and then freed.

    Returns:
        one dict per storage, in the order they were saved: ``shape`` (of the first tensor saved on
        it), ``dtype`` and ``bytes`` (of the whole storage).
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    saved: dict[int, dict] = {}
    tracker = AllocationTracker()

    def pack(t):
        if t.device.type != "meta":
            key = t.untyped_storage().data_ptr()
            if key in tracker.live and key not in saved:
                saved[key] = {"shape": tuple(t.shape), "dtype": t.dtype, "bytes": tracker.live[key]}
        return t

    with tracker, torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        result = fn(*args, **kwargs)  # noqa: F841  (the graph holds the saved tensors until here)
    return list(saved.values())
