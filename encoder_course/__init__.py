"""encoder_course: the Transformer encoder built from scratch in PyTorch, one concept per module.

The top level is the model alone, in course order: positions, attention, masks, multi_head, layer_norm,
feed_forward, block, encoder (with pooling and blockwise attention beside them), and ``count_parameters``,
the breakdown of a model's parameters that the package contract promises. Masks are bool with
True = may attend.

``import encoder_course`` itself imports nothing (not even torch): each name below loads its module
on first use, so ``encoder-course --help`` answers at once. Everything else lives in named subpackages,
imported when asked for: the measurements the notebooks present (``encoder_course.measure``), the bridges
to ``torch.nn``, checkpoints and the pretrained model (``encoder_course.interop``), the notebooks' helpers
(``encoder_course.tools``: ``show_source``, ``seed_everything``, ...), the figures (``plots``), the widgets
(``widgets``), the exercise checkers (``checks``), the learner's own encoder (``yours``) and the course
machinery (``course``).
"""

import importlib as _importlib

__version__ = "0.2.0"

#: Each public name and the module that defines it, in course order.
_SOURCES = {
    "LearnedPositions": "positions", "SinusoidalPositions": "positions", "apply_rotary": "positions",
    "rotate_pairs": "positions", "sinusoidal_positions": "positions",
    "fused_attention": "attention", "scaled_dot_product_attention": "attention",
    "causal_mask": "masks", "padding_mask": "masks", "sliding_window_mask": "masks",
    "MultiHeadAttention": "multi_head", "merge_heads": "multi_head", "split_heads": "multi_head",
    "LayerNorm": "layer_norm",
    "FeedForward": "feed_forward",
    "EncoderBlock": "block",
    "Embeddings": "encoder", "Encoder": "encoder", "EncoderConfig": "encoder", "EncoderParts": "encoder",
    "Packed": "unpadding", "pack": "unpadding", "unpack": "unpadding",
    "mean_pool": "pooling",
    "chunked_attention": "blockwise", "online_softmax_attention": "blockwise",
    "sliding_window_attention": "blockwise",
    "count_parameters": "measure.counting",
}

__all__ = sorted(_SOURCES)


def __getattr__(name: str):
    """Load a public name's module on first use (PEP 562) and keep the name here."""
    module = _SOURCES.get(name)
    if module is None:
        raise AttributeError(f"module 'encoder_course' has no attribute {name!r}")
    value = getattr(_importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The model's names only (what ``ec.<tab>`` offers), whichever modules have loaded."""
    return sorted(_SOURCES)
