"""Parameter counts, broken down by what the parameters do."""

from __future__ import annotations

from torch import nn

from .feed_forward import FeedForward
from .layer_norm import LayerNorm
from .multi_head import MultiHeadAttention

CATEGORIES = ("embeddings", "attention", "feed_forward", "norms", "other")


def _category(path: str, module: nn.Module) -> str | None:
    if path.split(".")[-1] == "embeddings" or path.startswith("embeddings"):
        return "embeddings"
    if isinstance(module, (MultiHeadAttention, nn.MultiheadAttention)):
        return "attention"
    if isinstance(module, FeedForward):
        return "feed_forward"
    if isinstance(module, (LayerNorm, nn.LayerNorm)):
        return "norms"
    if path.split(".")[-1] in ("linear1", "linear2"):  # nn.TransformerEncoderLayer's FFN
        return "feed_forward"
    return None


def count_parameters(model: nn.Module) -> dict[str, int]:
    """Count a model's parameters by component.

    Embedding tables and the embedding LayerNorm count as ``embeddings``; the four attention
    projections (with biases) as ``attention``; the FFN's linear maps as ``feed_forward``; the
    LayerNorms of the blocks (and a final one) as ``norms``; anything else as ``other``.

    Returns:
        a dict with the keys ``embeddings, attention, feed_forward, norms, other, total``.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    owner: dict[int, str] = {}
    # Outer modules first: the first category found for a parameter wins.
    for path, module in model.named_modules():
        category = _category(path, module)
        if category is None:
            continue
        for p in module.parameters():
            owner.setdefault(id(p), category)
    counts = dict.fromkeys(CATEGORIES, 0)
    for p in model.parameters():  # each shared parameter once
        counts[owner.get(id(p), "other")] += p.numel()
    counts["total"] = sum(counts[c] for c in CATEGORIES)
    return counts
