"""Input checks shared by the modules: clear errors that say what was expected and what came."""

from __future__ import annotations

import torch


def shape_str(t: torch.Tensor) -> str:
    """Format a tensor's shape as ``(2, 3, 4)``."""
    return "(" + ", ".join(str(s) for s in t.shape) + ")"


def require_tensor(name: str, value, *, floating: bool = False) -> None:
    """Raise ``TypeError`` unless ``value`` is a tensor (of a floating dtype if asked)."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if floating and not value.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {value.dtype}")


def require_positive_int(name: str, value) -> None:
    """Raise unless ``value`` is an int greater than zero."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} ({value!r})")
    if value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value}")


def require_width(name: str, x: torch.Tensor, d_model: int) -> None:
    """Raise unless ``x`` is a float tensor of rank 3 ``(B, L, d_model)``."""
    require_tensor(name, x, floating=True)
    if x.dim() != 3:
        raise ValueError(
            f"{name} must have 3 dimensions (B, L, d_model={d_model}), got shape {shape_str(x)}"
        )
    if x.shape[-1] != d_model:
        raise ValueError(
            f"{name} last dimension must be d_model ({d_model}), got shape {shape_str(x)}"
        )


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
    try:
        merged = torch.broadcast_shapes(tuple(mask.shape), tuple(target_shape))
    except RuntimeError:
        merged = None
    if merged != torch.Size(target_shape):
        hint = ""
        if mask.dim() == 2 and len(target_shape) == 4 and tuple(mask.shape) == (target_shape[0], target_shape[-1]):
            hint = ("; it looks like a (B, L) padding mask: give it as (B, 1, 1, L), with "
                    "padding_mask(token_ids, pad_id) or mask[:, None, None, :]")
        raise ValueError(
            f"mask of shape {shape_str(mask)} is not broadcastable to the scores' shape {target}{hint}"
        )
