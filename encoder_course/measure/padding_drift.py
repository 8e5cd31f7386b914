"""How far padding moves the real tokens' outputs, with and without the padding mask (notebook 03).

A small random encoder (2 layers, eval mode, sinusoidal positions) reads the four-token sentence
:data:`PADDING_SENTENCE` alone, then with ``pad_length`` padding tokens appended. Without the padding
mask, the real tokens attend to the pads as well, so their outputs drift; with it they do not move.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from ..encoder import Encoder, EncoderConfig
from ..masks import padding_mask

PADDING_SENTENCE = ("the", "bank", "approved", "it")
PADDING_MAX = 124  # the production story of notebook 03: 3 vs 124 padding positions
PAD_ID = 0
_WORST_GRID_STEP = 31  # worst_drift() looks at 0, 31, 62, 93, 124 padding positions

_MODELS: dict[int, Encoder] = {}
_WORST: dict[int, float] = {}


class PaddedOutputs(NamedTuple):
    """What :func:`padded_outputs` measures."""

    weights: torch.Tensor  # (L, L): the last layer's attention weights, averaged over heads
    drift: torch.Tensor  # (n_real,): each real token's largest output change vs the sentence alone


def padding_model(seed: int = 0) -> Encoder:
    """The small seeded encoder of the experiment (eval mode, no dropout), built once per seed.

    The caller's random stream is left alone.
    """
    if seed not in _MODELS:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            config = EncoderConfig(vocab_size=16, max_len=len(PADDING_SENTENCE) + PADDING_MAX, d_model=32,
                                   n_heads=4, d_ff=64, n_layers=2, dropout=0.0, pad_id=PAD_ID)
            _MODELS[seed] = Encoder(config).eval()
    return _MODELS[seed]


def padded_outputs(use_mask: bool, pad_length: int, seed: int = 0) -> PaddedOutputs:
    """Encode the sentence with ``pad_length`` pads appended, and measure how far its real tokens moved.

    Args:
        use_mask: pass the padding mask to the encoder or not.
        pad_length: padding tokens appended to the four-token sentence (0 to :data:`PADDING_MAX`).
        seed: which random small encoder to use.

    Returns:
        ``(weights, drift)``: the last layer's attention weights ``(L, L)`` averaged over heads, with
        ``L = 4 + pad_length``, and ``(4,)``, each real token's largest absolute output change compared
        with the sentence encoded alone.
    """
    if isinstance(pad_length, bool) or not isinstance(pad_length, int) or not 0 <= pad_length <= PADDING_MAX:
        raise ValueError(f"pad_length must be an int in [0, {PADDING_MAX}], got {pad_length!r}")
    model = padding_model(seed)
    n_real = len(PADDING_SENTENCE)
    sentence = torch.arange(1, n_real + 1)[None, :]  # (1, n_real), ids 1..n_real, pad id 0
    ids = torch.cat([sentence, torch.full((1, pad_length), PAD_ID, dtype=torch.long)], dim=1)  # (1, L)
    mask = padding_mask(ids, PAD_ID) if use_mask else None
    with torch.no_grad():
        alone = model(sentence)  # (1, n_real, d_model): the sentence with no padding at all
        out = model(ids, mask)  # (1, L, d_model)
        weights = model.attention_maps(ids, mask)[-1]  # (1, H, L, L), the last layer
    drift = (out[0, :n_real] - alone[0]).abs().amax(dim=-1)  # (n_real,)
    return PaddedOutputs(weights[0].mean(dim=0), drift)  # (L, L), (n_real,)


def worst_drift(seed: int = 0) -> float:
    """The largest drift without the mask over 0, 31, 62, 93 and 124 pads (computed once per seed).

    The padding explorer fixes its drift axis at this value, so toggling the mask is easy to compare.
    """
    if seed not in _WORST:
        _WORST[seed] = max(float(padded_outputs(False, n, seed).drift.max())
                           for n in range(0, PADDING_MAX + 1, _WORST_GRID_STEP))
    return _WORST[seed]
