"""encoder_course: the Transformer encoder built from scratch in PyTorch, one concept per module.

Masks are bool with True = may attend. See the course notebooks for the walk-through.
"""

from .attention import fast_attention, scaled_dot_product_attention
from .block import EncoderBlock
from .counting import count_parameters
from .cost import bytes_per_element, chunked_attention, crossover_length, layer_flops, score_bytes
from .encoder import Embeddings, Encoder, EncoderConfig, mean_pool
from .feed_forward import FeedForward
from .layer_norm import LayerNorm
from .masks import causal_mask, padding_mask, to_torch_padding_mask
from .multi_head import MultiHeadAttention, merge_heads, split_heads
from .positions import LearnedPositions, SinusoidalPositions, rotate_pairs, sinusoidal_positions
from .utils import environment, seed_everything, show_source, source_of

__version__ = "0.1.0"

__all__ = [
    "Embeddings", "Encoder", "EncoderBlock", "EncoderConfig", "FeedForward", "LayerNorm",
    "LearnedPositions", "MultiHeadAttention", "SinusoidalPositions", "bytes_per_element",
    "causal_mask", "chunked_attention", "count_parameters", "crossover_length", "environment", "fast_attention",
    "layer_flops", "mean_pool", "merge_heads", "padding_mask", "rotate_pairs",
    "scaled_dot_product_attention", "score_bytes", "seed_everything", "show_source", "source_of",
    "sinusoidal_positions", "split_heads", "to_torch_padding_mask",
]
