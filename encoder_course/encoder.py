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
    require_bool,
    require_callable,
    require_choice,
    require_divisible,
    require_even,
    require_implementation,
    require_instance,
    require_length,
    require_non_negative_int,
    require_positive_int,
    require_positive_number,
    require_probability,
    require_same_shape,
    require_token_id,
    require_token_ids,
    require_token_types_allowed,
)
from .attention import scaled_dot_product_attention
from .block import EncoderBlock, build_part
from .feed_forward import ACTIVATIONS, FeedForward
from .layer_norm import LayerNorm
from .masks import sliding_window_mask
from .multi_head import MultiHeadAttention, eval_mode
from .positions import LearnedPositions, SinusoidalPositions, apply_rotary, sinusoidal_positions
from .unpadding import Packed, pack, real_tokens, unpack

POSITION_KINDS = ("sinusoidal", "learned", "rotary")


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
        activation: ``"relu"``, ``"gelu"``, ``"swiglu"`` or ``"geglu"`` (ModernBERT's).
        positions: ``"sinusoidal"`` (fixed) or ``"learned"``, added to the token embeddings, or ``"rotary"``:
            queries and keys turned by position in every attention layer, nothing added to the embeddings.
        type_vocab_size: number of token types (segments), 0 for none.
        embedding_norm: LayerNorm after summing the embeddings (BERT).
        scale_embeddings: multiply token embeddings by sqrt(d_model) (2017 paper, section 3.4).
        eps: LayerNorm epsilon.
        pad_id: id of the padding token.
        implementation: ``"fused"``, attention and LayerNorm through PyTorch's fused kernels, or
            ``"eager"``, the course's step-by-step code (the same numbers; the weights materialised).
        bias: False for no biases in the blocks' linear maps and in every LayerNorm (ModernBERT).
        window: 0 for global attention in every layer; otherwise local layers attend ``window // 2``
            positions on either side (:func:`~encoder_course.masks.sliding_window_mask`).
        global_every: with a window, layers ``0, global_every, 2 * global_every, ...`` stay global and the
            others are local (ModernBERT: every third layer global). 1: every layer global.
        unpad: True to run the layers on the real tokens only, packed into one sequence
            (:mod:`~encoder_course.unpadding`): the same outputs at the real tokens, zeros at the padding.
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
    implementation: str = "fused"
    bias: bool = True
    window: int = 0
    global_every: int = 1
    unpad: bool = False

    def __post_init__(self):
        for name in ("vocab_size", "max_len", "d_model", "n_heads", "d_ff", "n_layers", "global_every"):
            require_positive_int(name, getattr(self, name))
        for name in ("norm_first", "embedding_norm", "scale_embeddings", "bias", "unpad"):
            require_bool(name, getattr(self, name))
        require_non_negative_int("window", self.window)
        require_divisible(self.d_model, self.n_heads)
        require_probability("dropout", self.dropout)
        require_positive_number("eps", self.eps)
        require_choice("activation", self.activation, ACTIVATIONS)
        require_choice("positions", self.positions, POSITION_KINDS)
        if self.positions == "sinusoidal":
            require_even("d_model", self.d_model, "sinusoidal positions")
        if self.positions == "rotary":
            require_even("d_model // n_heads", self.d_model // self.n_heads, "rotary pairs in every head")
        require_non_negative_int("type_vocab_size", self.type_vocab_size)
        require_token_id("pad_id", self.pad_id, self.vocab_size)
        require_implementation(self.implementation)

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

    @classmethod
    def modernbert_base(cls) -> "EncoderConfig":
        """ModernBERT-base's encoder (Warner et al., 2024): 22 pre-LN layers, 768 wide, 12 heads, GeGLU of 1152,
        rotary positions, no biases, a window of 128 with every third layer global, unpadded."""
        return cls(vocab_size=50368, max_len=8192, d_model=768, n_heads=12, d_ff=1152, n_layers=22,
                   dropout=0.0, norm_first=True, activation="geglu", positions="rotary", type_vocab_size=0,
                   embedding_norm=True, scale_embeddings=False, eps=1e-5, pad_id=50283, bias=False, window=128,
                   global_every=3, unpad=True)

    def is_local(self, layer: int) -> bool:
        """Whether layer ``layer`` (counted from 0) attends within a window."""
        return self.window > 0 and layer % self.global_every != 0

    def as_dict(self) -> dict:
        """The fields as a plain dict."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


class Embeddings(nn.Module):
    """Token embedding, scaled by sqrt(d_model) if asked, plus positions (+ token type), normalised if
    asked, then dropout.

    Args:
        config: the encoder's hyperparameters (vocabulary, positions, token types, norm, dropout, and
            the implementation of the embedding LayerNorm).
        parts: the classes and functions to build from (:class:`EncoderParts`: its ``sinusoidal_positions``
            and ``layer_norm``); None for the course's own.

    Shape:
        ``token_ids`` ``(B, L)`` -> ``(B, L, d_model)``.
    """

    def __init__(self, config: EncoderConfig, parts: "EncoderParts | None" = None):
        super().__init__()
        parts = EncoderParts() if parts is None else parts
        require_instance("parts", parts, EncoderParts)
        self.config = config
        self.token = nn.Embedding(config.vocab_size, config.d_model)
        if config.scale_embeddings:
            # The sqrt(d_model) factor goes with a table of std d_model^-0.5 (as the 2017 code does), so
            # a scaled token vector has about the length of a position vector instead of sqrt(d_model) times it.
            nn.init.normal_(self.token.weight, std=config.d_model ** -0.5)
        if config.positions == "learned":
            self.position = LearnedPositions(config.max_len, config.d_model)
        elif config.positions == "sinusoidal":
            self.position = SinusoidalPositions(config.max_len, config.d_model, make_table=parts.sinusoidal_positions)
        else:  # rotary: positions act inside attention, nothing is added here
            self.position = None
        self.token_type = (nn.Embedding(config.type_vocab_size, config.d_model)
                           if config.type_vocab_size else None)
        self.norm = (build_part(parts.layer_norm, LayerNorm, config.d_model, eps=config.eps, bias=config.bias,
                                course_kwargs=dict(implementation=config.implementation))
                     if config.embedding_norm else None)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, token_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        cfg = self.config
        require_token_ids("token_ids", token_ids, cfg.vocab_size)
        require_length(token_ids.shape[1], cfg.max_len)
        require_token_types_allowed(token_type_ids, cfg.type_vocab_size)
        x = self.token(token_ids.long())  # (B, L, d_model)
        if cfg.scale_embeddings:  # section 3.4 of the 2017 paper
            x = x * math.sqrt(cfg.d_model)
        if self.position is not None:
            x = self.position(x)  # (B, L, d_model)
        if self.token_type is not None:
            x = x + self.token_type(self._token_types(token_type_ids, token_ids))  # (B, L, d_model)
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


@dataclass(frozen=True)
class EncoderParts:
    """The classes and functions an :class:`Encoder` is built from, each named like the exercise that writes it.

    The course's own by default. Give others (a learner's, as ``yours.build_encoder`` does) and the encoder is
    built around them: the course's classes among the parts build their own sublayers from these parts
    too, while another class builds its sublayers as it likes. Each part is called with the contract's
    arguments only, as the exercises' skeletons take them:

    * ``sinusoidal_positions(max_len, d_model)`` -> the ``(max_len, d_model)`` table;
    * ``scaled_dot_product_attention(q, k, v, mask)`` -> ``(out, weights)`` (the course's
      ``MultiHeadAttention`` calls it on its step-by-step path);
    * ``multi_head_attention(d_model, n_heads)``, ``layer_norm(d_model, eps=...)``,
      ``feed_forward(d_model, d_ff, activation=...)``;
    * ``encoder_block(d_model, n_heads, d_ff, dropout=..., norm_first=..., activation=..., eps=...)``;
    * ``embeddings(config)``;
    * ``apply_rotary(x, positions)`` -> ``x`` turned by position (rotary positions, in the course's attention);
    * ``sliding_window_mask(length, window)`` -> the ``(L, L)`` mask of local layers.
    """

    sinusoidal_positions: object = sinusoidal_positions  # a function
    scaled_dot_product_attention: object = scaled_dot_product_attention  # a function
    multi_head_attention: type[nn.Module] = MultiHeadAttention
    layer_norm: type[nn.Module] = LayerNorm
    feed_forward: type[nn.Module] = FeedForward
    encoder_block: type[nn.Module] = EncoderBlock
    embeddings: type[nn.Module] = Embeddings
    apply_rotary: object = apply_rotary  # a function
    sliding_window_mask: object = sliding_window_mask  # a function

    def __post_init__(self):
        for f in fields(self):
            require_callable(f.name, getattr(self, f.name))


class Encoder(nn.Module):
    """A Transformer encoder built from :class:`EncoderConfig`.

    Args:
        config: the hyperparameters (``config.implementation`` picks fused kernels or step-by-step code).
        parts: the classes and functions to build it from (:class:`EncoderParts`); None for the course's own.

    Shape:
        ``token_ids`` ``(B, L)``; ``mask`` bool, either ``(B, L)`` (True = real token) or
        broadcastable to ``(B, H, L, L)`` (True = may attend), e.g. ``padding_mask(ids, pad_id)``;
        returns ``(B, L, d_model)``.
    """

    def __init__(self, config: EncoderConfig, parts: EncoderParts | None = None):
        super().__init__()
        require_instance("config", config, EncoderConfig)
        parts = EncoderParts() if parts is None else parts
        require_instance("parts", parts, EncoderParts)
        self.config, self.window_mask = config, parts.sliding_window_mask
        self.embeddings = build_part(parts.embeddings, Embeddings, config, course_kwargs=dict(parts=parts))
        # Separate blocks, separate weights (ALBERT would share one block across layers).
        self.layers = nn.ModuleList(
            build_part(parts.encoder_block, EncoderBlock, config.d_model, config.n_heads, config.d_ff,
                       dropout=config.dropout, norm_first=config.norm_first, activation=config.activation,
                       eps=config.eps, bias=config.bias,
                       course_kwargs=dict(implementation=config.implementation, parts=parts,
                                          rotary=config.positions == "rotary"))
            for _ in range(config.n_layers)
        )
        # Pre-LN leaves the residual stream un-normalised: normalise once at the end.
        self.final_norm = (build_part(parts.layer_norm, LayerNorm, config.d_model, eps=config.eps, bias=config.bias,
                                      course_kwargs=dict(implementation=config.implementation))
                           if config.norm_first else None)

    def forward(self, token_ids: torch.Tensor, mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Encode ``token_ids``: embeddings, every layer in turn, and the final norm of pre-LN.

        With ``config.unpad`` the layers run on the real tokens only (the same outputs there; zeros at the
        padding): ``mask`` must then be a padding mask, ``(B, L)`` or ``(B, 1, 1, L)``, or None.
        """
        if self.config.unpad:
            return self._forward_unpadded(token_ids, mask, token_type_ids)  # (B, L, d_model)
        return self.forward_with_weights(token_ids, mask, token_type_ids, need_weights=False)[0]  # (B, L, d_model)

    def layer_masks(self, mask: torch.Tensor | None, length: int) -> list:
        """Each layer's mask: ``mask`` for a global layer; for a local one, ``mask`` and the window."""
        if not self.config.window:
            return [mask] * len(self.layers)
        device = mask.device if mask is not None else self.embeddings.token.weight.device
        local = self.window_mask(length, self.config.window).to(device)[None, None]  # (1, 1, L, L)
        if mask is not None:
            # A padding query far from every real token would have no key left in its window: let it see itself,
            # so no row is empty (an attention that fills with -inf would give NaN there, and 0 x NaN = NaN
            # would reach the real tokens through the values). A real token's own key is allowed already.
            itself = torch.eye(length, dtype=torch.bool, device=device)
            local = (mask & local) | itself  # (B, 1 or H, L, L)
        return [local if self.config.is_local(i) else mask for i in range(len(self.layers))]

    def _forward_unpadded(self, token_ids, mask, token_type_ids) -> torch.Tensor:
        """The layers on the real tokens only, packed into one sequence ``(1, T, d_model)``."""
        batch, length = token_ids.shape
        x = self.embeddings(token_ids, token_type_ids)  # (B, L, d_model): cheap, a lookup per token
        encoder_mask(mask, batch, self.config.n_heads, length)  # checked as on the padded path
        packed = Packed.from_mask(real_tokens(mask, batch, length).to(x.device))
        local = (packed.with_window(self.window_mask(length, self.config.window).to(x.device))
                 if self.config.window else packed)
        h = pack(x, packed)  # (1, T, d_model)
        for i, layer in enumerate(self.layers):
            layer_mask = local if self.config.is_local(i) else packed
            if not isinstance(layer, EncoderBlock):  # a block that takes masks only: the packed sequence's mask
                layer_mask = layer_mask.dense_mask()  # (1, 1, T, T)
            h = layer(h, layer_mask)  # (1, T, d_model)
        h = h if self.final_norm is None else self.final_norm(h)
        return unpack(h, packed)  # (B, L, d_model)

    def forward_with_weights(self, token_ids: torch.Tensor, mask: torch.Tensor | None = None,
                             token_type_ids: torch.Tensor | None = None, need_weights: bool = True):
        """The encoder's output and every layer's attention weights, from one pass.

        This is the padded path, with ``config.unpad`` too (its packed attention has no ``(B, H, L, L)`` maps).

        Returns:
            ``(out, maps)``: ``out`` ``(B, L, d_model)``; ``maps`` a list of ``(B, H, L, L)``, layer 1 first,
            the weights each layer's attention used (after dropout in training mode), or None when
            ``need_weights`` is False.
        """
        x = self.embeddings(token_ids, token_type_ids)  # (B, L, d_model)
        mask = encoder_mask(mask, token_ids.shape[0], self.config.n_heads, token_ids.shape[1])
        maps = []
        for layer, layer_mask in zip(self.layers, self.layer_masks(mask, token_ids.shape[1])):
            if need_weights:
                x, weights = layer.forward_with_weights(x, layer_mask)  # (B, L, d_model), (B, H, L, L)
                maps.append(weights)
            else:
                x = layer(x, layer_mask)  # (B, L, d_model); any block with the contract's forward (a learner's too)
        x = x if self.final_norm is None else self.final_norm(x)
        return x, (maps if need_weights else None)

    def attention_maps(self, token_ids: torch.Tensor, mask: torch.Tensor | None = None,
                       token_type_ids: torch.Tensor | None = None) -> list[torch.Tensor]:
        """The attention weights of every layer for ``token_ids``, from one eval-mode pass (no dropout), for plots.

        Returns:
            a list of ``(B, H, L, L)``, layer 1 first.
        """
        with eval_mode(self):
            return self.forward_with_weights(token_ids, mask, token_type_ids)[1]
