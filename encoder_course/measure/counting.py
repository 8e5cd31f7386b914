"""Parameter counts, broken down by what the parameters do: counted on a model, or from its configuration."""

from __future__ import annotations

from torch import nn

from .._validate import require_instance
from ..feed_forward import GATED, FeedForward
from ..layer_norm import LayerNorm
from ..multi_head import MultiHeadAttention

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


def analytic_parameter_counts(config) -> dict[str, int]:
    """Count an encoder's parameters from its configuration alone, with the formulas per component (notebook 08).

    Equal to ``count_parameters(Encoder(config))`` without building the model.

    Args:
        config: an :class:`~encoder_course.EncoderConfig`.

    Returns:
        a dict with the keys ``embeddings, attention, feed_forward, norms, other, total``.
    """
    d, d_ff, n = config.d_model, config.d_ff, config.n_layers
    b = 1 if config.bias else 0  # bias=False (ModernBERT): no bias vectors in the blocks or the norms
    embeddings = config.vocab_size * d  # the token table
    if config.positions == "learned":
        embeddings += config.max_len * d  # the position table (sinusoids and rotations have no parameters)
    embeddings += config.type_vocab_size * d  # token types (segments)
    norm = (1 + b) * d  # gamma (and beta)
    if config.embedding_norm:
        embeddings += norm
    attention = n * 4 * (d * d + b * d)  # w_q, w_k, w_v, w_o (with biases)
    ffn_per_layer = d * d_ff + b * d_ff + d_ff * d + b * d  # w1 and w2 (with biases)
    if config.activation in GATED:
        ffn_per_layer += d * d_ff + b * d_ff  # the gate w3 of SwiGLU and GeGLU
    norms = n * 2 * norm + (norm if config.norm_first else 0)  # two per layer (+ the final one)
    counts = {"embeddings": embeddings, "attention": attention, "feed_forward": n * ffn_per_layer,
              "norms": norms, "other": 0}
    counts["total"] = sum(counts.values())
    return counts


def parameter_count(config) -> int:
    """The number of parameters of ``Encoder(config)``, from the configuration alone (notebook 08's exercise).

    Args:
        config: an :class:`~encoder_course.EncoderConfig`.

    Returns:
        the total that :func:`count_parameters` finds on the built model, without building it.
    """
    from ..encoder import EncoderConfig

    require_instance("config", config, EncoderConfig)
    return analytic_parameter_counts(config)["total"]
