"""Masked-language-model pretraining (notebook 12): the masking rule, the vocabulary, the model and what is measured."""

from __future__ import annotations

import pytest
import torch

import encoder_course as ec
from encoder_course.measure import masked_lm


def test_mask_tokens_follows_berts_rule_and_leaves_its_input_alone():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 1000, (64, 128), generator=g)
    maskable = torch.rand(64, 128, generator=g) < 0.9
    before = ids.clone()
    inputs, chosen = masked_lm.mask_tokens(ids, maskable, 4, 1000, torch.Generator().manual_seed(1))
    assert torch.equal(ids, before) and inputs.dtype == torch.long and chosen.dtype == torch.bool
    assert not chosen[~maskable].any() and torch.equal(inputs[~chosen], ids[~chosen])
    share = chosen.sum() / maskable.sum()
    assert abs(share - 0.15) < 0.01
    masked = (inputs[chosen] == 4).float().mean()
    kept = (inputs[chosen] == ids[chosen]).float().mean()
    assert abs(masked - 0.8) < 0.02 and abs(kept - 0.1) < 0.02 and abs(1 - masked - kept - 0.1) < 0.02
    again = masked_lm.mask_tokens(ids, maskable, 4, 1000, torch.Generator().manual_seed(1))
    assert torch.equal(again[0], inputs) and torch.equal(again[1], chosen)  # the generator decides everything
    none = masked_lm.mask_tokens(ids, maskable, 4, 1000, p=0.0)
    assert not none[1].any() and torch.equal(none[0], ids)


class _Pieces:
    """A stand-in tokenizer: one piece per word, with [CLS] and [SEP]."""

    def to_str(self):
        raise NotImplementedError


@pytest.fixture(scope="module")
def tokenizer():
    pytest.importorskip("tokenizers")
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "dog", "ran", "a"]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2),
                                                                                                 ("[SEP]", 3)])
    tok.enable_padding(pad_id=0, pad_token="[PAD]")  # as load_tokenizer does: the vocabulary must not pad
    return tok


def test_the_vocabulary_numbers_the_training_pieces_by_frequency_after_the_specials(tokenizer):
    vocab = masked_lm.Vocabulary(tokenizer, ["the cat sat on the mat", "the dog"])
    assert vocab.pieces[:5] == list(masked_lm.SPECIALS) and vocab.pieces[5] == "the"
    assert len(vocab) == 5 + 6 and vocab.most_frequent() == vocab.ids["the"]
    ids = vocab.encode(["the dog ran", "a"], max_len=4)
    assert ids[0] == [2, vocab.ids["the"], vocab.ids["dog"], 3]  # [CLS] the dog [SEP]: 'ran' cut, [SEP] kept
    assert ids[1] == [2, vocab.unk_id, 3]  # 'a' is not a training piece, and no padding came in
    padded = masked_lm.pad_batch(ids)
    assert padded.tolist()[1] == [2, 1, 3, 0]
    assert masked_lm.maskable_positions(padded, vocab).tolist() == [[False, True, True, False]] + [[False] * 4]


def test_the_model_scores_only_the_chosen_positions_with_the_tied_table_and_trains(tokenizer):
    vocab = masked_lm.Vocabulary(tokenizer, ["the cat sat on the mat", "the dog ran on a mat"] * 4)
    texts = vocab.encode(["the cat sat on the mat", "the dog sat on the mat", "a cat ran"] * 20)
    config = masked_lm.small_config(len(vocab), d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=16)
    model = masked_lm.make_model(config)
    ids = masked_lm.pad_batch(texts[:3])
    chosen = masked_lm.maskable_positions(ids, vocab)
    logits = model(ids, ids != 0, chosen)
    assert logits.shape == (int(chosen.sum()), len(vocab))
    assert model.encoder.embeddings.token.weight.std() < 0.05  # BERT's std 0.02 table
    before = masked_lm.masked_accuracy(model, texts, vocab)
    steps, threads = [], torch.get_num_threads()
    run = masked_lm.pretrain(model, texts, vocab, steps=60, batch_size=8, lr=1e-2, warmup_steps=5, threads=1,
                             callback=lambda step, total, loss: steps.append((step, total, torch.get_num_threads())))
    after = masked_lm.masked_accuracy(model, texts, vocab)
    assert run.steps == 60 and steps[-1] == (60, 60, 1) and not model.training
    assert torch.get_num_threads() == threads  # one thread while training, the caller's setting afterwards
    assert after["loss"] < before["loss"] and after["accuracy"] > before["accuracy"]
    assert before["unigram_accuracy"] == after["unigram_accuracy"]  # the same positions both times
    guesses = masked_lm.fill_in(model, vocab, "the cat sat on the mat", "cat", k=3)
    assert len(guesses) == 3 and not set(guesses) & set(masked_lm.SPECIALS)
    with pytest.raises(ValueError, match="not in"):
        masked_lm.fill_in(model, vocab, "the cat sat", "dog")


@pytest.mark.parametrize("free, expected", [(1, 1), (64, 3)])
def test_by_default_pretraining_takes_the_free_cores_up_to_torch_s_setting(tokenizer, monkeypatch, free, expected):
    """threads="free": one thread when the machine is busy, and never more than torch's setting."""
    vocab = masked_lm.Vocabulary(tokenizer, ["the cat sat on the mat"] * 4)
    texts = vocab.encode(["the cat sat on the mat", "a cat ran"] * 10)
    config = masked_lm.small_config(len(vocab), d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=16)
    monkeypatch.setattr(masked_lm, "free_cores", lambda: free)
    seen, threads = [], torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        masked_lm.pretrain(masked_lm.make_model(config), texts, vocab, steps=2, batch_size=4,
                           callback=lambda *args: seen.append(torch.get_num_threads()))
        assert seen == [expected] * 2 and torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(threads)
    with pytest.raises(TypeError, match="threads"):
        masked_lm.pretrain(masked_lm.make_model(config), texts, vocab, steps=2, threads="all")


def test_a_time_budget_counts_the_clock_it_is_given(tokenizer):
    """same_budget's runs stop on processor time: a clock that a busy machine cannot shrink."""
    vocab = masked_lm.Vocabulary(tokenizer, ["the cat sat on the mat"] * 4)
    texts = vocab.encode(["the cat sat on the mat", "a cat ran"] * 10)
    config = masked_lm.small_config(len(vocab), d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=16)
    ticks = iter(range(1000))
    run = masked_lm.pretrain(masked_lm.make_model(config), texts, vocab, steps=50, batch_size=4, seconds=2.5,
                             clock=lambda: next(ticks))
    assert run.steps == 3  # the clock read 1, 2, 3 after the steps: past 2.5 after the third


def test_the_same_budget_gives_each_design_the_steps_of_the_same_processor_time(tokenizer):
    """same_budget: the BERT-style design trains ``steps`` steps, the modern one ``steps / ratio``, the ratio of
    their steps' processor times measured in turns (step_time_ratio)."""
    from encoder_course.measure import modern

    vocab = masked_lm.Vocabulary(tokenizer, ["the cat sat on the mat"] * 4)
    texts = vocab.encode(["the cat sat on the mat", "a cat ran", "the mat"] * 10)
    configs = modern.same_size_configs(len(vocab), d_model=16, n_heads=2, n_layers=2, d_ff=32, max_len=16, window=4)
    runs = modern.same_budget(vocab, texts, texts, steps=6, seeds=(0,), batch_size=4, configs=configs, ratio=1.5)
    assert [(r.design, r.steps) for r in runs] == [("BERT-style", 6), ("modern", 4)]
    assert all(r.seconds > 0 for r in runs)
    ratio = modern.step_time_ratio(vocab, texts, configs, batch_size=4, rounds=2, steps=3)
    assert 0.2 < ratio < 5, ratio  # the same size: neither step is many times the other's
    assert modern.budget_table(runs)["modern"]["steps"] == 4


def test_your_encoder_class_can_be_the_pretraining_encoder():
    made = []

    def build(config):
        made.append(config)
        return ec.Encoder(config)
    model = masked_lm.make_model(masked_lm.small_config(50, d_model=16, n_heads=2, d_ff=32), encoder_class=build)
    assert made and made[0].vocab_size == 50 and model.bias.shape == (50,)
