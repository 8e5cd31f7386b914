"""Bridges to the outside: PyTorch's own layers and Hugging Face BERT checkpoints, each written once.

* ``torch.nn``: :func:`to_torch_padding_mask` converts our mask (True = may attend) to torch's
  ``key_padding_mask`` (True = ignore), and :func:`to_torch_attention`, :func:`to_torch_layer` and
  :func:`to_torch_encoder` build ``nn.MultiheadAttention`` / ``nn.TransformerEncoderLayer`` /
  ``nn.TransformerEncoder`` holding exactly our weights, so the parity checks of notebooks 04, 07 and
  08, the tests and the benchmark compare the same function.
* Checkpoints: :func:`rename_key` maps a Hugging Face ``BertModel`` parameter name to ours, and
  :func:`checkpoint_state_dict` renames a whole checkpoint, strictly, for ``load_state_dict``.
"""

from __future__ import annotations

import re

import torch
from torch import nn

from .._validate import require_tensor, shape_str
from ..block import EncoderBlock
from ..multi_head import MultiHeadAttention

# ----------------------------------------------------------------------------------------------
# torch.nn


def to_torch_padding_mask(mask: torch.Tensor) -> torch.Tensor:
    """Convert our padding mask to torch's ``key_padding_mask`` (True = ignore).

    Shape:
        ``mask`` ``(B, 1, 1, L)`` or ``(B, L)``; returns bool ``(B, L)``.
    """
    require_tensor("mask", mask)
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must have dtype torch.bool, got {mask.dtype}")
    if mask.dim() == 4:
        if mask.shape[1] != 1 or mask.shape[2] != 1:
            raise ValueError(f"expected a padding mask of shape (B, 1, 1, L), got {shape_str(mask)}")
        mask = mask[:, 0, 0, :]  # (B, L)
    if mask.dim() != 2:
        raise ValueError(f"expected a padding mask of shape (B, 1, 1, L) or (B, L), got {shape_str(mask)}")
    return ~mask  # (B, L), True = ignore


def copy_attention(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    """Copy our four projections into ``nn.MultiheadAttention`` (it stacks W_Q, W_K, W_V in one matrix)."""
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight]))
        theirs.in_proj_bias.copy_(torch.cat([ours.w_q.bias, ours.w_k.bias, ours.w_v.bias]))
        theirs.out_proj.weight.copy_(ours.w_o.weight)
        theirs.out_proj.bias.copy_(ours.w_o.bias)


def to_torch_attention(ours: MultiHeadAttention) -> nn.MultiheadAttention:
    """An ``nn.MultiheadAttention`` (batch first) with our weights, in our module's train/eval mode."""
    if not isinstance(ours, MultiHeadAttention):
        raise TypeError(f"expected a MultiHeadAttention, got {type(ours).__name__}")
    theirs = nn.MultiheadAttention(ours.d_model, ours.n_heads, dropout=ours.dropout, batch_first=True)
    copy_attention(ours, theirs)
    return theirs.train(ours.training)


def copy_layer(ours: EncoderBlock, theirs: nn.TransformerEncoderLayer) -> None:
    """Copy our block's weights into ``nn.TransformerEncoderLayer`` (its FFN is linear1/linear2)."""
    copy_attention(ours.attn, theirs.self_attn)
    with torch.no_grad():
        for mine, other in ((ours.ffn.w1, theirs.linear1), (ours.ffn.w2, theirs.linear2),
                            (ours.norm1, theirs.norm1), (ours.norm2, theirs.norm2)):
            other.weight.copy_(mine.weight)
            other.bias.copy_(mine.bias)


def to_torch_layer(ours: EncoderBlock) -> nn.TransformerEncoderLayer:
    """An ``nn.TransformerEncoderLayer`` (batch first) with our block's settings and weights.

    Raises:
        ValueError: for a gated (SwiGLU) feed-forward network, which torch's layer does not have.
    """
    if not isinstance(ours, EncoderBlock):
        raise TypeError(f"expected an EncoderBlock, got {type(ours).__name__}")
    if ours.ffn.activation not in ("relu", "gelu"):
        raise ValueError(f"nn.TransformerEncoderLayer has no {ours.ffn.activation!r} activation")
    theirs = nn.TransformerEncoderLayer(
        ours.attn.d_model, ours.attn.n_heads, ours.ffn.d_ff, dropout=ours.dropout1.p,
        activation=ours.ffn.activation, layer_norm_eps=ours.norm1.eps, batch_first=True,
        norm_first=ours.norm_first)
    copy_layer(ours, theirs)
    return theirs.train(ours.training)


def to_torch_encoder(blocks, final_norm: nn.Module | None = None) -> nn.TransformerEncoder:
    """An ``nn.TransformerEncoder`` whose layers hold the weights of ``blocks`` (and of ``final_norm``)."""
    blocks = list(blocks)
    if not blocks:
        raise ValueError("blocks must hold at least one EncoderBlock")
    layers = [to_torch_layer(block) for block in blocks]
    norm = None
    if final_norm is not None:
        norm = nn.LayerNorm(final_norm.weight.shape[0], eps=final_norm.eps)
        with torch.no_grad():
            norm.weight.copy_(final_norm.weight)
            norm.bias.copy_(final_norm.bias)
    theirs = nn.TransformerEncoder(layers[0], len(layers), norm=norm, enable_nested_tensor=False)
    theirs.layers = nn.ModuleList(layers)  # nn.TransformerEncoder deep-copies one layer; use ours
    return theirs.train(blocks[0].training)


# ----------------------------------------------------------------------------------------------
# Hugging Face BERT checkpoints -> this package's names
#
# BERT's names follow its code, not the paper: a layer's "attention.output" is the output
# projection W_O *and* the LayerNorm after the attention residual; "intermediate.dense" is the
# FFN's first linear map and the layer's "output.dense" its second one. Linear weights are stored
# (out_features, in_features), as in nn.Linear, so they copy over unchanged.

#: Keys outside the layers.
EMBEDDING_NAMES = {
    "embeddings.word_embeddings.weight": "embeddings.token.weight",
    "embeddings.position_embeddings.weight": "embeddings.position.weight",
    "embeddings.token_type_embeddings.weight": "embeddings.token_type.weight",
    "embeddings.LayerNorm.weight": "embeddings.norm.weight",
    "embeddings.LayerNorm.bias": "embeddings.norm.bias",
}

#: Keys inside layer N: ``encoder.layer.N.<key>`` -> ``layers.N.<value>`` (weight and bias each).
LAYER_NAMES = {
    "attention.self.query": "attn.w_q",
    "attention.self.key": "attn.w_k",
    "attention.self.value": "attn.w_v",
    "attention.output.dense": "attn.w_o",
    "attention.output.LayerNorm": "norm1",  # post-LN: after the attention residual
    "intermediate.dense": "ffn.w1",  # d_model -> d_ff
    "output.dense": "ffn.w2",  # d_ff -> d_model
    "output.LayerNorm": "norm2",  # post-LN: after the FFN residual
}

#: Keys in the file that the encoder does not use: a constant buffer (0, 1, ..., 511) and BERT's
#: pooler (a dense layer + tanh on the [CLS] vector, trained for next-sentence prediction), which
#: sentence-transformers does not use because it mean-pools instead.
IGNORED_KEYS = ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias")

_LAYER_KEY = re.compile(r"^encoder\.layer\.(\d+)\.(.+)\.(weight|bias)$")


def rename_key(key: str) -> str | None:
    """This package's parameter name for a checkpoint key, or None for a key we do not use.

    Raises:
        ValueError: for a key the map does not know (neither mapped nor ignored).
    """
    if key in IGNORED_KEYS:
        return None
    if key in EMBEDDING_NAMES:
        return EMBEDDING_NAMES[key]
    match = _LAYER_KEY.match(key)
    if match and match.group(2) in LAYER_NAMES:
        layer, module, kind = match.groups()
        return f"layers.{layer}.{LAYER_NAMES[module]}.{kind}"
    raise ValueError(f"unexpected key in the checkpoint: {key!r}")


def name_map(n_layers: int = 6) -> dict[str, str]:
    """The whole map, checkpoint key -> our parameter name, for an ``n_layers`` model."""
    names = dict(EMBEDDING_NAMES)
    for i in range(n_layers):
        for theirs, ours in LAYER_NAMES.items():
            for kind in ("weight", "bias"):
                names[f"encoder.layer.{i}.{theirs}.{kind}"] = f"layers.{i}.{ours}.{kind}"
    return names


def checkpoint_state_dict(tensors: dict, expected: dict, rename=rename_key) -> tuple[dict, list[str]]:
    """Rename a BERT checkpoint's tensors to our names, strictly, ready for ``load_state_dict``.

    Every key of ``expected`` (our model's ``state_dict()``) must come from the checkpoint with the
    same shape, and every checkpoint key must be mapped or known to be unused. A ``bert.`` prefix on
    every key (BertForX checkpoints) is removed first.

    Args:
        tensors: the checkpoint, name -> tensor.
        expected: our model's state dict (names and shapes).
        rename: the name map (:func:`rename_key`, or a learner's own with the same contract).

    Returns:
        ``(state_dict, ignored_keys)``.

    Raises:
        ValueError: listing unexpected, missing or mismatched-shape keys.
    """
    if tensors and all(k.startswith("bert.") for k in tensors):
        tensors = {k[len("bert."):]: v for k, v in tensors.items()}
    renamed, unexpected, ignored = {}, [], []
    for key, value in tensors.items():
        try:
            new = rename(key)
        except ValueError:
            unexpected.append(key)
            continue
        if new is None:
            ignored.append(key)
        elif new not in expected:
            unexpected.append(key)  # e.g. a 7th layer for a 6-layer encoder
        else:
            renamed[new] = value
    missing = [name for name in expected if name not in renamed]
    mismatched = [f"{name}: file {tuple(renamed[name].shape)}, encoder {tuple(expected[name].shape)}"
                  for name in renamed if renamed[name].shape != expected[name].shape]
    problems = []
    if unexpected:
        problems.append(f"unexpected keys in the file: {', '.join(sorted(unexpected))}")
    if missing:
        problems.append(f"parameters missing from the file: {', '.join(missing)}")
    if mismatched:
        problems.append(f"shape mismatches: {'; '.join(mismatched)}")
    if problems:
        raise ValueError(" | ".join(problems))
    return {name: value.to(expected[name].dtype) for name, value in renamed.items()}, sorted(ignored)
