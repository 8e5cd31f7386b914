"""The checker of ``contrastive_loss`` (notebook 12): every wrong answer named, every right one passing."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from encoder_course import checks
from encoder_course.measure import contrastive

from .catalogue import Catalogue

C_CL = checks.check_contrastive_loss

CATALOGUE = Catalogue(C_CL)
wrong, right = CATALOGUE.add_wrong, CATALOGUE.add_right


def cos(queries, passages):
    """Every query's cosine with every passage, (B, P)."""
    return F.normalize(queries, dim=-1) @ F.normalize(passages, dim=-1).T


def labels(queries):
    return torch.arange(queries.shape[0])


# ----------------------------------------------------------------------------------------------
# Wrong answers, each to be named


wrong("cl-package", C_CL, "the package's own function, passed as the answer",
      "calls the course's own contrastive_loss")(contrastive.contrastive_loss)
wrong("cl-dot", C_CL, "dot products, nothing normalised", "plain dot products")(
    lambda queries, passages, scale=20.0: F.cross_entropy(queries @ passages.T * scale, labels(queries)))
wrong("cl-normalise-dim0", C_CL, "F.normalize(x, dim=0): each feature normalised over the batch",
      "normalised over dim=0")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        F.normalize(queries, dim=0) @ F.normalize(passages, dim=0).T * scale, labels(queries)))
wrong("cl-queries-only", C_CL, "only the queries normalised", "only the queries are normalised")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        F.normalize(queries, dim=-1) @ passages.T * scale, labels(queries)))
wrong("cl-passages-only", C_CL, "only the passages normalised", "only the passages are normalised")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        queries @ F.normalize(passages, dim=-1).T * scale, labels(queries)))
wrong("cl-no-scale", C_CL, "the cosines as they are, scale unused", "not multiplied by scale")(
    lambda queries, passages, scale=20.0: F.cross_entropy(cos(queries, passages), labels(queries)))
wrong("cl-divide-scale", C_CL, "cos / scale, as for a temperature", "divided by scale")(
    lambda queries, passages, scale=20.0: F.cross_entropy(cos(queries, passages) / scale, labels(queries)))
wrong("cl-fixed-20", C_CL, "cos * 20 whatever scale is passed", "the scale is always 20")(
    lambda queries, passages, scale=20.0: F.cross_entropy(cos(queries, passages) * 20, labels(queries)))
wrong("cl-default-scale", C_CL, "scale=1.0 as the default", "the default scale must be 20.0")(
    lambda queries, passages, scale=1.0: F.cross_entropy(cos(queries, passages) * scale, labels(queries)))
wrong("cl-scale-on-loss", C_CL, "F.cross_entropy(cos) * scale", "multiplied by scale instead of the scores")(
    lambda queries, passages, scale=20.0: F.cross_entropy(cos(queries, passages), labels(queries)) * scale)
wrong("cl-labels-zeros", C_CL, "torch.zeros labels: passage 0 everyone's positive", "every query's label is 0")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        cos(queries, passages) * scale, torch.zeros(queries.shape[0], dtype=torch.long)))
wrong("cl-labels-per-passage", C_CL, "torch.arange(P) labels: one per passage", "one label per query")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        cos(queries, passages) * scale, torch.arange(passages.shape[0])))
wrong("cl-labels-float", C_CL, "torch.arange(B, dtype=queries.dtype): float labels",
      "the labels are class indices, integers")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        cos(queries, passages) * scale, torch.arange(queries.shape[0], dtype=queries.dtype)))
wrong("cl-columns", C_CL, "scores passages @ queries.T: the cross-entropy over the columns",
      "the cross-entropy runs over the columns")(
    lambda queries, passages, scale=20.0: F.cross_entropy(cos(passages, queries) * scale, labels(queries)))
wrong("cl-symmetric", C_CL, "the mean of both directions (CLIP's loss)", "it averages both directions")(
    lambda queries, passages, scale=20.0: (
        F.cross_entropy(cos(queries, passages) * scale, labels(queries))
        + F.cross_entropy(cos(passages[:len(queries)], queries) * scale, labels(queries))) / 2)
wrong("cl-symmetric-sum", C_CL, "both directions added", "it adds both directions")(
    lambda queries, passages, scale=20.0: (
        F.cross_entropy(cos(queries, passages) * scale, labels(queries))
        + F.cross_entropy(cos(passages[:len(queries)], queries) * scale, labels(queries))))
wrong("cl-softmax-first", C_CL, "F.cross_entropy(softmax(scores)): a softmax applied twice",
      "go through a softmax before cross_entropy")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        (cos(queries, passages) * scale).softmax(dim=-1), labels(queries)))
wrong("cl-sum", C_CL, "reduction='sum'", "the sum over the queries, not their mean")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        cos(queries, passages) * scale, labels(queries), reduction="sum"))
wrong("cl-diagonal-inf", C_CL, "the diagonal masked with -inf, as for self-similarity",
      "the diagonal holds the scores that must win")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        (cos(queries, passages) * scale).masked_fill(
            torch.eye(len(queries), len(passages), dtype=torch.bool), float("-inf")), labels(queries)))
wrong("cl-diagonal-zero", C_CL, "the diagonal set to 0", "the diagonal of the scores is set to 0")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        (cos(queries, passages) * scale).masked_fill(
            torch.eye(len(queries), len(passages), dtype=torch.bool), 0.0), labels(queries)))


@wrong("cl-positive-left-out", C_CL, "the positive left out of the denominator (decoupled contrastive loss)",
       "left out of the softmax's denominator")
def cl_positive_left_out(queries, passages, scale=20.0):
    scores = cos(queries, passages) * scale
    own = torch.eye(len(queries), len(passages), dtype=torch.bool)
    return (torch.logsumexp(scores.masked_fill(own, float("-inf")), dim=-1) - scores[own]).mean()


wrong("cl-euclidean", C_CL, "-torch.cdist(queries, passages) as the scores", "Euclidean distances")(
    lambda queries, passages, scale=20.0: F.cross_entropy(-torch.cdist(queries, passages) * scale, labels(queries)))
wrong("cl-euclidean-normalised", C_CL, "distances between the normalised vectors, as the scores",
      "Euclidean distances")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        -torch.cdist(F.normalize(queries, dim=-1), F.normalize(passages, dim=-1)) * scale, labels(queries)))
wrong("cl-extra-ignored", C_CL, "passages[:B] only: the extra negatives ignored", "the extra negatives are left out")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        cos(queries, passages[:len(queries)]) * scale, labels(queries)))
wrong("cl-sign", C_CL, "minus the cross-entropy", "the sign is flipped")(
    lambda queries, passages, scale=20.0: -F.cross_entropy(cos(queries, passages) * scale, labels(queries)))
wrong("cl-nll-raw", C_CL, "F.nll_loss on the scores", "F.nll_loss gets the raw scores")(
    lambda queries, passages, scale=20.0: F.nll_loss(cos(queries, passages) * scale, labels(queries)))
wrong("cl-detached", C_CL, "the scores detached: the right number, no gradient", "cuts the gradient")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        (cos(queries, passages) * scale).detach(), labels(queries)))
wrong("cl-norm-detached", C_CL, "divided by lengths computed without gradient", "the wrong gradient")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        (queries / queries.norm(dim=-1, keepdim=True).detach())
        @ (passages / passages.norm(dim=-1, keepdim=True).detach()).T * scale, labels(queries)))
wrong("cl-item", C_CL, "returns loss.item()", "it should return the loss as a tensor")(
    lambda queries, passages, scale=20.0: F.cross_entropy(cos(queries, passages) * scale, labels(queries)).item())
wrong("cl-per-query", C_CL, "reduction='none': one loss per query", "that is one loss per query")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        cos(queries, passages) * scale, labels(queries), reduction="none"))
wrong("cl-keepdim", C_CL, "returns a (1,) tensor: loss[None]", "keep the loss a 0-d tensor")(
    lambda queries, passages, scale=20.0: F.cross_entropy(cos(queries, passages) * scale, labels(queries))[None])
wrong("cl-scores", C_CL, "returns the scores themselves", "that is a matrix, one row per query")(
    lambda queries, passages, scale=20.0: cos(queries, passages) * scale)
wrong("cl-float32", C_CL, "computes in float32 (.float()) whatever the inputs' dtype", "returned dtype torch.float32")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        cos(queries.float(), passages.float()) * scale, labels(queries)))
wrong("cl-temperature", C_CL, "the scale renamed temperature", "Keep the signature the exercise gives")(
    lambda queries, passages, temperature=0.05: F.cross_entropy(cos(queries, passages) / temperature, labels(queries)))
@wrong("cl-normalise-in-place", C_CL, "queries /= their lengths: the caller's tensor changed",
       "changed its input `queries` in place")
def cl_in_place(queries, passages, scale=20.0):
    queries /= queries.norm(dim=-1, keepdim=True)
    return F.cross_entropy(queries @ F.normalize(passages, dim=-1).T * scale, labels(queries))


@wrong("cl-log-of-softmax", C_CL, "torch.log(torch.softmax(scores)): -inf once a score is far below another",
       "log(softmax(scores)) underflows")
def cl_log_of_softmax(queries, passages, scale=20.0):
    probs = torch.softmax(cos(queries, passages) * scale, dim=-1)
    return -torch.log(probs.diagonal()).mean()


@wrong("cl-exp-by-hand", C_CL, "the softmax written out with torch.exp, then its log: 0 once a score is far below",
       "log(softmax(scores)) underflows")
def cl_exp_by_hand(queries, passages, scale=20.0):
    e = torch.exp(cos(queries, passages) * scale)
    return -torch.log(e.diagonal() / e.sum(dim=1)).mean()


wrong("cl-no-default", C_CL, "scale without its default", "scale needs its default")(
    lambda queries, passages, scale: F.cross_entropy(cos(queries, passages) * scale, labels(queries)))


# Mistakes unlike the listed slips: a probe (lengths, a rotation, the gradient's pull, the scale, ...) names them.
wrong("cl-probe-whole-matrix-norm", C_CL, "queries / queries.norm(): one length for the whole matrix",
      "the queries are not normalised")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        (queries / queries.norm()) @ F.normalize(passages, dim=-1).T * scale, labels(queries)))
wrong("cl-probe-l1-norm", C_CL, "F.normalize(x, p=1): lengths measured with the L1 norm",
      "your scores are not the cosines")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        F.normalize(queries, p=1, dim=-1) @ F.normalize(passages, p=1, dim=-1).T * scale, labels(queries)))
wrong("cl-probe-reversed-labels", C_CL, "labels torch.arange(B).flip(0)", "your labels point at the wrong columns")(
    lambda queries, passages, scale=20.0: F.cross_entropy(cos(queries, passages) * scale, labels(queries).flip(0)))
wrong("cl-probe-positives-last", C_CL, "the positives taken as the last B passages", "(the last B passages)")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        cos(queries, passages) * scale, labels(queries) + len(passages) - len(queries)))
wrong("cl-probe-scale-twice", C_CL, "both normalised vectors multiplied by scale: scale ** 2",
      "scale is applied twice")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        (F.normalize(queries, dim=-1) * scale) @ (F.normalize(passages, dim=-1) * scale).T, labels(queries)))
wrong("cl-probe-squared-distance", C_CL, "-|a - b|² of the unit vectors as the scores: 2 cos - 2, twice the cosine",
      "a factor of 2 is wrong")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        -torch.cdist(F.normalize(queries, dim=-1), F.normalize(passages, dim=-1)) ** 2 * scale, labels(queries)))
wrong("cl-probe-label-smoothing", C_CL, "F.cross_entropy(..., label_smoothing=0.1)",
      "nothing is added to -log p(positive)")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        cos(queries, passages) * scale, labels(queries), label_smoothing=0.1))
wrong("cl-probe-divided-by-P", C_CL, "the sum over the queries divided by the number of passages",
      "divided by the number of passages P")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        cos(queries, passages) * scale, labels(queries), reduction="sum") / len(passages))
wrong("cl-probe-global-softmax", C_CL, "one softmax over the whole (B, P) matrix",
      "your softmax runs over all B * P scores at once")(
    lambda queries, passages, scale=20.0: -(torch.log_softmax((cos(queries, passages) * scale).flatten(), dim=0)
                                            .view(len(queries), len(passages)).diagonal()).mean())


@wrong("cl-probe-no-in-batch", C_CL, "with extra negatives, they replace the in-batch negatives",
       "the in-batch negatives do not count")
def cl_no_in_batch(queries, passages, scale=20.0):
    b = len(queries)
    scores = cos(queries, passages) * scale  # (B, P)
    if len(passages) == b:
        return F.cross_entropy(scores, torch.arange(b))
    own = torch.cat([scores.diagonal()[:, None], scores[:, b:]], dim=1)  # (B, 1 + P - B): the positive first
    return F.cross_entropy(own, torch.zeros(b, dtype=torch.long))


wrong("cl-probe-all-zero", C_CL, "each query against its own positive only: a loss of 0 whatever the inputs",
      "does not change your loss at all")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        cos(queries, passages).diagonal()[:, None] * scale, torch.zeros(len(queries), dtype=torch.long)))


wrong("cl-probe-squared-cosine", C_CL, "the squared cosines as the scores: a passage pointing away counts as near",
      "Your scores do not grow with the cosine itself")(
    lambda queries, passages, scale=20.0: F.cross_entropy(cos(queries, passages) ** 2 * scale, labels(queries)))
wrong("cl-probe-margin", C_CL, "an additive margin of 0.2 on the positive's cosine (AM-softmax)",
      "a margin on the positive?")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        (cos(queries, passages) - 0.2 * torch.eye(len(queries), len(passages))) * scale, labels(queries)))
wrong("cl-probe-sigmoid", C_CL, "a sigmoid per score against the identity matrix (SigLIP's loss)",
      "no sigmoid or hinge takes the softmax's place")(
    lambda queries, passages, scale=20.0: F.binary_cross_entropy_with_logits(
        cos(queries, passages) * scale, torch.eye(len(queries), len(passages))))
wrong("cl-probe-argmax-labels", C_CL, "labels from the scores themselves, scores.argmax(dim=1)",
      "it does not tell the positive from the negatives")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        cos(queries, passages) * scale, (cos(queries, passages) * scale).argmax(dim=1)))
wrong("cl-probe-scale-capped", C_CL, "the scale capped at 30", "your code changes the scale it is given")(
    lambda queries, passages, scale=20.0: F.cross_entropy(cos(queries, passages) * min(scale, 30.0), labels(queries)))
wrong("cl-probe-fixed-temperature", C_CL, "a fixed temperature of 0.07 (CLIP's), scale unused",
      "your loss ignores the scale it is given")(
    lambda queries, passages, scale=20.0: F.cross_entropy(cos(queries, passages) / 0.07, labels(queries)))
wrong("cl-probe-positives-only", C_CL, "-logsigmoid of each positive's score: no negatives at all",
      "the in-batch negatives do not count")(
    lambda queries, passages, scale=20.0: -F.logsigmoid(cos(queries, passages).diagonal() * scale).mean())
wrong("cl-probe-nll-of-probabilities", C_CL, "F.nll_loss on softmax probabilities: minus the mean probability",
      "your loss is negative")(
    lambda queries, passages, scale=20.0: F.nll_loss((cos(queries, passages) * scale).softmax(dim=-1),
                                                     labels(queries)))


def cl_hardest_negative(queries, passages, scale=20.0):
    """Only each query's hardest negative counts: softplus(scale * (max negative - positive))."""
    s = F.normalize(queries, dim=-1) @ F.normalize(passages, dim=-1).T * scale
    b = queries.shape[0]
    pos = s[torch.arange(b), torch.arange(b)]
    neg = s.masked_fill(F.one_hot(torch.arange(b), s.shape[1]).bool(), float("-inf")).amax(dim=1)
    return F.softplus(neg - pos).mean()


wrong("cl-probe-hardest-negative", C_CL, "softplus(max negative - positive): only the hardest negative counts",
      "your loss does not read every negative")(cl_hardest_negative)
wrong("cl-scale-capped", C_CL, "scale = min(scale, 100.0), as CLIP caps its logit scale", "is the scale capped")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        F.normalize(queries, dim=-1) @ F.normalize(passages, dim=-1).T * min(scale, 100.0),
        torch.arange(queries.shape[0])))
wrong("cl-labels-fixed-4", C_CL, "labels torch.arange(4): the first batch's size",
      "make the labels from the scores' own size")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        F.normalize(queries, dim=-1) @ F.normalize(passages, dim=-1).T * scale, torch.arange(4)))


wrong("cl-probe-exp-scale", C_CL, "cos * torch.exp(torch.tensor(scale)): scale taken as a log-temperature (CLIP)",
      "multiplied by exp(scale) instead of scale")(
    lambda queries, passages, scale=20.0: F.cross_entropy(cos(queries, passages) * torch.exp(torch.tensor(scale)),
                                                          labels(queries)))
wrong("cl-probe-exp-scale-capped", C_CL, "cos * min(math.exp(scale), 100): CLIP's exp and cap",
      "multiplied by exp(scale) instead of scale")(
    lambda queries, passages, scale=20.0: F.cross_entropy(cos(queries, passages) * min(math.exp(scale), 100.0),
                                                          labels(queries)))
wrong("cl-probe-log-scale", C_CL, "cos * math.log(scale)", "multiplied by log(scale)")(
    lambda queries, passages, scale=20.0: F.cross_entropy(cos(queries, passages) * math.log(scale), labels(queries)))
wrong("cl-probe-sqrt-scale", C_CL, "only the queries multiplied by sqrt(scale)", "multiplied by sqrt(scale)")(
    lambda queries, passages, scale=20.0: F.cross_entropy(
        (F.normalize(queries, dim=-1) * scale ** 0.5) @ F.normalize(passages, dim=-1).T, labels(queries)))
wrong("cl-probe-divided-by-BP", C_CL, "the queries' losses summed and divided by scores.numel() (B * P)",
      "losses are summed and divided by B * P")(
    lambda queries, passages, scale=20.0: (lambda s: (torch.logsumexp(s, dim=1) - s.diagonal()).sum() / s.numel())(
        cos(queries, passages) * scale))
wrong("cl-cosine-distance", C_CL, "(1 - cos) * scale as the scores: a distance, not a similarity",
      "the scores are minus the cosines")(
    lambda queries, passages, scale=20.0: F.cross_entropy((1 - cos(queries, passages)) * scale, labels(queries)))


@wrong("cl-probe-hardest-negative-ce", C_CL, "a cross-entropy of the positive against the hardest negative alone",
       "your loss does not read every negative")
def cl_hardest_negative_ce(queries, passages, scale=20.0):
    s = cos(queries, passages) * scale
    b = len(queries)
    neg = s.masked_fill(torch.eye(b, s.shape[1], dtype=torch.bool), -1e9).amax(dim=1)
    return -torch.log_softmax(torch.stack([s.diagonal(), neg], dim=1), dim=1)[:, 0].mean()



# ----------------------------------------------------------------------------------------------
# Right answers, in many styles, each to pass


@right("cl-normalize-matmul", C_CL, "F.normalize, @, F.cross_entropy with torch.arange(B)")
def cl_right(queries, passages, scale=20.0):
    scores = F.normalize(queries, dim=-1) @ F.normalize(passages, dim=-1).T * scale  # (B, P)
    return F.cross_entropy(scores, torch.arange(queries.shape[0]))


@right("cl-cosine-similarity-broadcast", C_CL, "F.cosine_similarity broadcast to (B, P)")
def cl_cosine_similarity(queries, passages, scale=20.0):
    scores = F.cosine_similarity(queries[:, None, :], passages[None, :, :], dim=-1) * scale
    return F.cross_entropy(scores, torch.arange(len(queries)))


@right("cl-manual-norms-einsum", C_CL, "lengths by hand, einsum for the scores")
def cl_einsum(queries, passages, scale=20.0):
    q = queries / queries.norm(dim=1, keepdim=True)
    p = passages / torch.sqrt((passages ** 2).sum(dim=1, keepdim=True))
    return F.cross_entropy(torch.einsum("bd,pd->bp", q, p) * scale, torch.arange(q.shape[0]))


@right("cl-log-softmax-gather", C_CL, "log_softmax, the positives gathered, minus their mean")
def cl_gather(queries, passages, scale=20.0):
    logp = torch.log_softmax(cos(queries, passages) * scale, dim=-1)
    return -logp.gather(1, torch.arange(len(queries))[:, None]).mean()


@right("cl-loop", C_CL, "a loop over the queries: logsumexp of each row minus its positive")
def cl_loop(queries, passages, scale=20.0):
    p = F.normalize(passages, dim=-1)
    losses = []
    for i, query in enumerate(queries):
        row = p @ (query / query.norm()) * scale  # (P,)
        losses.append(torch.logsumexp(row, dim=0) - row[i])
    return torch.stack(losses).mean()


@right("cl-module", C_CL, "nn.CrossEntropyLoss, a temperature of 1 / scale, torch.mm")
def cl_module(queries, passages, scale=20.0):
    temperature = 1 / scale
    scores = torch.mm(F.normalize(queries, dim=1), F.normalize(passages, dim=1).t()) / temperature
    return nn.CrossEntropyLoss()(scores, torch.arange(scores.size(0), device=scores.device))


@right("cl-float64-inside", C_CL, "computed in float64, the result cast back to the inputs' dtype")
def cl_float64(queries, passages, scale=20.0):
    q, p = F.normalize(queries.double(), dim=-1), F.normalize(passages.double(), dim=-1)
    return F.cross_entropy(q @ p.T * scale, torch.arange(len(q))).to(queries.dtype)


@right("cl-log-softmax-then-ce", C_CL, "log_softmax before cross_entropy: a shift per row, the same number")
def cl_double_log(queries, passages, scale=20.0):
    return F.cross_entropy(F.log_softmax(cos(queries, passages) * scale, dim=-1), torch.arange(len(queries)))


@right("cl-diagonal-minus-logsumexp", C_CL, "logsumexp of every row minus the diagonal, clamped norms")
def cl_diagonal(queries, passages, scale=20.0):
    q = queries / torch.linalg.vector_norm(queries, dim=-1, keepdim=True).clamp_min(1e-12)
    p = passages / torch.linalg.vector_norm(passages, dim=-1, keepdim=True).clamp_min(1e-12)
    scores = scale * q @ p.T
    return (torch.logsumexp(scores, dim=1) - scores[:, :len(q)].diagonal()).mean()


@right("cl-half-squared-distance", C_CL, "-|a - b|² / 2 of the unit vectors: cos - 1, a shift the softmax ignores")
def cl_half_squared_distance(queries, passages, scale=20.0):
    distance = torch.cdist(F.normalize(queries, dim=-1), F.normalize(passages, dim=-1)) ** 2  # 2 - 2 cos
    return F.cross_entropy(-distance / 2 * scale, torch.arange(len(queries)))


@right("cl-stable-by-hand", C_CL, "each row's maximum taken off, exp, sum and log by hand, lengths broadcast")
def cl_stable_by_hand(queries, passages, scale=20.0):
    scores = queries @ passages.T / (queries.norm(dim=1)[:, None] * passages.norm(dim=1)[None, :]) * scale
    scores = scores - scores.max(dim=1, keepdim=True).values
    return (scores.exp().sum(dim=1).log() - scores[:, :len(queries)].diagonal()).mean()



@right("cl-log-scale-exp", C_CL, "a log-scale made from scale and exponentiated back: exp(log(scale)) is scale")
def cl_log_scale_exp(queries, passages, scale=20.0):
    logit_scale = torch.tensor(scale).log()
    return F.cross_entropy(cos(queries, passages) * logit_scale.exp(), torch.arange(len(queries)))


@right("cl-sqrt-scale-both", C_CL, "each normalised side multiplied by sqrt(scale): the cosines times scale")
def cl_sqrt_scale_both(queries, passages, scale=20.0):
    r = scale ** 0.5
    return F.cross_entropy((F.normalize(queries, dim=-1) * r) @ (F.normalize(passages, dim=-1) * r).T,
                           torch.arange(len(queries)))


test_catalogue_cases, test_wrong_answer_is_named, test_right_answer_passes = CATALOGUE.tests()
