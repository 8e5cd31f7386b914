"""Checker of ``masked_token_loss(logits, labels, mask)`` (notebook 10): mean cross-entropy over real tokens.

Compared with ``F.cross_entropy`` over the real tokens only, on batches with padding at the end and in
the middle, a batch of one, float64, a batch whose length equals the number of classes (where
passing (B, L, C) logits straight to ``F.cross_entropy`` runs silently over the wrong axis), and two
kinds of labels at padding positions: ordinary classes (so an answer that counts padding is caught)
and ``-100`` (what notebook 10's batches hold there, so an answer that reads them fails as it would in
training). ``log_softmax`` before ``cross_entropy`` is accepted: it only shifts each row of logits by
a constant, which cross-entropy ignores.
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F

from ._compare import _check_gradients, _close, _first_match, probe
from ._modules import _call_inputs
from ._run import ExerciseError, _checker, _expect_tensor, _gen, _invoke, _randn, _shape
from .registry import exercise


def _per_token(logits, labels):
    """Cross-entropy of every position (labels clamped into range where they are padding's)."""
    safe = labels.clamp(0, logits.shape[-1] - 1)
    return F.cross_entropy(logits.double().flatten(0, 1), safe.flatten(), reduction="none").view(labels.shape)


def _picked(probs, labels):
    """Each token's value at its label (labels clamped into range)."""
    return probs.gather(-1, labels.clamp(0, probs.shape[-1] - 1)[..., None])[..., 0]


def _mean(per, keep):
    return (per * keep).sum() / keep.sum()


def _slip(formula, needs=None):
    """The masked mean or one of its usual slips: ``formula(per, keep, logits, labels)`` of the per-token losses,
    the mask and the logits, all float64 (the result in logits' dtype). ``needs(logits, labels, mask)`` says
    whether the slip can be computed on these inputs."""
    def loss(logits, labels, mask):
        if needs is not None and not needs(logits, labels, mask):
            raise ValueError("this slip cannot be computed on these inputs")
        out = formula(_per_token(logits, labels), mask.double(), logits.double(), labels)
        return {"out": out.to(logits.dtype)}
    return loss


_loss = _slip(lambda per, keep, *_: _mean(per, keep))  # the reference: the mean over the real tokens
_pads_in_range = lambda lo, la, m: not (la[~m] < 0).any()  # a slip that reads the pads' labels needs classes there

_LOSS_MISTAKES = [
    ("padding is included in the mean: the loss averages over every position. Only the real tokens count: "
     "F.cross_entropy(logits[mask], labels[mask]), or the per-token losses times the mask, summed, divided by "
     "mask.sum().",
     _slip(lambda per, *_: per.mean(), _pads_in_range)),
    ("the sum over the real tokens is divided by B * L, every position, padding included: divide by the "
     "number of real tokens, mask.sum() ((loss * mask).mean() divides by B * L).",
     _slip(lambda per, keep, lo, la: (per * keep).sum() / la.numel())),
    ("the sum over the real tokens is divided by the batch size B: divide by the number of real tokens, "
     "mask.sum().",
     _slip(lambda per, keep, lo, la: (per * keep).sum() / la.shape[0])),
    ("the mask is inverted: True marks the real tokens, so it averages over the padding. Keep the positions "
     "where the mask is True.",
     _slip(lambda per, keep, *_: _mean(per, 1 - keep), _pads_in_range)),
    ("it returns the sum over the real tokens, not their mean: divide by the number of real tokens, "
     "mask.sum().",
     _slip(lambda per, keep, *_: (per * keep).sum())),
    ("it averages each sequence first and then the sequences, so a short sequence's tokens weigh more: the "
     "mean runs over all real tokens of the batch at once, sum / mask.sum().",
     _slip(lambda per, keep, *_: ((per * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1)).mean())),
    ("the logits go through a softmax before cross_entropy, which applies log_softmax itself: pass the raw "
     "logits (cross_entropy = log_softmax + nll_loss).",
     _slip(lambda per, keep, lo, la: _mean(_per_token(torch.softmax(lo, dim=-1), la), keep))),
    ("F.nll_loss gets raw logits: nll_loss expects log-probabilities, so apply log_softmax first, or use "
     "F.cross_entropy on the logits.",
     _slip(lambda per, keep, lo, la: _mean(-_picked(lo, la), keep))),
    ("F.nll_loss gets probabilities (softmax) instead of log-probabilities: use log_softmax, or "
     "F.cross_entropy on the logits.",
     _slip(lambda per, keep, lo, la: _mean(-_picked(torch.softmax(lo, dim=-1), la), keep))),
    ("the softmax runs over the positions (dim=1), not the classes: log_softmax(logits, dim=-1) (the last "
     "dimension, C), then pick each token's label, or F.cross_entropy(logits[mask], labels[mask]).",
     _slip(lambda per, keep, lo, la: _mean(-_picked(torch.log_softmax(lo, dim=1), la), keep))),
    ("cross_entropy runs over the wrong axis: it takes the classes on dim 1, so (B, L, C) logits given as they "
     "are make the positions the classes. Pick the real tokens, logits[mask] (N, C) and labels[mask] (N,), or "
     "pass logits.transpose(1, 2) (B, C, L).",
     _slip(lambda per, keep, lo, la: _mean(F.cross_entropy(lo, la.clamp(0, lo.shape[1] - 1), reduction="none"), keep),
           lambda lo, la, m: lo.shape[1] == lo.shape[2])),
    ("it returns exp() of the mean cross-entropy, the perplexity: a number to report, not the loss to train on. "
     "Return the mean cross-entropy itself (perplexity = loss.exp() is computed from it afterwards).",
     _slip(lambda per, keep, *_: _mean(per, keep).exp())),
    ("it is a binary cross-entropy (F.binary_cross_entropy_with_logits against one-hot labels): each class "
     "judged alone, by a sigmoid, and averaged over the C classes too. The classes of a token compete in one "
     "softmax: F.cross_entropy(logits[mask], labels[mask]).",
     _slip(lambda per, keep, lo, la: F.binary_cross_entropy_with_logits(
         lo, F.one_hot(la.clamp(0, lo.shape[-1] - 1), lo.shape[-1]).double(), reduction="none").mean(-1)
         .mul(keep).sum() / keep.sum())),
    ("it is a squared error between the logits and one-hot labels (F.mse_loss), not a cross-entropy: the "
     "logits are scores that go through a softmax, -log softmax(logits)[label]: F.cross_entropy(logits[mask], "
     "labels[mask]).",
     _slip(lambda per, keep, lo, la: (lo - F.one_hot(la.clamp(0, lo.shape[-1] - 1), lo.shape[-1]).double())
           .pow(2).mean(-1).mul(keep).sum() / keep.sum())),
]


def _loss_cases():
    g = _gen(11)
    end = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 0, 0, 0]], dtype=torch.bool)
    middle = torch.tensor([[1, 0, 1, 1, 0], [0, 1, 1, 1, 1], [1, 1, 1, 0, 1]], dtype=torch.bool)

    def case(label, logits, mask, pad=None):
        """The labels are drawn after the logits, and padding's set to ``pad`` (None: ordinary classes)."""
        labels = torch.randint(0, logits.shape[-1], mask.shape, generator=g)
        return label, logits, labels if pad is None else labels.masked_fill(~mask, pad), mask

    return [
        case("for logits (3, 5, 7), a mask (3, 5) padded at the end, padding labelled with ordinary classes",
             _randn(g, 3, 5, 7), end),
        case("for logits (3, 5, 7), a mask (3, 5) padded in the middle, padding labelled -100 (as in notebook 10's "
             "batches)", _randn(g, 3, 5, 7), middle, -100),
        case("for logits (2, 4, 4) (as many positions as classes), a mask padded at the end",
             _randn(g, 2, 4, 4), end[1:, :4]),
        case("for a batch of one, logits (1, 6, 3), two pads labelled -100", _randn(g, 1, 6, 3),
             torch.tensor([[1, 1, 1, 1, 0, 0]], dtype=torch.bool), -100),
        case("for large logits (about 100), (3, 5, 7), padding labelled -100", _randn(g, 3, 5, 7) * 100, end, -100),
        case("for float64 logits (3, 5, 7), a mask padded in the middle", _randn(g, 3, 5, 7).double(), middle),
    ]


@probe
def _loss_probe(name, fn, label, logits, labels, mask) -> str:
    """Read which logits the answer depends on, and towards which label, from its gradient; "" if no finding.

    The mean cross-entropy's gradient is (softmax - one_hot(label)) / N at each real token and 0 at the
    padding, so where the answer's gradient is zero, nonzero or pointing at another class says which
    tokens it counts and against which labels.
    """
    if not torch.is_floating_point(logits):
        return ""
    call = functools.partial(_invoke, name, label, fn)
    number = lambda value: isinstance(value, torch.Tensor) and value.numel() == 1  # a loss the probe can read
    x = logits.detach().clone().requires_grad_(True)
    with torch.enable_grad():  # checkers run under no_grad
        loss = call(x, labels, mask)
        if not number(loss) or not loss.requires_grad:
            return ""
        if not torch.isfinite(loss).all():
            return ("your loss is not finite here: log(softmax(x)) underflows to log(0) = -inf when one logit is "
                    "far above another. Use F.log_softmax or F.cross_entropy, which compute it "
                    "stably.")
        try:
            (grad,) = torch.autograd.grad(loss.sum(), x)
        except RuntimeError as exc:
            if "floor_divide" in str(exc):
                return ("your loss uses floor division (//): it rounds the mean down to a whole number, and no "
                        "gradient goes through it. Divide with /: sum / mask.sum().")
            return ""
    b, length, classes = logits.shape
    other = call(logits, torch.where(mask, (labels + 1) % classes, labels), mask)
    if number(other) and _close(other.detach(), loss.detach()):
        best = F.cross_entropy(logits[mask].double(), logits[mask].argmax(dim=-1))
        said = (" it scores each token against the class the logits rank first (argmax, or the largest "
                "log-probability), which is the model's guess, not the answer" if _close(loss.detach(), best) else "")
        return ("every real token's label changed, and your loss stays the same: it never reads the labels;"
                f"{said or ' the labels must decide which log-probability each token pays'}. The cross-entropy is "
                "-log p(label) at each real token: F.cross_entropy(logits[mask], labels[mask]).")
    padded = torch.cat([logits, torch.randn(b, 2, classes, generator=_gen(12), dtype=logits.dtype) * 3], dim=1)
    more = call(padded, torch.cat([labels, labels[:, :2]], dim=1),
                torch.cat([mask, torch.zeros(b, 2, dtype=torch.bool)], dim=1))
    if number(more) and not _close(more.detach(), loss.detach()):
        return (f"two more pad positions at the end of every sequence change your loss from {float(loss):.5g} to "
                f"{float(more):.5g}; padding must not change the loss at all. The padding still counts in your "
                "mean (zeroing its logits, or its loss, still leaves it in the count): average over the real "
                "tokens only, logits[mask] and labels[mask].")
    target = grad.argmin(dim=-1)  # the class the gradient pulls up: the label the token is scored against
    follow = mask[:, :-1] & mask[:, 1:]
    if follow.any() and bool((target[:, :-1][follow] == labels[:, 1:][follow]).all()) \
            and not bool((target[mask] == labels[mask]).all()):
        return ("each token is scored against the next token's label, as in next-token prediction; here every "
                "token has its own label: logits[:, i] goes with labels[:, i], no shift.")
    if not bool((target[mask] == labels[mask]).all()) \
            and torch.equal(target[mask].sort().values, labels[mask].sort().values):
        return ("your loss scores the real tokens against the right labels, but not each against its own: the "
                "logits and the labels are paired in different orders. Select both with the same mask the same "
                "way, logits[mask] (N, C) and labels[mask] (N,), with no transpose on one of them.")
    per_token = grad.abs().sum(dim=-1)  # (B, L)
    scale = float(per_token[mask].max()) if mask.any() else 0.0
    if scale == 0.0:
        return ""
    leak = per_token[~mask]
    if leak.numel() and float(leak.max()) > 1e-4 * scale:
        return (f"your loss depends on the logits at the padding (its gradient there is up to {float(leak.max()):.3g}, "
                "it should be 0): the padding still counts. Zeroing the padding's logits does not remove a token "
                "(a row of zeros still has a loss of log C): leave them out of the mean, logits[mask] and "
                "labels[mask].")
    # Two inputs whose cross-entropy is known exactly: all logits equal (each token costs log C), and the
    # label's logit far above the rest (each token costs almost 0).
    flat = call(torch.zeros_like(logits), labels, mask)
    sure = call(F.one_hot(labels.clamp(0, classes - 1), classes).to(logits.dtype) * 40.0, labels, mask)
    if number(flat) and number(sure):
        uniform = math.log(classes)
        if abs(float(flat) - uniform) > 1e-4 * uniform:
            ratio = float(flat) / uniform
            again = float(loss) / float(_loss(logits, labels, mask)["out"])  # the same factor on these logits?
            factor = abs(again - ratio) < 1e-3 * abs(ratio)
            return (f"with every logit equal each token's cross-entropy is exactly log C = log {classes} = "
                    f"{uniform:.5g}, so the mean is {uniform:.5g}; yours gives {float(flat):.5g}"
                    + (": the sign is flipped. The cross-entropy is minus the mean log-probability of the labels, "
                       "-log_softmax(logits)[label], which is positive." if factor and abs(ratio + 1) < 1e-3 else
                       f", {ratio:.4g} times it: a factor is wrong (a sum where the mean belongs, or a scale). The "
                       "loss is the plain mean over the real tokens." if factor and ratio > 0 else
                       ", and no one factor explains your loss here and on the other logits: it is not the "
                       "cross-entropy of the labels. Each token's loss is -log softmax(logits)[label] over the C "
                       "classes: F.cross_entropy(logits[mask], labels[mask])."))
        if float(sure) > 1e-3:
            return (f"with each label's logit 40 above the others, every token is predicted right and sure, and "
                    f"the cross-entropy is almost 0; yours gives {float(sure):.4g}. Something besides -log p(label) "
                    "is added (label smoothing, a penalty): use F.cross_entropy(logits[mask], labels[mask]) as it is.")
    dropped = mask & (per_token <= 1e-6 * scale)
    if dropped.any():
        zero = {int(c) for c in labels[dropped].tolist()} == {0}
        count = int(dropped.sum())
        tenth = call(logits / 10, labels, mask)  # right on logits ten times smaller: large ones are cut off
        cut = not zero and number(tenth) and _close(tenth.detach(), _loss(logits / 10, labels, mask)["out"])
        return (f"{count} of the {int(mask.sum())} real tokens {'does' if count == 1 else 'do'} not count in your "
                "loss (no gradient reaches their logits)"
                + (f": {'it is' if count == 1 else 'all of them'} labelled 0. Class 0 is a real class here; "
                   "ignore_index=0 (or labels > 0) drops it. Select the tokens with the mask, not by their label."
                   if zero else
                   ", and on the same logits ten times smaller your loss is right: something cuts large logits "
                   "off (a clamp?). Cross-entropy needs no clamp: F.cross_entropy and F.log_softmax are stable for "
                   "any logits." if cut else
                   ". Every real token (mask True) counts, whatever its label."))
    return ""


@_checker("masked_token_loss")
def check_masked_token_loss(fn):
    """Check ``masked_token_loss(logits, labels, mask) -> 0-d Tensor`` (mean cross-entropy over real tokens)."""
    name = exercise("masked_token_loss").name
    cases = _loss_cases()
    for label, logits, labels, mask in cases:
        got = _call_inputs(name, fn, label, {"logits": logits, "labels": labels, "mask": mask}, None)
        if isinstance(got, (float, int)) and not isinstance(got, bool):
            raise ExerciseError(
                f"Your {name} returned a Python number ({got!r}) {label}; it should return the loss as a tensor, "
                "which training calls .backward() on.\nHint: no .item() or float(...) at the end."
            )
        got = _expect_tensor(name, got, label, "the loss (a 0-d tensor)")
        want = _loss(logits, labels, mask)["out"]
        if got.shape != want.shape:
            if tuple(got.shape) == tuple(labels.shape) or got.dim() == 1 and got.numel() in (
                    int(mask.sum()), labels.numel()):
                hint = ("that is one loss per token; the loss is their mean over the real tokens, one number "
                        "(F.cross_entropy's default reduction='mean' on the real tokens, or sum / mask.sum()).")
            elif got.numel() == 1:
                hint = "keep the loss a 0-d tensor: no [None], .reshape(1) or keepdim=True."
            else:
                hint = "the loss is one number: the mean over the real tokens."
            raise ExerciseError(f"Your {name} returned shape {_shape(got)} {label}, but the loss is a 0-d tensor, "
                                f"shape ().\nHint: {hint}")
        if got.dtype != want.dtype:
            raise ExerciseError(f"Your {name} returned dtype {got.dtype} {label}, but the logits are {want.dtype}. "
                                "Keep the logits' dtype (no .float() or .double() inside).")
        if _close(got, want):
            continue
        mistake = _first_match({"out": got}, _LOSS_MISTAKES, logits, labels, mask) \
            or _loss_probe(name, fn, label, logits, labels, mask)
        if mistake:
            raise ExerciseError(f"Your {name} is not right yet {label}: {mistake}")
        if torch.isnan(got).any():
            raise ExerciseError(
                f"Your {name} returned NaN {label}.\nHint: padding labels may be -100 (notebook 10's batches): "
                "select the real tokens before you use the labels, logits[mask] and labels[mask]."
            )
        raise ExerciseError(
            f"Your {name} is not the mean cross-entropy over the real tokens {label}: you have {float(got):.6g}, "
            f"F.cross_entropy(logits[mask], labels[mask]) gives {float(want):.6g}.\nHint: "
            "F.cross_entropy(logits[mask], labels[mask]): logits[mask] is (N, C), labels[mask] (N,)."
        )
    label, logits, labels, mask = cases[0]
    _check_gradients(name, label, lambda logits: _invoke(name, label, fn, logits, labels, mask),
                     lambda logits: _loss(logits, labels, mask)["out"], {"logits": logits})
