"""A whole encoder: embeddings, N blocks with their own weights, and a final norm for pre-LN.

:class:`EncoderConfig` holds the hyperparameters of a whole model, with presets for the 2017
Transformer's encoder, BERT-base and all-MiniLM-L6-v2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

import torch
from torch import nn

from ._validate import (
    encoder_mask,
    require_divisible,
    require_int,
    require_length,
    require_positive_int,
    require_positive_number,
    require_probability,
    require_same_shape,
    require_token_ids,
)
from .block import EncoderBlock
from .feed_forward import ACTIVATIONS
from .layer_norm import LayerNorm
from .positions import LearnedPositions, SinusoidalPositions

POSITION_KINDS = ("sinusoidal", "learned")


@dataclass(frozen=True)
class EncoderConfig:
    """Hyperparameters of a whole encoder, checked when created.

    Args:
        vocab_size: number of token ids.
        max_len: longest sequence (size of the position table).
        d_model: width of every token vector.
        n_heads: attention heads per layer.
        d_ff: hidden width of each feed-forward network.
        n_layers: number of encoder blocks.
        dropout: dropout probability (training only).
        norm_first: False for post-LN (2017, BERT), True for pre-LN (adds a final LayerNorm).
        activation: ``"relu"``, ``"gelu"`` or ``"swiglu"``.
        positions: ``"sinusoidal"`` (fixed) or ``"learned"``.
        type_vocab_size: number of token types (segments), 0 for none.
        embedding_norm: LayerNorm after summing the embeddings (BERT).
        scale_embeddings: multiply token embeddings by sqrt(d_model) (2017 paper, section 3.4).
        eps: LayerNorm epsilon.
        pad_id: id of the padding token.
    """

    vocab_size: int = 1000
    max_len: int = 512
    d_model: int = 128
    n_heads: int = 4
    d_ff: int = 512
    n_layers: int = 2
    dropout: float = 0.1
    norm_first: bool = False
    activation: str = "gelu"
    positions: str = "sinusoidal"
    type_vocab_size: int = 0
    embedding_norm: bool = False
    scale_embeddings: bool = False
    eps: float = 1e-5
    pad_id: int = 0

    def __post_init__(self):
        for name in ("vocab_size", "max_len", "d_model", "n_heads", "d_ff", "n_layers"):
            require_positive_int(name, getattr(self, name))
        for name in ("type_vocab_size", "pad_id"):
            require_int(name, getattr(self, name))
        for name in ("norm_first", "embedding_norm", "scale_embeddings"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False, got {getattr(self, name)!r}")
        require_divisible(self.d_model, self.n_heads)
        require_probability("dropout", self.dropout)
        require_positive_number("eps", self.eps)
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if self.positions not in POSITION_KINDS:
            raise ValueError(f"positions must be one of {POSITION_KINDS}, got {self.positions!r}")
        if self.positions == "sinusoidal" and self.d_model % 2:
            raise ValueError(f"sinusoidal positions need an even d_model, got {self.d_model}")
        if self.type_vocab_size < 0:
            raise ValueError(f"type_vocab_size must be >= 0, got {self.type_vocab_size}")
        if not 0 <= self.pad_id < self.vocab_size:
            raise ValueError(f"pad_id must be a token id in [0, {self.vocab_size}), got {self.pad_id}")

    def replace(self, **changes) -> "EncoderConfig":
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    @classmethod
    def original(cls) -> "EncoderConfig":
        """The encoder of the 2017 Transformer (base): 6 post-LN layers, 512 wide, ReLU, sinusoidal."""
        return cls(vocab_size=37000, max_len=512, d_model=512, n_heads=8, d_ff=2048, n_layers=6,
                   dropout=0.1, norm_first=False, activation="relu", positions="sinusoidal",
                   type_vocab_size=0, embedding_norm=False, scale_embeddings=True, eps=1e-5, pad_id=0)

    @classmethod
    def bert_base(cls) -> "EncoderConfig":
        """BERT-base: 12 post-LN layers, 768 wide, 12 heads, 3072 FFN, GELU, learned positions."""
        return cls(vocab_size=30522, max_len=512, d_model=768, n_heads=12, d_ff=3072, n_layers=12,
                   dropout=0.1, norm_first=False, activation="gelu", positions="learned",
                   type_vocab_size=2, embedding_norm=True, scale_embeddings=False, eps=1e-12, pad_id=0)

    @classmethod
    def minilm_l6(cls) -> "EncoderConfig":
        """all-MiniLM-L6-v2: BERT's design with 6 layers, 384 wide, 12 heads, 1536 FFN."""
        return cls.bert_base().replace(d_model=384, n_heads=12, d_ff=1536, n_layers=6)

    def as_dict(self) -> dict:
        """The fields as a plain dict."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


class Embeddings(nn.Module):
    """Token embedding, scaled by sqrt(d_model) if asked, plus positions (+ token type), normalised if
    asked, then dropout.

    Args:
        config: the encoder's hyperparameters (vocabulary, positions, token types, norm, dropout).
        fast: the embedding LayerNorm through PyTorch's fused kernel (True) or step by step.

    Shape:
        ``token_ids`` ``(B, L)`` -> ``(B, L, d_model)``.
    """

    def __init__(self, config: EncoderConfig, fast: bool = True):
        super().__init__()
        self.config = config
        self.token = nn.Embedding(config.vocab_size, config.d_model)
        if config.scale_embeddings:
            # The sqrt(d_model) factor goes with a table of std d_model^-0.5 (as the 2017 code does), so
            # a scaled token vector has about the length of a position vector instead of sqrt(d_model) times it.
            nn.init.normal_(self.token.weight, std=config.d_model ** -0.5)
        positions = LearnedPositions if config.positions == "learned" else SinusoidalPositions
        self.position = positions(config.max_len, config.d_model)
        self.token_type = (nn.Embedding(config.type_vocab_size, config.d_model)
                           if config.type_vocab_size else None)
        self.norm = LayerNorm(config.d_model, eps=config.eps, fast=fast) if config.embedding_norm else None
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, token_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        cfg = self.config
        require_token_ids("token_ids", token_ids, cfg.vocab_size)
        require_length(token_ids.shape[1], cfg.max_len)
        x = self.token(token_ids.long())  # (B, L, d_model)
        if cfg.scale_embeddings:  # section 3.4 of the 2017 paper
            x = x * math.sqrt(cfg.d_model)
        x = self.position(x)  # (B, L, d_model)
        if self.token_type is not None:
            x = x + self.token_type(self._token_types(token_type_ids, token_ids))  # (B, L, d_model)
        elif token_type_ids is not None:
            raise ValueError("token_type_ids were given, but this config has no token types (type_vocab_size=0)")
        if self.norm is not None:
            x = self.norm(x)
        return self.dropout(x)

    def _token_types(self, token_type_ids, token_ids: torch.Tensor) -> torch.Tensor:
        """The token types, checked; all zeros (one segment) when none are given."""
        if token_type_ids is None:
            return torch.zeros_like(token_ids, dtype=torch.long)
        require_token_ids("token_type_ids", token_type_ids, self.config.type_vocab_size)
        require_same_shape("token_type_ids", token_type_ids, "token_ids", token_ids)
        return token_type_ids.long()


class Encoder(nn.Module):
    """A Transformer encoder built from :class:`EncoderConfig`.

    Args:
        config: the hyperparameters.
        fast: attention and LayerNorm through PyTorch's fused kernels (True) or step by step.

    Shape:
        ``token_ids`` ``(B, L)``; ``mask`` bool, either ``(B, L)`` (True = real token) or
        broadcastable to ``(B, H, L, L)`` (True = may attend), e.g. ``padding_mask(ids, pad_id)``;
        returns ``(B, L, d_model)``.
    """

    def __init__(self, config: EncoderConfig, fast: bool = True):
        super().__init__()
        if not isinstance(config, EncoderConfig):
            raise TypeError(f"config must be an EncoderConfig, got {type(config).__name__}")
        self.config = config
        self.embeddings = Embeddings(config, fast=fast)
        # Separate blocks, separate weights (ALBERT would share one block across layers).
        self.layers = nn.ModuleList(
            EncoderBlock(config.d_model, config.n_heads, config.d_ff, dropout=config.dropout,
                         norm_first=config.norm_first, activation=config.activation, eps=config.eps,
                         fast=fast)
            for _ in range(config.n_layers)
        )
        # Pre-LN leaves the residual stream un-normalised: normalise once at the end.
        self.final_norm = LayerNorm(config.d_model, eps=config.eps, fast=fast) if config.norm_first else None

    def forward(self, token_ids: torch.Tensor, mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Encode ``token_ids``: embeddings, every layer in turn, and the final norm of pre-LN."""
        x = self.embeddings(token_ids, token_type_ids)  # (B, L, d_model)
        mask = encoder_mask(mask, token_ids.shape[0], self.config.n_heads, token_ids.shape[1])
        for layer in self.layers:
            x = layer(x, mask)  # (B, L, d_model)
        return x if self.final_norm is None else self.final_norm(x)

    def attention_maps(self, token_ids: torch.Tensor, mask: torch.Tensor | None = None,
                       token_type_ids: torch.Tensor | None = None) -> list[torch.Tensor]:
        """The attention weights of every layer for ``token_ids``: a list of ``(B, H, L, L)``, layer 1 first."""
        x = self.embeddings(token_ids, token_type_ids)  # (B, L, d_model)
        mask = encoder_mask(mask, token_ids.shape[0], self.config.n_heads, token_ids.shape[1])
        maps = []
        for layer in self.layers:
            maps.append(layer.attention_weights(x, mask))  # (B, H, L, L)
            x = layer(x, mask)  # (B, L, d_model)
        return maps
