"""The training toolkit of notebook 10: labels, baseline, masking, determinism (seconds on a CPU)."""

import math
from collections import Counter

import pytest
import torch

from encoder_course.measure import training as T


def _labels_by_hand(seq, n_classes):
    counts = Counter(seq)
    return [min(counts[s], n_classes) - 1 for s in seq]


def test_frequency_labels_match_counting_by_hand():
    task = T.FrequencyTask(n_symbols=5, n_classes=3, min_len=3, max_len=12)
    g = torch.Generator().manual_seed(0)
    seqs = task.sequences(50, g)
    ids = T.pad_sequences(seqs)
    labels = task.labels(ids)
    for row, seq in enumerate(seqs):
        assert labels[row, : len(seq)].tolist() == _labels_by_hand(seq, 3)
        assert (labels[row, len(seq):] == T.IGNORE_INDEX).all()


def test_frequency_labels_small_example_and_padding_ignored():
    ids = torch.tensor([[3, 1, 3, 3, 2, 0, 0], [5, 5, 0, 0, 0, 0, 0]])
    # 3 occurs three times, 1 and 2 once; padding (0) never counts, even if it occurs often.
    assert T.frequency_labels(ids, 4).tolist() == [[2, 0, 2, 2, 0, -100, -100],
                                                   [1, 1, -100, -100, -100, -100, -100]]
    assert T.frequency_labels(ids, 2).tolist()[0][:5] == [1, 0, 1, 1, 0]  # clipped: "2 or more"


def test_batches_have_varied_lengths_and_padding():
    task = T.FrequencyTask()
    ids, labels = task.batch(64, torch.Generator().manual_seed(1))
    lengths = (ids != 0).sum(1)
    assert lengths.min() >= task.min_len and lengths.max() <= task.max_len
    assert len(set(lengths.tolist())) > 3
    assert ids.shape[1] == lengths.max()
    assert ((labels == T.IGNORE_INDEX) == (ids == 0)).all()
    padded, _ = task.batch(4, torch.Generator().manual_seed(1), pad_to=40)
    assert padded.shape == (4, 40)


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="min_len"):
        T.FrequencyTask(min_len=9, max_len=4)
    with pytest.raises(TypeError):
        T.frequency_labels(torch.zeros(2, 3), 4)
    with pytest.raises(ValueError, match="shorter"):
        T.pad_sequences([[1, 2, 3]], length=2)
    with pytest.raises(ValueError, match="no real"):
        T.majority_baseline(torch.full((2, 3), T.IGNORE_INDEX))


def test_accuracy_counts_only_real_tokens():
    labels = torch.tensor([[0, 1, T.IGNORE_INDEX, T.IGNORE_INDEX]])
    logits = torch.zeros(1, 4, 2)
    logits[0, 0, 0] = 1  # right
    logits[0, 1, 0] = 1  # wrong
    logits[0, 2:, 0] = 1  # padding: never counted
    assert T.accuracy(logits, labels) == 0.5
    assert T.majority_baseline(torch.tensor([[0, 0, 1, T.IGNORE_INDEX, T.IGNORE_INDEX]])) == pytest.approx(2 / 3)


@pytest.fixture(scope="module")
def trained():
    task = T.FrequencyTask()
    eval_data = task.batch(128, torch.Generator().manual_seed(99))
    model = T.make_model(task, d_model=32, n_heads=4, d_ff=64, n_layers=2, seed=0)
    result = T.train(model, task, steps=120, lr=3e-3, warmup_steps=10, eval_data=eval_data, eval_every=60)
    return task, eval_data, model, result


def test_brief_training_beats_majority_baseline(trained):
    task, (ids, labels), model, result = trained
    baseline = T.majority_baseline(labels)
    assert result.eval_steps == [60, 120]
    assert len(result.loss) == 120 and len(result.lr) == 120
    assert result.final_accuracy > baseline + 0.15, (result.final_accuracy, baseline)
    assert result.final_loss() < result.loss[0]


def test_masked_and_unmasked_evaluation_differ(trained):
    task, (ids, labels), model, _ = trained
    extra = torch.zeros(ids.shape[0], 20, dtype=ids.dtype)  # more padding than training ever saw
    longer = torch.cat([ids, extra], dim=1)
    with torch.no_grad():
        masked = model(longer, use_mask=True)[:, : ids.shape[1]]
        unmasked = model(longer, use_mask=False)[:, : ids.shape[1]]
        original = model(ids, use_mask=True)
    assert (masked - original).abs().max() < 1e-4  # with the mask, padding changes nothing
    assert (unmasked - original).abs().max() > 1e-2  # without it, the same tokens get other logits
    assert T.evaluate(model, longer, task.labels(longer), use_mask=True) != \
        T.evaluate(model, longer, task.labels(longer), use_mask=False)


def test_same_seed_same_curve():
    task = T.FrequencyTask(max_len=8)
    runs = []
    for _ in range(2):
        model = T.make_model(task, d_model=16, n_heads=2, d_ff=32, n_layers=1, seed=3)
        runs.append(T.train(model, task, steps=15, seed=5).loss)
    assert runs[0] == runs[1]
    model = T.make_model(task, d_model=16, n_heads=2, d_ff=32, n_layers=1, seed=4)
    assert T.train(model, task, steps=15, seed=5).loss != runs[0]


def test_warmup_schedule():
    assert [T.warmup_factor(s, 4) for s in range(6)] == [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]
    assert T.warmup_factor(0, 0) == 1.0
    task = T.FrequencyTask(max_len=6)
    model = T.make_model(task, d_model=16, n_heads=2, d_ff=32, n_layers=1)
    result = T.train(model, task, steps=5, lr=1e-2, warmup_steps=4)
    assert result.lr == pytest.approx([2.5e-3, 5e-3, 7.5e-3, 1e-2, 1e-2])


def test_without_attention_little_beats_the_majority_class():
    task = T.FrequencyTask()
    ids, labels = task.batch(4000, torch.Generator().manual_seed(0))
    majority = T.majority_baseline(labels)
    bound = T.best_without_attention(ids, labels)
    assert majority <= bound < majority + 0.08
    # A table that knows the other tokens would be perfect: the bound is for per-token models only.
    tiny = torch.tensor([[1, 1, 2, 0]])
    assert T.best_without_attention(tiny, T.frequency_labels(tiny, 4)) == 1.0



def test_loss_without_attention_by_hand():
    # Position 0: symbol 1 twice with classes 0 and 1 (entropy ln 2), symbol 2 once (entropy 0).
    ids = torch.tensor([[1, 3], [1, 3], [2, 3]])
    labels = torch.tensor([[0, 0], [1, 0], [0, 0]])
    out = T.loss_without_attention(ids, labels)
    p = torch.tensor([5 / 6, 1 / 6])
    assert out["class_frequencies"] == pytest.approx(-(p * p.log()).sum().item())
    assert out["per_token"] == pytest.approx(2 * math.log(2) / 6)
    task = T.FrequencyTask()
    ids, labels = task.batch(4000, torch.Generator().manual_seed(0))
    out = T.loss_without_attention(ids, labels)
    assert out["per_token"] < out["class_frequencies"] < math.log(4)
    with pytest.raises(ValueError):
        T.loss_without_attention(ids, torch.full_like(labels, T.IGNORE_INDEX))

def test_a_loss_function_and_an_encoder_class_can_be_plugged_in():
    task = T.FrequencyTask(max_len=8)
    calls = []

    def loss_fn(logits, labels, mask):  # the learner's masked_token_loss has this signature
        calls.append(mask)
        return torch.nn.functional.cross_entropy(logits[mask], labels[mask])

    default = T.train(T.make_model(task, d_model=16, n_heads=2, d_ff=32, n_layers=1, seed=3), task, steps=8, seed=5)
    plugged = T.train(T.make_model(task, d_model=16, n_heads=2, d_ff=32, n_layers=1, seed=3), task, steps=8,
                      seed=5, loss_fn=loss_fn)
    assert len(calls) == 8 and all(m.dtype == torch.bool for m in calls)
    assert plugged.loss == pytest.approx(default.loss, rel=1e-4)  # the same loss, computed another way

    built = []

    class Recording(T.Encoder):
        def __init__(self, config):
            built.append(config)
            super().__init__(config)

    model = T.make_model(task, d_model=16, n_heads=2, d_ff=32, n_layers=1, seed=3, encoder_class=Recording)
    assert isinstance(model.encoder, Recording) and built == [model.config]
    reference = T.make_model(task, d_model=16, n_heads=2, d_ff=32, n_layers=1, seed=3)
    ids, _ = task.batch(4, torch.Generator().manual_seed(0))
    assert torch.equal(model.eval()(ids), reference.eval()(ids))  # same seed, same weights


def test_attention_maps_equal_the_encoders_own_and_work_through_hooks(trained):
    task, (ids, _), model, _ = trained
    model.train()
    for use_mask in (True, False):
        maps = T.attention_maps(model, ids[:8], use_mask=use_mask)
        mask = T.padding_mask(ids[:8], task.pad_id) if use_mask else None
        with torch.no_grad():
            own = model.encoder.attention_maps(ids[:8], mask)
        assert len(maps) == len(own) == 2
        for got, expected in zip(maps, own):
            assert got.shape == (8, 4, ids.shape[1], ids.shape[1])
            assert torch.allclose(got, expected, atol=1e-6)
    assert model.training  # the caller's mode is given back
    model.eval()

    class KeywordBlocks(T.Encoder):  # a learner's block may call its attention with keywords
        def forward(self, token_ids, mask=None, token_type_ids=None):
            x = self.embeddings(token_ids, token_type_ids)
            for layer in self.layers:
                x = layer.norm1(x + layer.attn(x=x, mask=mask))  # mask: (B, 1, 1, L) or None
                x = layer.norm2(x + layer.ffn(x))
            return x

    keyword = T.make_model(task, d_model=32, n_heads=4, d_ff=64, n_layers=2, seed=0, encoder_class=KeywordBlocks)
    keyword.load_state_dict(model.state_dict())
    for got, expected in zip(T.attention_maps(keyword, ids[:4]), T.attention_maps(model, ids[:4])):
        assert torch.allclose(got, expected, atol=1e-6)


def test_attention_by_symbol_on_weights_made_by_hand():
    ids = torch.tensor([[1, 2, 1, 0]])  # two 1s, one 2, one pad
    uniform = torch.tensor([[1 / 3, 1 / 3, 1 / 3, 0.0]]).expand(4, 4)[None, None]  # (1, 1, 4, 4)
    stats = T.attention_by_symbol(uniform, ids)
    assert stats["same_symbol_gap"].tolist() == [0.0] and stats["other_symbol_gap"].tolist() == [0.0]
    assert stats["uniform_share"].item() == pytest.approx((2 / 3 + 1 / 3 + 2 / 3) / 3)
    assert stats["own_symbol_share"].tolist() == pytest.approx([stats["uniform_share"].item()])
    copies = torch.tensor([[0.5, 0.0, 0.5, 0.0], [0.0, 1.0, 0.0, 0.0], [0.5, 0.0, 0.5, 0.0], [0.25] * 4])
    stats = T.attention_by_symbol(copies[None, None], ids)  # each token looks at its own symbol's copies only
    assert stats["own_symbol_share"].tolist() == pytest.approx([1.0])
    assert stats["same_symbol_gap"].tolist() == pytest.approx([0.0])  # the two 1s always get equal weight
    # different-symbol pairs (1, 2) and (2, 1) seen from the 3 real queries: |0.5 - 0|, |0 - 1|, |0.5 - 0|, twice
    assert stats["other_symbol_gap"].tolist() == pytest.approx([(0.5 + 1.0 + 0.5) / 3])
    with pytest.raises(ValueError, match=r"\(B, H, L, L\)"):
        T.attention_by_symbol(copies[None, None], torch.tensor([[1, 2, 1]]))


def test_the_numbers_of_notebook_10s_quiz():
    scores = torch.tensor([2.0] * 4 + [0.0] * 12)  # 4 real keys, 12 identical pads
    weights = torch.softmax(scores, dim=0)
    assert weights[4:].sum().item() == pytest.approx(0.29, abs=0.005)
    assert weights[4].item() == pytest.approx(0.024, abs=0.0005)  # a single pad: about 0.02, not 0.03
    assert T.warmup_factor(9, 50) * 1e-2 == pytest.approx(2e-3)
    assert T.warmup_factor(0, 50) * 1e-2 == pytest.approx(2e-4)  # the rate of step 0


def test_the_training_loops_take_adams_fused_update_where_torch_has_it_on_a_cpu():
    assert T.adam_options("2.3.1") == {"foreach": True} and T.adam_options("2.2.0+cpu") == {"foreach": True}
    assert T.adam_options("2.4.0") == {"fused": True} and T.adam_options("2.13.0+cpu") == {"fused": True}
    assert T.FAST_ADAM == T.adam_options(torch.__version__)
    # The fused update is Adam's: ten steps from the same weights and gradients end where foreach ends.
    torch.manual_seed(0)
    start = [torch.randn(5, 3), torch.randn(7)]
    grads = [[torch.randn_like(w) for w in start] for _ in range(10)]
    ends = []
    for options in (T.FAST_ADAM, {"foreach": True}):
        weights = [w.clone().requires_grad_() for w in start]
        optimizer = torch.optim.AdamW(weights, lr=1e-2, weight_decay=0.01, **options)
        for step in grads:
            for w, g in zip(weights, step):
                w.grad = g.clone()
            optimizer.step()
        ends.append(weights)
    for fast, plain, first in zip(*ends, start):
        assert (fast - first).abs().max() > 0.05  # it moved
        torch.testing.assert_close(fast, plain, rtol=1e-5, atol=1e-6)
