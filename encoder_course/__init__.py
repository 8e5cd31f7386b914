"""encoder_course: the Transformer encoder built from scratch in PyTorch, one concept per module.

The model, in course order: positions, attention, masks, multi_head, layer_norm, feed_forward,
block, encoder (with pooling and blockwise attention beside them). Masks are bool with
True = may attend. ``import encoder_course`` loads only torch; the measurements
(``encoder_course.counting``, ``cost``, ``timing``, ...), the bridges to ``torch.nn`` and checkpoints
(``encoder_course.interop``), the figures (``plots``), the widgets (``widgets``), the exercise
checkers (``checks``) and the course machinery (``course``) are imported when asked for.
"""

from .attention import fast_attention, scaled_dot_product_attention
from .block import EncoderBlock
from .blockwise import chunked_attention, online_softmax_attention
from .cost import bytes_per_element, crossover_length, layer_flops, score_bytes
from .counting import count_parameters
from .encoder import Embeddings, Encoder, EncoderConfig
from .feed_forward import FeedForward
from .interop import to_torch_padding_mask
from .layer_norm import LayerNorm
from .masks import causal_mask, padding_mask
from .multi_head import MultiHeadAttention, merge_heads, split_heads
from .pooling import mean_pool
from .positions import LearnedPositions, SinusoidalPositions, rotate_pairs, sinusoidal_positions
from .utils import environment, pick_device, seed_everything, show_source, source_of

__version__ = "0.2.0"

__all__ = [
    "Embeddings", "Encoder", "EncoderBlock", "EncoderConfig", "FeedForward", "LayerNorm",
    "LearnedPositions", "MultiHeadAttention", "SinusoidalPositions", "bytes_per_element",
    "causal_mask", "chunked_attention", "count_parameters", "crossover_length", "environment", "fast_attention",
    "layer_flops", "mean_pool", "merge_heads", "online_softmax_attention", "padding_mask", "pick_device",
    "rotate_pairs", "scaled_dot_product_attention", "score_bytes", "seed_everything", "show_source", "source_of",
    "sinusoidal_positions", "split_heads", "to_torch_padding_mask",
]
