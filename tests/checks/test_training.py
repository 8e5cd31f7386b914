"""The checker of ``masked_token_loss`` (notebook 10): every wrong answer named, every right one passing."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from encoder_course import checks
from encoder_course.measure import training

from .catalogue import Catalogue

C_ML = checks.check_masked_token_loss

CATALOGUE = Catalogue(C_ML)
wrong, right = CATALOGUE.add_wrong, CATALOGUE.add_right


def per_token(logits, labels):
    """Cross-entropy at every position (reduction='none' skips the -100 labels: 0 there)."""
    return F.cross_entropy(logits.transpose(1, 2), labels, reduction="none")  # (B, L)


# ----------------------------------------------------------------------------------------------
# Wrong answers, each to be named


wrong("ml-package", C_ML, "the package's own function, passed as the answer",
      "calls the course's own masked_token_loss")(training.masked_token_loss)
wrong("ml-ignore-index-only", C_ML, "F.cross_entropy(..., ignore_index=-100) on every position, the mask unused",
      "padding is included in the mean")(
    lambda logits, labels, mask: F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100))
wrong("ml-mean-over-BL", C_ML, "(per_token * mask).mean(): divided by B * L",
      "divided by B * L")(lambda logits, labels, mask: (per_token(logits, labels) * mask).mean())
wrong("ml-mean-over-B", C_ML, "(per_token * mask).sum() / B", "divided by the batch size B")(
    lambda logits, labels, mask: (per_token(logits, labels) * mask).sum() / logits.shape[0])
wrong("ml-mask-inverted", C_ML, "the pads kept, the real tokens dropped", "the mask is inverted")(
    lambda logits, labels, mask: F.cross_entropy(logits[~mask], labels[~mask].clamp(min=0)))
wrong("ml-sum", C_ML, "the sum over the real tokens", "it returns the sum over the real tokens")(
    lambda logits, labels, mask: F.cross_entropy(logits[mask], labels[mask], reduction="sum"))
wrong("ml-per-sequence", C_ML, "each sequence's mean loss, then the mean over sequences",
      "it averages each sequence first")(
    lambda logits, labels, mask: ((per_token(logits, labels) * mask).sum(1) / mask.sum(1)).mean())
wrong("ml-softmax-first", C_ML, "F.cross_entropy(softmax(logits)): a softmax applied twice",
      "go through a softmax before cross_entropy")(
    lambda logits, labels, mask: F.cross_entropy(logits.softmax(-1)[mask], labels[mask]))
wrong("ml-nll-on-logits", C_ML, "F.nll_loss on the raw logits", "F.nll_loss gets raw logits")(
    lambda logits, labels, mask: F.nll_loss(logits[mask], labels[mask]))
wrong("ml-nll-on-probs", C_ML, "F.nll_loss on softmax probabilities", "gets probabilities (softmax)")(
    lambda logits, labels, mask: F.nll_loss(logits[mask].softmax(-1), labels[mask]))
wrong("ml-class-axis", C_ML, "F.cross_entropy(logits, labels, reduction='none') on (B, L, C): dim 1 read as classes",
      "F.cross_entropy takes the classes on dim 1")(
    lambda logits, labels, mask: (F.cross_entropy(logits, labels.clamp(min=0), reduction="none")
                                  * mask).sum() / mask.sum())
wrong("ml-gather-padding-labels", C_ML, "log_softmax(...).gather(labels) at every position, then masked",
      "A padding position's label (-100")(
    lambda logits, labels, mask: -(logits.log_softmax(-1).gather(-1, labels[..., None])[..., 0] * mask).sum()
    / mask.sum())
wrong("ml-item", C_ML, "returns loss.item()", "it should return the loss as a tensor")(
    lambda logits, labels, mask: F.cross_entropy(logits[mask], labels[mask]).item())
wrong("ml-per-token", C_ML, "returns the per-token losses (reduction='none')", "that is one loss per token")(
    lambda logits, labels, mask: F.cross_entropy(logits[mask], labels[mask], reduction="none"))
wrong("ml-keepdim", C_ML, "returns a (1,) tensor: loss[None]", "keep the loss a 0-d tensor")(
    lambda logits, labels, mask: F.cross_entropy(logits[mask], labels[mask])[None])
wrong("ml-float32", C_ML, "computes in float32 (.float()) whatever the logits' dtype",
      "returned dtype torch.float32")(
    lambda logits, labels, mask: F.cross_entropy(logits[mask].float(), labels[mask]))
wrong("ml-detached", C_ML, "the logits detached first: the right number, no gradient", "cuts the gradient")(
    lambda logits, labels, mask: F.cross_entropy(logits.detach()[mask], labels[mask]))


@wrong("ml-labels-in-place", C_ML, "labels[~mask] = 0 to make every label valid: the caller's labels changed",
       "changed its input `labels` in place")
def ml_in_place(logits, labels, mask):
    labels[~mask] = 0
    return (per_token(logits, labels) * mask).sum() / mask.sum()


# Mistakes unlike the listed slips: the probe (the answer's gradient, extra padding) must name them.
wrong("ml-probe-ignore-index-0", C_ML, "pads relabelled 0, then ignore_index=0: real class-0 tokens dropped",
      "Class 0 is a real class here")(
    lambda logits, labels, mask: F.cross_entropy(logits.flatten(0, 1), labels.masked_fill(~mask, 0).flatten(),
                                                 ignore_index=0))


def ml_shifted(logits, labels, mask):
    """Labels shifted by one, as for next-token prediction."""
    real = mask[:, 1:]
    losses = F.cross_entropy(logits[:, :-1].transpose(1, 2), labels[:, 1:].clamp(min=0), reduction="none")
    return (losses * real).sum() / real.sum()


wrong("ml-probe-shifted", C_ML, "logits[:, :-1] scored against labels[:, 1:]", "as in next-token prediction")(
    ml_shifted)


def ml_log_of_softmax(logits, labels, mask):
    """log(softmax(x)) in two steps: -inf where a probability underflows."""
    logp = torch.log(torch.softmax(logits, dim=-1))
    nll = -logp.gather(-1, labels.clamp(min=0)[..., None])[..., 0]
    return (nll * mask).sum() / mask.sum()


wrong("ml-probe-log-softmax", C_ML, "torch.log(torch.softmax(logits)): inf for large logits",
      "log(softmax(x)) underflows")(ml_log_of_softmax)
wrong("ml-probe-zeroed-logits", C_ML, "the padding's logits zeroed instead of its loss left out",
      "two more pad positions at the end of every sequence change your loss")(
    lambda logits, labels, mask: F.cross_entropy((logits * mask[..., None]).flatten(0, 1),
                                                 labels.clamp(min=0).flatten()))
wrong("ml-probe-doubled", C_ML, "the mean cross-entropy times 2", "2 times it: a factor is wrong")(
    lambda logits, labels, mask: 2 * F.cross_entropy(logits[mask], labels[mask]))
wrong("ml-probe-label-smoothing", C_ML, "F.cross_entropy(..., label_smoothing=0.1)", "Something besides -log p(label)")(
    lambda logits, labels, mask: F.cross_entropy(logits[mask], labels[mask], label_smoothing=0.1))

wrong("ml-probe-floor-division", C_ML, "(per * mask).sum() // mask.sum(): the mean rounded down",
      "your loss uses floor division")(
    lambda logits, labels, mask: (per_token(logits, labels) * mask).sum() // mask.sum())
wrong("ml-probe-sign", C_ML, "the mean log-probability of the labels: the minus sign forgotten",
      "the sign is flipped")(lambda logits, labels, mask: -F.cross_entropy(logits[mask], labels[mask]))
wrong("ml-probe-margin", C_ML, "F.multi_margin_loss: a hinge on the label's score, not a cross-entropy",
      "it is not the cross-entropy of the labels")(
    lambda logits, labels, mask: F.multi_margin_loss(logits[mask], labels[mask]))
wrong("ml-binary", C_ML, "binary cross-entropy with logits against one-hot labels",
      "it is a binary cross-entropy")(
    lambda logits, labels, mask: F.binary_cross_entropy_with_logits(
        logits[mask], F.one_hot(labels[mask], logits.shape[-1]).to(logits.dtype)))
wrong("ml-probe-pairs-transposed", C_ML, "logits.transpose(0, 1)[mask.T] against labels[mask]: orders differ",
      "paired in different orders")(
    lambda logits, labels, mask: F.cross_entropy(logits.transpose(0, 1)[mask.T], labels[mask]))
wrong("ml-probe-clamped", C_ML, "logits.clamp(-50, 50) 'for stability' before cross_entropy",
      "something cuts large logits off")(
    lambda logits, labels, mask: F.cross_entropy(logits[mask].clamp(-50, 50), labels[mask]))
wrong("ml-softmax-positions", C_ML, "log_softmax(logits, dim=1): over the positions, then each label picked",
      "the softmax runs over the positions")(
    lambda logits, labels, mask: -(torch.log_softmax(logits, dim=1).gather(
        -1, labels.clamp(min=0)[..., None])[..., 0][mask]).mean())
wrong("ml-minus-one-labels", C_ML, "pads relabelled -1, as if -1 were cross_entropy's default ignore_index",
      "which is -100 unless you pass another")(
    lambda logits, labels, mask: F.cross_entropy(logits.transpose(1, 2), labels.masked_fill(~mask, -1)))
wrong("ml-perplexity", C_ML, "F.cross_entropy(...).exp(): the perplexity returned as the loss",
      "the perplexity")(lambda logits, labels, mask: F.cross_entropy(logits[mask], labels[mask]).exp())
wrong("ml-squared-error", C_ML, "F.mse_loss between the logits and one-hot labels",
      "it is a squared error between the logits and one-hot labels")(
    lambda logits, labels, mask: F.mse_loss(logits[mask], F.one_hot(labels[mask], logits.shape[-1]).to(logits.dtype)))
wrong("ml-probe-max-log-prob", C_ML, "-log_softmax(logits).max(-1): the most likely class's log-probability",
      "it scores each token against the class the logits rank first")(
    lambda logits, labels, mask: -(logits.log_softmax(-1).amax(-1) * mask).sum() / mask.sum())
wrong("ml-probe-label-zero", C_ML, "cross_entropy against torch.zeros_like(labels): every token labelled 0",
      "your loss stays the same: it never reads the labels")(
    lambda logits, labels, mask: F.cross_entropy(logits[mask], torch.zeros_like(labels[mask])))


# ----------------------------------------------------------------------------------------------
# Right answers, in many styles, each to pass


@right("ml-select", C_ML, "F.cross_entropy(logits[mask], labels[mask])")
def ml_select(logits, labels, mask):
    return F.cross_entropy(logits[mask], labels[mask])


@right("ml-weighted-sum", C_ML, "per-token losses (reduction='none', -100 skipped) times the mask, over mask.sum()")
def ml_weighted(logits, labels, mask):
    losses = F.cross_entropy(logits.transpose(1, 2), labels.masked_fill(~mask, -100), reduction="none")
    return (losses * mask).sum() / mask.sum()


@right("ml-ignore-index", C_ML, "padding labels set to -100 (out of place), then ignore_index does the masking")
def ml_ignore(logits, labels, mask):
    return F.cross_entropy(logits.flatten(0, 1), labels.masked_fill(~mask, -100).flatten(), ignore_index=-100)


@right("ml-log-softmax-then-ce", C_ML,
       "log_softmax before cross_entropy: only a shift per row, which cross-entropy ignores (the same number)")
def ml_double_log(logits, labels, mask):
    return F.cross_entropy(F.log_softmax(logits[mask], dim=-1), labels[mask])


@right("ml-by-hand", C_ML, "logsumexp minus the label's logit, by hand, on the real tokens")
def ml_by_hand(logits, labels, mask):
    real_logits, real_labels = logits[mask], labels[mask]  # (N, C), (N,)
    picked = real_logits.gather(1, real_labels[:, None])[:, 0]
    return (torch.logsumexp(real_logits, dim=-1) - picked).mean()


@right("ml-nll-where", C_ML, "F.nll_loss(log_softmax) per token, torch.where on the mask, float64 inside")
def ml_nll(logits, labels, mask):
    logp = F.log_softmax(logits.double(), dim=-1)
    per = F.nll_loss(logp.transpose(1, 2), torch.where(mask, labels, 0), reduction="none")  # (B, L)
    return (torch.where(mask, per, 0.0).sum() / mask.sum()).to(logits.dtype)


test_catalogue_cases, test_wrong_answer_is_named, test_right_answer_passes = CATALOGUE.tests()


def test_the_reference_is_the_mean_over_real_tokens_and_checks_its_inputs():
    import pytest

    g = torch.Generator().manual_seed(0)
    logits, labels = torch.randn(3, 5, 4, generator=g), torch.randint(0, 4, (3, 5), generator=g)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 1, 0, 1, 0]], dtype=torch.bool)
    padded = labels.masked_fill(~mask, training.IGNORE_INDEX)
    torch.testing.assert_close(training.masked_token_loss(logits, padded, mask),
                               F.cross_entropy(logits.flatten(0, 1), padded.flatten(), ignore_index=-100))
    with pytest.raises(ValueError, match="no real token"):
        training.masked_token_loss(logits, labels, torch.zeros_like(mask))
    with pytest.raises(TypeError, match="bool"):
        training.masked_token_loss(logits, labels, mask.long())
    with pytest.raises(ValueError, match=r"labels must have shape \(B, L\)"):
        training.masked_token_loss(logits, labels[:, :4], mask)
    with pytest.raises(ValueError, match="classes in"):
        training.masked_token_loss(logits, labels.masked_fill(mask, 9), mask)
