"""The replay of a notebook's training calls (``notebook_replay.py``): the same call gets the recorded result, the
trained weights and the random state back; a call on other inputs runs for real and is named."""

from __future__ import annotations

import json

import torch
from notebook_replay import COUNTS, Replay

from encoder_course.measure import training


def _train_twice(folder, mode, steps=3, lr=1e-2, loss_fn=None):
    """Two calls of ``training.train`` through a replay in ``mode``: the models, results and random draws after."""
    replay = Replay(mode, folder)
    train = replay.wrap("training.train", training.train)
    task = training.FrequencyTask()
    out = []
    for seed in (0, 1):
        model = training.make_model(task, n_layers=1, seed=seed)
        result = train(model, task, steps=steps, lr=lr, seed=seed, loss_fn=loss_fn)
        out.append((model, result, torch.rand(3)))  # the global generator after the call, as the next cell sees it
    return out, json.loads((folder / COUNTS.format(mode=mode)).read_text())


def test_the_same_calls_are_replayed_with_their_weights_results_and_random_state(tmp_path):
    recorded, counts = _train_twice(tmp_path, "record", loss_fn=training.masked_token_loss)
    assert counts["recorded"] == 2

    def masked_token_loss(logits, labels, mask):  # another function of the same name: a learner's own answer
        return torch.nn.functional.cross_entropy(logits[mask], labels[mask])

    replayed, counts = _train_twice(tmp_path, "replay", loss_fn=masked_token_loss)
    assert counts == {"replayed": 2, "recorded": 0, "ran": 0, "differed": []}
    for (model, result, draw), (model_, result_, draw_) in zip(recorded, replayed):
        assert result_.loss == result.loss and result_.eval_accuracy == result.eval_accuracy
        for (name, a), (_, b) in zip(model.state_dict().items(), model_.state_dict().items()):
            assert torch.equal(a, b), name
        assert model_.training == model.training is False  # train() leaves the model in eval mode
        assert torch.equal(draw, draw_)
    untrained = training.make_model(training.FrequencyTask(), n_layers=1, seed=0)
    assert not torch.equal(untrained.head.weight, replayed[0][0].head.weight)  # the replay trained it


def test_a_call_on_other_inputs_runs_for_real_and_is_named(tmp_path):
    recorded, _ = _train_twice(tmp_path, "record")
    changed, counts = _train_twice(tmp_path, "replay", lr=2e-2)  # another learning rate: other inputs
    assert counts == {"replayed": 0, "recorded": 0, "ran": 2, "differed": ["training.train-1", "training.train-2"]}
    assert changed[0][1].loss != recorded[0][1].loss  # trained for real, with the new rate
    # A model given other weights is other inputs too.
    _, counts = _train_twice(tmp_path / "other", "record")
    replay = Replay("replay", tmp_path / "other")
    train = replay.wrap("training.train", training.train)
    task = training.FrequencyTask()
    train(training.make_model(task, n_layers=1, seed=7), task, steps=3, lr=1e-2, seed=0)
    assert replay.counts["differed"] == ["training.train-1"]


def test_the_random_state_after_a_call_is_the_recorded_one(tmp_path):
    def draws(n):  # a call that takes numbers from the global generator (dropout, a shuffle)
        return torch.rand(n).sum().item()

    after = {}
    for mode in ("record", "replay"):
        torch.manual_seed(0)
        value = Replay(mode, tmp_path).wrap("draws", draws)(5)
        after[mode] = (value, torch.rand(3))
    assert after["replay"][0] == after["record"][0]
    assert torch.equal(after["replay"][1], after["record"][1])
