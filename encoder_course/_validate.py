"""Every input check of the package, once: clear errors that say what was expected and what came.

Each model ``forward`` guards its inputs with single calls into this module, so the model code reads
like its equations and every check is written, and tested, in one place.
"""

from __future__ import annotations

import math

import torch

HALF_DTYPES = (torch.float16, torch.bfloat16)


def shape_str(t: torch.Tensor) -> str:
    """Format a tensor's shape as ``(2, 3, 4)``."""
    return "(" + ", ".join(str(s) for s in t.shape) + ")"


def broadcast_shape(*shapes) -> tuple[int, ...] | None:
    """The shape that ``shapes`` broadcast to, or None when they do not broadcast.

    Computed here in plain Python: ``torch.broadcast_shapes`` imports ``torch.fx`` and sympy on its
    first call, which costs seconds on a busy machine and must never happen inside a time-limited check.
    """
    out: list[int] = []
    for shape in shapes:
        shape = tuple(shape)
        if len(shape) > len(out):
            out = [1] * (len(shape) - len(out)) + out
        for i, size in enumerate(shape, start=len(out) - len(shape)):
            if size == out[i] or size == 1:
                continue
            if out[i] != 1:
                return None
            out[i] = size
    return tuple(out)


def require_tensor(name: str, value, *, floating: bool = False) -> None:
    """Raise ``TypeError`` unless ``value`` is a tensor (of a floating dtype if asked)."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if floating and not value.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {value.dtype}")


def require_int(name: str, value) -> None:
    """Raise ``TypeError`` unless ``value`` is a Python int (or an integer 0-d tensor); bools are refused."""
    if isinstance(value, torch.Tensor) and value.dim() == 0 and not value.is_floating_point() \
            and value.dtype != torch.bool:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} ({value!r})")


def require_positive_int(name: str, value) -> None:
    """Raise unless ``value`` is an int greater than zero."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} ({value!r})")
    if value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value}")


def require_positive_number(name: str, value) -> None:
    """Raise unless ``value`` is a finite number greater than zero (an epsilon, a base)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} ({value!r})")
    if not 0 < value < math.inf:
        raise ValueError(f"{name} must be a positive finite number, got {value}")


def require_probability(name: str, value) -> None:
    """Raise unless ``value`` is a number in ``[0, 1)`` (a dropout rate)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} ({value!r})")
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value}")


def require_bool(name: str, value) -> None:
    """Raise ``TypeError`` unless ``value`` is exactly True or False (not 0, 1 or "yes")."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")


def require_non_negative_int(name: str, value) -> None:
    """Raise unless ``value`` is an int of zero or more (a count that may be none)."""
    require_int(name, value)
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")


def require_choice(name: str, value, choices: tuple) -> None:
    """Raise ``ValueError`` unless ``value`` is one of ``choices`` (an activation, a kind of positions)."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


#: How attention and LayerNorm are computed: PyTorch's fused kernels, or the course's step-by-step code.
IMPLEMENTATIONS = ("fused", "eager")


def require_implementation(implementation) -> None:
    """Raise unless ``implementation`` is ``"fused"`` (PyTorch's kernels) or ``"eager"`` (step by step)."""
    if implementation not in IMPLEMENTATIONS:
        raise ValueError(f"implementation must be one of {IMPLEMENTATIONS} (\"fused\": PyTorch's fused kernels, "
                         f"\"eager\": the course's step-by-step code), got {implementation!r}")


def require_callable(name: str, value) -> None:
    """Raise ``TypeError`` unless ``value`` can be called (a function or a class given as a part)."""
    if not callable(value):
        raise TypeError(f"{name} must be a function or a class, got {type(value).__name__} ({value!r})")


def require_even(name: str, value: int, purpose: str) -> None:
    """Raise unless ``value`` is even (``purpose`` says what needs pairs)."""
    if value % 2:
        raise ValueError(f"{name} must be even for {purpose}, got {value}")


def require_token_id(name: str, value, vocab_size: int) -> None:
    """Raise unless ``value`` is an int token id in ``[0, vocab_size)``."""
    require_int(name, value)
    if not 0 <= value < vocab_size:
        raise ValueError(f"{name} must be a token id in [0, {vocab_size}), got {value}")


def require_token_types_allowed(token_type_ids, type_vocab_size: int) -> None:
    """Raise when token types are given to an encoder whose config has none."""
    if token_type_ids is not None and not type_vocab_size:
        raise ValueError("token_type_ids were given, but this config has no token types (type_vocab_size=0)")


def require_rotary_input(x, positions) -> None:
    """Raise unless ``x`` is a float ``(..., L, d)`` with an even ``d`` and ``positions`` (if given) is ``(L,)``."""
    require_tensor("x", x, floating=True)
    if x.dim() < 2 or x.shape[-1] % 2:
        raise ValueError(f"x must have shape (..., L, d) with an even d for rotary pairs, got {tuple(x.shape)}")
    if positions is not None:
        require_tensor("positions", positions)
        length = x.shape[-2]
        if positions.shape != (length,):
            raise ValueError(f"positions must have shape (L,) = ({length},), got {tuple(positions.shape)}")


def require_rotary_attention(attn_class, course_class: type) -> None:
    """Raise unless ``attn_class`` is the course's attention (or a subclass): only it turns q and k by position."""
    if not (isinstance(attn_class, type) and issubclass(attn_class, course_class)):
        raise ValueError("rotary positions turn queries and keys inside the course's MultiHeadAttention; a "
                         f"multi_head_attention of your own ({getattr(attn_class, '__name__', attn_class)}) "
                         "takes no rotary function: build this config from the course's class")


def require_divisible(d_model: int, n_heads: int) -> None:
    """Raise unless the heads split ``d_model`` evenly."""
    require_positive_int("d_model", d_model)
    require_positive_int("n_heads", n_heads)
    if d_model % n_heads:
        raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")


def require_rank(name: str, x: torch.Tensor, rank: int, layout: str) -> None:
    """Raise unless ``x`` is a floating-point tensor with ``rank`` dimensions laid out as ``layout``."""
    require_tensor(name, x, floating=True)
    if x.dim() != rank:
        raise ValueError(f"{name} must have {rank} dimensions {layout}, got shape {shape_str(x)}")


def require_width(name: str, x: torch.Tensor, d_model: int) -> None:
    """Raise unless ``x`` is a float tensor of rank 3 ``(B, L, d_model)``."""
    require_rank(name, x, 3, f"(B, L, d_model={d_model})")
    if x.shape[-1] != d_model:
        raise ValueError(f"{name} last dimension must be d_model ({d_model}), got shape {shape_str(x)}")


def require_last_dim(name: str, x: torch.Tensor, size: int) -> None:
    """Raise unless ``x`` is a float tensor whose last dimension is ``size`` (any rank from 1)."""
    require_tensor(name, x, floating=True)
    if x.dim() == 0 or x.shape[-1] != size:
        raise ValueError(f"{name} last dimension must be d_model ({size}), got shape {shape_str(x)}")


def require_length(length: int, max_len: int) -> None:
    """Raise unless a sequence of ``length`` positions fits a position table of ``max_len`` rows."""
    if length > max_len:
        raise ValueError(f"sequence length {length} is longer than the position table (max_len {max_len})")


def require_token_ids(name: str, ids, vocab_size: int | None = None) -> None:
    """Raise unless ``ids`` is an integer ``(B, L)`` tensor, with values in ``[0, vocab_size)`` if given."""
    require_tensor(name, ids)
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise TypeError(f"{name} must be an integer tensor, got dtype {ids.dtype}")
    if ids.dim() != 2:
        raise ValueError(f"{name} must have shape (B, L), got {shape_str(ids)}")
    if vocab_size is not None and ids.numel() and (ids.min() < 0 or ids.max() >= vocab_size):
        raise ValueError(f"{name} must be in [0, {vocab_size}), got values from {int(ids.min())} "
                         f"to {int(ids.max())}")


def require_same_shape(name: str, value: torch.Tensor, other_name: str, other: torch.Tensor) -> None:
    """Raise unless two tensors have the same shape."""
    if value.shape != other.shape:
        raise ValueError(f"{name} must have the shape of {other_name} {shape_str(other)}, got {shape_str(value)}")


def require_qkv(q, k, v) -> None:
    """Raise unless q, k, v are float tensors ``(..., L_q, d_k)``, ``(..., L_k, d_k)``, ``(..., L_k, d_v)``."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        require_tensor(name, t, floating=True)
        if t.dim() < 2:
            raise ValueError(f"{name} must have at least 2 dimensions (..., L, d), got {shape_str(t)}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must share their last dimension d_k: q {shape_str(q)}, k {shape_str(k)}")
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"q, k and v must share one dtype, got q {q.dtype}, k {k.dtype}, v {v.dtype}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have the same number of positions L_k: k {shape_str(k)}, v {shape_str(v)}")
    if broadcast_shape(q.shape[:-2], k.shape[:-2], v.shape[:-2]) is None:
        raise ValueError(
            f"the leading (batch, head) dimensions of q {shape_str(q)}, k {shape_str(k)} and "
            f"v {shape_str(v)} do not broadcast"
        )


def scores_shape(q: torch.Tensor, k: torch.Tensor) -> tuple[int, ...]:
    """The shape ``(..., L_q, L_k)`` of the scores of ``q`` against ``k``."""
    batch = broadcast_shape(q.shape[:-2], k.shape[:-2])
    if batch is None:
        raise ValueError(f"the leading dimensions of q {shape_str(q)} and k {shape_str(k)} do not broadcast")
    return (*batch, q.shape[-2], k.shape[-2])


def check_mask(mask, target_shape: tuple[int, ...]) -> None:
    """Raise unless ``mask`` is a bool tensor broadcastable to ``target_shape``."""
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"mask must be a bool torch.Tensor, got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise TypeError(
            f"mask must have dtype torch.bool (True = may attend), got {mask.dtype}; "
            "convert with `mask.bool()` or build it with padding_mask()/causal_mask()"
        )
    target = "(" + ", ".join(str(s) for s in target_shape) + ")"
    if broadcast_shape(mask.shape, target_shape) != tuple(target_shape):
        hint = ""
        if mask.dim() == 2 and len(target_shape) == 4 and tuple(mask.shape) == (target_shape[0], target_shape[-1]):
            hint = ("; it looks like a (B, L) padding mask: give it as (B, 1, 1, L), with "
                    "padding_mask(token_ids, pad_id) or mask[:, None, None, :]")
        raise ValueError(
            f"mask of shape {shape_str(mask)} is not broadcastable to the scores' shape {target}{hint}"
        )


def encoder_mask(mask, batch: int, n_heads: int, length: int):
    """An encoder's mask, checked: a ``(B, L)`` padding mask becomes ``(B, 1, 1, L)``; others must broadcast.

    A 2-D bool mask is always read as a padding mask (True = real token), as Hugging Face's
    ``attention_mask``, also when ``B == L``. A mask over (query, key) pairs, such as ``causal_mask(L)``,
    must come with its batch and head axes, ``mask[None, None]``: a 2-D (L, L) mask is never guessed at,
    so a batch whose size happens to equal its length means the same as any other.
    """
    if mask is None:
        return None
    if isinstance(mask, torch.Tensor) and mask.dim() == 2 and mask.dtype == torch.bool:
        if tuple(mask.shape) != (batch, length):
            raise ValueError(
                f"a 2-D mask must be a (B, L) padding mask, shape ({batch}, {length}), got "
                f"{shape_str(mask)}; give an (L, L) mask such as causal_mask(L) as mask[None, None]"
            )
        mask = mask[:, None, None, :]  # (B, 1, 1, L)
    check_mask(mask, (batch, n_heads, length, length))
    return mask


def require_pooling_inputs(hidden, mask) -> None:
    """Raise unless ``hidden`` is ``(B, L, d)`` and ``mask`` is a bool ``(B, L)`` or ``(B, 1, 1, L)`` mask."""
    require_rank("hidden", hidden, 3, "(B, L, d)")
    if mask is None:
        return
    require_tensor("mask", mask)
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must have dtype torch.bool (True = real token), got {mask.dtype}")
    batch, length = hidden.shape[:2]
    if tuple(mask.shape) not in ((batch, length), (batch, 1, 1, length)):
        raise ValueError(f"mask must have shape (B, L) = ({batch}, {length}) or (B, 1, 1, L) = "
                         f"({batch}, 1, 1, {length}), got {shape_str(mask)}")


def require_seed(seed) -> None:
    """Raise unless ``seed`` is an int that torch accepts (``0 <= seed < 2**64``)."""
    require_int("seed", seed)
    if not 0 <= int(seed) < 2**64:
        raise ValueError(f"seed must be an int in [0, 2**64), got {seed}")


def require_instance(name: str, value, cls: type) -> None:
    """Raise ``TypeError`` unless ``value`` is an instance of ``cls``."""
    if not isinstance(value, cls):
        article = "an" if cls.__name__[:1] in "AEIOU" else "a"
        raise TypeError(f"{name} must be {article} {cls.__name__}, got {type(value).__name__}")


def require_token_loss_inputs(logits, labels, mask) -> None:
    """Raise unless ``logits`` ``(B, L, C)``, integer ``labels`` and bool ``mask`` ``(B, L)`` fit, with a real token.

    The labels of real tokens must be classes ``0..C-1``; those of padding positions are not read.
    """
    require_rank("logits", logits, 3, "(B, L, C)")
    require_tensor("labels", labels)
    if labels.is_floating_point() or labels.is_complex() or labels.dtype == torch.bool:
        raise TypeError(f"labels must be an integer tensor, got dtype {labels.dtype}")
    require_tensor("mask", mask)
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must have dtype torch.bool (True = real token), got {mask.dtype}")
    expected = tuple(logits.shape[:2])
    for name, t in (("labels", labels), ("mask", mask)):
        if tuple(t.shape) != expected:
            raise ValueError(f"{name} must have shape (B, L) = {expected} like logits {shape_str(logits)}, "
                             f"got {shape_str(t)}")
    if not mask.any():
        raise ValueError("mask has no real token (every position is padding): the mean over none is undefined")
    real = labels[mask]
    if real.min() < 0 or real.max() >= logits.shape[-1]:
        raise ValueError(f"labels of real tokens must be classes in [0, {logits.shape[-1]}), got values from "
                         f"{int(real.min())} to {int(real.max())}")
