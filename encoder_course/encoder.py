"""A whole encoder: embeddings, N blocks with their own weights, and a final norm for pre-LN.

:class:`EncoderConfig` holds the hyperparameters of a whole model, with presets for the 2017
Transformer's encoder, BERT-base and all-MiniLM-L6-v2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

import torch
from torch import nn

from ._validate import check_mask, require_tensor, shape_str
from .block import EncoderBlock
from .feed_forward import ACTIVATIONS
from .layer_norm import LayerNorm
from .positions import sinusoidal_positions

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
        for name in ("vocab_size", "max_len", "d_model", "n_heads", "d_ff", "n_layers", "type_vocab_size",
                     "pad_id"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, got {type(value).__name__} ({value!r})")
            if value <= 0 and name not in ("type_vocab_size", "pad_id"):
                raise ValueError(f"{name} must be a positive int, got {value}")
        for name in ("norm_first", "embedding_norm", "scale_embeddings"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False, got {getattr(self, name)!r}")
        for name in ("dropout", "eps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{name} must be a number, got {type(value).__name__} ({value!r})")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if self.positions not in POSITION_KINDS:
            raise ValueError(f"positions must be one of {POSITION_KINDS}, got {self.positions!r}")
        if self.positions == "sinusoidal" and self.d_model % 2:
            raise ValueError(f"sinusoidal positions need an even d_model, got {self.d_model}")
        if self.type_vocab_size < 0:
            raise ValueError(f"type_vocab_size must be >= 0, got {self.type_vocab_size}")
        if not 0 < self.eps < math.inf:
            raise ValueError(f"eps must be a positive finite number, got {self.eps}")
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
    """Token embedding + positions (+ token type), optionally normalised, then dropout.

    Shape:
        ``token_ids`` ``(B, L)`` -> ``(B, L, d_model)``.
    """

    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.config = config
        self.token = nn.Embedding(config.vocab_size, config.d_model)
        if config.positions == "learned":
            self.position = nn.Embedding(config.max_len, config.d_model)
        else:
            self.position = None
            self.register_buffer("sinusoid", sinusoidal_positions(config.max_len, config.d_model),
                                 persistent=False)
        self.token_type = (nn.Embedding(config.type_vocab_size, config.d_model)
                           if config.type_vocab_size else None)
        self.norm = LayerNorm(config.d_model, eps=config.eps) if config.embedding_norm else None
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, token_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        cfg = self.config
        require_tensor("token_ids", token_ids)
        if token_ids.is_floating_point() or token_ids.dtype == torch.bool:
            raise TypeError(f"token_ids must be an integer tensor, got dtype {token_ids.dtype}")
        if token_ids.dim() != 2:
            raise ValueError(f"token_ids must have shape (B, L), got {shape_str(token_ids)}")
        length = token_ids.shape[1]
        if length > cfg.max_len:
            raise ValueError(
                f"sequence length {length} is longer than the position table (max_len {cfg.max_len})"
            )
        if token_ids.numel() and (token_ids.min() < 0 or token_ids.max() >= cfg.vocab_size):
            raise ValueError(
                f"token ids must be in [0, {cfg.vocab_size}), got values from "
                f"{int(token_ids.min())} to {int(token_ids.max())}"
            )
        if token_ids.dtype not in (torch.int32, torch.int64):
            token_ids = token_ids.long()  # nn.Embedding takes only int32 or int64 ids
        x = self.token(token_ids)  # (B, L, d_model)
        if cfg.scale_embeddings:
            x = x * math.sqrt(cfg.d_model)
        if self.position is not None:
            x = x + self.position.weight[:length]  # (B, L, d_model)
        else:
            x = x + self.sinusoid[:length].to(x.dtype)  # (B, L, d_model)
        if self.token_type is not None:
            if token_type_ids is None:
                token_type_ids = torch.zeros_like(token_ids)
            self._check_token_types(token_type_ids, token_ids)
            x = x + self.token_type(token_type_ids.long())  # (B, L, d_model)
        elif token_type_ids is not None:
            raise ValueError("token_type_ids were given, but this config has no token types (type_vocab_size=0)")
        if self.norm is not None:
            x = self.norm(x)
        return self.dropout(x)

    def _check_token_types(self, token_type_ids, token_ids: torch.Tensor) -> None:
        require_tensor("token_type_ids", token_type_ids)
        if token_type_ids.is_floating_point() or token_type_ids.dtype == torch.bool:
            raise TypeError(f"token_type_ids must be an integer tensor, got dtype {token_type_ids.dtype}")
        if token_type_ids.shape != token_ids.shape:
            raise ValueError(f"token_type_ids must have the shape of token_ids {shape_str(token_ids)}, "
                             f"got {shape_str(token_type_ids)}")
        n_types = self.config.type_vocab_size
        if token_type_ids.numel() and (token_type_ids.min() < 0 or token_type_ids.max() >= n_types):
            raise ValueError(f"token types must be in [0, {n_types}), got values from "
                             f"{int(token_type_ids.min())} to {int(token_type_ids.max())}")


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
        self.embeddings = Embeddings(config)
        # Separate blocks, separate weights (ALBERT would share one block across layers).
        self.layers = nn.ModuleList(
            EncoderBlock(config.d_model, config.n_heads, config.d_ff, dropout=config.dropout,
                         norm_first=config.norm_first, activation=config.activation, eps=config.eps,
                         fast=fast)
            for _ in range(config.n_layers)
        )
        # Pre-LN leaves the residual stream un-normalised: normalise once at the end.
        self.final_norm = LayerNorm(config.d_model, eps=config.eps, fast=fast) if config.norm_first else None

    def _prepare_mask(self, mask, token_ids: torch.Tensor):
        if mask is None:
            return None
        batch, length = token_ids.shape
        if isinstance(mask, torch.Tensor) and mask.dim() == 2 and mask.dtype == torch.bool:
            # A 2-D mask here is a padding mask, as Hugging Face's attention_mask. A mask over
            # (query, key) pairs, such as causal_mask(L), must come with its batch and head axes.
            if tuple(mask.shape) != (batch, length):
                raise ValueError(
                    f"a 2-D mask must be a (B, L) padding mask, shape ({batch}, {length}), got "
                    f"{shape_str(mask)}; give an (L, L) mask such as causal_mask(L) as mask[None, None]"
                )
            mask = mask[:, None, None, :]  # (B, 1, 1, L)
        check_mask(mask, (batch, self.config.n_heads, length, length))
        return mask

    def forward(self, token_ids: torch.Tensor, mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, return_weights: bool = False):
        """Encode ``token_ids``; with ``return_weights`` also return each layer's weights ``(B, H, L, L)``."""
        mask = self._prepare_mask(mask, token_ids) if token_ids is not None else mask
        x = self.embeddings(token_ids, token_type_ids)  # (B, L, d_model)
        all_weights = []
        for layer in self.layers:
            if return_weights:
                x, w = layer(x, mask, return_weights=True)
                all_weights.append(w)
            else:
                x = layer(x, mask)  # (B, L, d_model)
        if self.final_norm is not None:
            x = self.final_norm(x)
        return (x, all_weights) if return_weights else x


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Average the token vectors of each sequence over its real tokens.

    Shape:
        ``hidden`` ``(B, L, d)``, ``mask`` bool ``(B, L)`` or ``(B, 1, 1, L)`` (True = real);
        returns ``(B, d)``.
    """
    if mask is None:
        return hidden.mean(dim=1)
    if mask.dim() == 4:
        mask = mask[:, 0, 0, :]  # (B, L)
    weights = mask.to(hidden.dtype).unsqueeze(-1)  # (B, L, 1)
    return (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)  # (B, d)
