"""What the heads of a small RANDOM encoder look at (notebook 04): the baseline before trained heads.

The encoder has :data:`HEAD_LAYERS` layers of :data:`HEAD_COUNT` heads and untrained weights; its
vocabulary is the words of :data:`HEAD_SENTENCES`. Notebook 11 shows the heads of a trained model.
"""

from __future__ import annotations

import torch

from ..encoder import Encoder, EncoderConfig

HEAD_SENTENCES = (
    "the bank approved it",
    "the river bank flooded after the storm",
    "she said the loan was approved",
)
HEAD_LAYERS = 2
HEAD_COUNT = 8

_MODELS: dict[int, Encoder] = {}


def head_vocab() -> dict[str, int]:
    """The word -> id map of the encoder: the words of :data:`HEAD_SENTENCES`, sorted, from id 1 (0 is padding)."""
    words = sorted({w for s in HEAD_SENTENCES for w in s.split()})
    return {w: i + 1 for i, w in enumerate(words)}


def heads_model(seed: int = 0) -> Encoder:
    """The small seeded encoder with 8 heads per layer and random weights (eval mode), built once per seed.

    The caller's random stream is left alone.
    """
    if seed not in _MODELS:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            config = EncoderConfig(vocab_size=len(head_vocab()) + 1, max_len=32, d_model=64, n_heads=HEAD_COUNT,
                                   d_ff=128, n_layers=HEAD_LAYERS, dropout=0.0, pad_id=0)
            _MODELS[seed] = Encoder(config).eval()
    return _MODELS[seed]


def head_weights(sentence: str, layer: int = 0, seed: int = 0) -> torch.Tensor:
    """Attention weights ``(H, L, L)`` of one layer of the random 8-head encoder for a sentence.

    Args:
        sentence: words of :data:`HEAD_SENTENCES`, separated by spaces.
        layer: 0 or 1.
        seed: which random encoder.

    Returns:
        ``(8, L, L)`` weights, one ``L x L`` map per head, rows = queries (each sums to 1), columns = keys.
    """
    vocab = head_vocab()
    words = sentence.split()
    unknown = [w for w in words if w not in vocab]
    if unknown:
        raise ValueError(f"unknown words {unknown}; use one of the sentences {HEAD_SENTENCES}")
    if not 0 <= layer < HEAD_LAYERS:
        raise ValueError(f"layer must be in [0, {HEAD_LAYERS}), got {layer}")
    ids = torch.tensor([[vocab[w] for w in words]])  # (1, L)
    with torch.no_grad():
        maps = heads_model(seed).attention_maps(ids)  # one (1, H, L, L) per layer
    return maps[layer][0]  # (H, L, L)
