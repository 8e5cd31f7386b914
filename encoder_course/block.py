"""One encoder layer: self-attention and feed-forward, each wrapped in a residual and a LayerNorm.

Post-LN (``norm_first=False``, the 2017 paper and BERT)::

    x = norm1(x + dropout(attn(x)))
    x = norm2(x + dropout(ffn(x)))

Pre-LN (``norm_first=True``, Xiong et al. 2020; GPT-2 and most recent models)::

    x = x + dropout(attn(norm1(x)))
    x = x + dropout(ffn(norm2(x)))

A pre-LN stack keeps an un-normalised residual stream, so it ends with a final LayerNorm
(see :class:`encoder_course.Encoder`).
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import require_implementation, require_probability, require_rotary_attention
from .attention import scaled_dot_product_attention
from .feed_forward import FeedForward
from .layer_norm import LayerNorm
from .multi_head import MultiHeadAttention, eval_mode
from .positions import apply_rotary
from .unpadding import Packed


def build_part(cls, course_cls: type, *args, course_kwargs: dict, bias: bool = True, **kwargs):
    """``cls(*args, **kwargs)``: a part built with the contract's arguments, as a learner's class takes them.

    When ``cls`` is the course's own class (``course_cls`` or a subclass), it gets ``course_kwargs`` too
    (its dropout, implementation and parts) and ``bias``, which a learner's class does not take: a learner's
    part built with ``bias=False`` has its biases taken out afterwards (:func:`without_biases`).
    """
    if isinstance(cls, type) and issubclass(cls, course_cls):
        return cls(*args, **kwargs, **course_kwargs, **({} if bias else {"bias": False}))
    module = cls(*args, **kwargs)
    return module if bias else without_biases(module)


def without_biases(module: nn.Module) -> nn.Module:
    """``module`` with every parameter named ``bias`` taken out: a ``nn.Linear``'s becomes None, any other
    becomes a constant zero (a buffer), so a forward that adds it still runs and adds nothing."""
    for sub in module.modules():
        if isinstance(sub.__dict__.get("_parameters", {}).get("bias"), nn.Parameter):
            zeros = torch.zeros_like(sub.bias.detach())
            del sub._parameters["bias"]
            if isinstance(sub, nn.Linear):
                sub.register_parameter("bias", None)
            else:
                sub.register_buffer("bias", zeros, persistent=False)
    return module


class EncoderBlock(nn.Module):
    """A Transformer encoder layer, post-LN or pre-LN.

    Args:
        d_model: model width.
        n_heads: attention heads (must divide ``d_model``).
        d_ff: hidden width of the feed-forward network.
        dropout: on attention weights, after the FFN activation, and on each sublayer's output
            before the residual add (training only), as ``nn.TransformerEncoderLayer``.
        norm_first: False for post-LN, True for pre-LN.
        activation: ``"relu"``, ``"gelu"`` or ``"swiglu"``.
        eps: LayerNorm epsilon.
        implementation: ``"fused"``, attention and LayerNorm through PyTorch's fused kernels, or
            ``"eager"``, step by step.
        parts: the classes to build the sublayers from (an :class:`~encoder_course.encoder.EncoderParts`:
            its ``multi_head_attention``, ``feed_forward``, ``layer_norm`` and, for the course's attention,
            ``scaled_dot_product_attention`` and ``apply_rotary``); None for the course's own.
        bias: False for sublayers without biases (ModernBERT).
        rotary: True to rotate queries and keys by position (rotary positions) in the course's attention.

    Shape:
        ``x`` ``(B, L, d_model)``, ``mask`` bool broadcastable to ``(B, H, L, L)``, True = may
        attend; returns ``(B, L, d_model)``. A packed sequence is ``x`` ``(1, T, d_model)`` with a
        :class:`~encoder_course.unpadding.Packed` as its mask.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        norm_first: bool = False,
        activation: str = "gelu",
        eps: float = 1e-5,
        implementation: str = "fused",
        parts=None,
        bias: bool = True,
        rotary: bool = False,
    ):
        super().__init__()
        require_probability("dropout", dropout)
        require_implementation(implementation)
        # getattr with a default: with no parts given, the course's own classes.
        attention = getattr(parts, "scaled_dot_product_attention", scaled_dot_product_attention)
        rotate = getattr(parts, "apply_rotary", apply_rotary) if rotary else None
        self.norm_first = bool(norm_first)
        attn_class = getattr(parts, "multi_head_attention", MultiHeadAttention)
        if rotate is not None:
            require_rotary_attention(attn_class, MultiHeadAttention)
        self.attn = build_part(attn_class, MultiHeadAttention, d_model, n_heads, bias=bias,
                               course_kwargs=dict(dropout=dropout, implementation=implementation, attention=attention,
                                                  rotary=rotate))
        self.ffn = build_part(getattr(parts, "feed_forward", FeedForward), FeedForward, d_model, d_ff,
                              activation=activation, bias=bias, course_kwargs=dict(dropout=dropout))
        norm = getattr(parts, "layer_norm", LayerNorm)
        self.norm1 = build_part(norm, LayerNorm, d_model, eps=eps, bias=bias,
                                course_kwargs=dict(implementation=implementation))
        self.norm2 = build_part(norm, LayerNorm, d_model, eps=eps, bias=bias,
                                course_kwargs=dict(implementation=implementation))
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | Packed | None = None) -> torch.Tensor:
        """Run the layer: attention, then the feed-forward network, each with its residual and norm."""
        return self.forward_with_weights(x, mask, need_weights=False)[0]  # (B, L, d_model)

    def forward_with_weights(self, x: torch.Tensor, mask: torch.Tensor | None = None, need_weights: bool = True):
        """The layer's output and the attention weights it used, from one pass.

        Returns:
            ``(out, weights)``: ``out`` ``(B, L, d_model)``; ``weights`` ``(B, H, L, L)``, the ones the
            attention multiplied with its values (after dropout in training mode), or None when
            ``need_weights`` is False.
        """
        if self.norm_first:
            a, weights = self._attend(self.norm1(x), mask, need_weights)  # (B, L, d_model)
            x = x + self.dropout1(a)  # (B, L, d_model)
            x = x + self.dropout2(self.ffn(self.norm2(x)))  # (B, L, d_model)
        else:
            a, weights = self._attend(x, mask, need_weights)  # (B, L, d_model)
            x = self.norm1(x + self.dropout1(a))  # (B, L, d_model)
            x = self.norm2(x + self.dropout2(self.ffn(x)))  # (B, L, d_model)
        return x, weights

    def attention_weights(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """The weights ``(B, H, L, L)`` of this layer's attention for the input ``x`` (eval-mode pass, for plots)."""
        with eval_mode(self):
            return self.forward_with_weights(x, mask)[1]

    def _attend(self, h: torch.Tensor, mask: torch.Tensor | None, need_weights: bool):
        """The attention sublayer: ``(out, weights or None)``. Without weights it is a plain call, which
        any attention module with the contract's ``forward(x, mask)`` answers (a learner's too)."""
        if need_weights:
            return self.attn.forward_with_weights(h, mask)
        if isinstance(mask, Packed) and not isinstance(self.attn, MultiHeadAttention):
            mask = mask.dense_mask()  # an attention that takes masks only: the packed sequence's whole mask
        return self.attn(h, mask), None
