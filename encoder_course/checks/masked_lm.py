"""Checker of ``mask_tokens(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15) -> (inputs, chosen)``
(notebook 12): BERT's masking rule.

The answer is random, so no position is compared with the reference: the checker measures what the
rule promises on big batches (about 30,000 maskable tokens each: padding at the end or at the start,
[CLS], [SEP], [UNK], and in one batch ordinary tokens the caller marks not maskable), each share within
6 binomial standard deviations plus a small slack for rounding, so a right answer never fails while
every listed slip is off by dozens of them. The checker seeds every generator it passes, and torch's
global one, so its verdict is the same on every run.

In order: two tensors come back, inputs long and chosen bool, both (B, L); the arguments are left as
they were; two calls with generators seeded alike give the same result although the global random
state was reseeded in between, and generators seeded differently give different choices. Then, at
p = 0.15, 0.3, 0.5 and 1: chosen only where maskable; inputs equal to token_ids wherever chosen is
False; every id in 0 .. vocab_size - 1 and mask_id the argument's; each maskable token chosen on its
own (not the same positions in every sequence, not whole sequences, not spans) with probability p;
of the chosen, 80 % mask_id, 10 % a random id and 10 % left as they were, each token's lot drawn on
its own; the random ids spread uniformly over the whole vocabulary. Then pretrain's call (the
generator fifth, p at its default 0.15), generator=None (torch's global generator: two calls differ),
tiny batches (nothing maskable, p = 0, p = 1, one token), and a vocabulary of 6 ids, where the random
ids' spread shows (rounding ``rand * (V - 1)`` gives the two end ids half their share). Besides two
generators seeded differently, two seeded alike, one of them drawn from first, must choose differently:
a copy made from ``generator.initial_seed()`` (or torch seeded with it) would hide the same positions in
every batch. (A generator's state saved and restored around the draws is not found: the grader's
process draws from a copy of the generator, so two calls in a row cannot be compared there.)

Decisions (documented for teachers and maintainers):

* A random id that equals the original token is counted as kept, and one that equals mask_id as
  masked: the expected shares are computed exactly (0.8 + 0.1 / V masked, 0.1 + 0.1 / V kept).
  Never drawing the original token, or never mask_id, is accepted: it moves a share by at most
  0.1 / V, within the slack.
* Random ids come from the whole vocabulary, 0 .. vocab_size - 1, the special tokens included, as in
  BERT's ``create_pretraining_data.py`` and Hugging Face's collator (and as the docstring of
  ``mask_tokens`` says). A draw from a sub-range (``torch.randint(5, vocab_size)``,
  ``torch.randint(vocab_size - 1)``) or from the batch's own ids is named.
* Choosing exactly ``round(p * n)`` (or its floor) of each sequence's n maskable tokens with
  ``randperm`` is accepted: every maskable token is still chosen with probability p.
* ``maskable`` alone says which tokens may be chosen: one batch marks ordinary tokens not maskable, so
  an answer that works it out from the ids is named.
"""

from __future__ import annotations

import math
import re

import torch

from ._compare import _spans
from ._masked_lm_probes import (
    _GLOBAL_SEED,
    _batch_draw_probe,
    _call,
    _Case,
    _dependence_probe,
    _fail_first,
    _fate_probe,
    _fates,
    _near,
    _p_probe,
    _pct,
    _split,
    _split_distance,
    _split_fits,
    _split_probe,
    _split_text,
)
from ._run import ExerciseError, _checker, _gen
from .registry import exercise

_HINT_CHOOSE = ("chosen = (torch.rand(token_ids.shape, generator=generator) < p) & maskable: one random number per "
                "token, (B, L).")
_HINT_SPLIT = ("draw a second number per position, r = torch.rand(token_ids.shape, generator=generator): where chosen "
               "and r < 0.8 put mask_id; where chosen and 0.8 <= r < 0.9 a random id, torch.randint(vocab_size, "
               "token_ids.shape, generator=generator); leave the rest as they are.")
_SIGNATURE = "mask_tokens(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15)"
_HINT_RANDOM = ("torch.randint(vocab_size, token_ids.shape, generator=generator) draws each id uniformly from 0 to "
                "vocab_size - 1 (its high is exclusive), the special tokens included, as BERT does.")


# ----------------------------------------------------------------------------------------------
# The batches


def _batch(seed, b, length, pad, cls, sep, unk, ordinary, left=False, ruled_out=0.0):
    """A batch of sequences [CLS] pieces [SEP] of random lengths (10 to L), padded; 5 % of the pieces [UNK].

    ``ruled_out``: the share of ordinary pieces the caller marks not maskable as well.
    """
    g = _gen(seed)
    lengths = torch.randint(10, length + 1, (b,), generator=g)  # (B,)
    ids = torch.randint(ordinary[0], ordinary[1], (b, length), generator=g)  # (B, L)
    ids = torch.where(torch.rand(b, length, generator=g) < 0.05, unk, ids)
    col = torch.arange(length)[None, :]  # (1, L)
    start = (length - lengths)[:, None] if left else torch.zeros(b, 1, dtype=torch.long)  # (B, 1)
    end = start + lengths[:, None] - 1  # (B, 1): the [SEP]
    ids = torch.where(col == start, cls, ids)
    ids = torch.where(col == end, sep, ids)
    ids = torch.where((col < start) | (col > end), pad, ids)
    maskable = (ids >= ordinary[0]) & (ids < ordinary[1])
    if ruled_out:
        maskable &= torch.rand(b, length, generator=g) >= ruled_out
    return ids, maskable


def _cases() -> list[_Case]:
    a_ids, a_mask = _batch(40, 240, 250, pad=0, cls=2, sep=3, unk=1, ordinary=(5, 20))
    b_ids, b_mask = _batch(41, 300, 200, pad=1, cls=0, sep=2, unk=3, ordinary=(4, 36), left=True, ruled_out=0.1)

    def a(p, seed):
        return _Case(f"for a batch (240, 250) padded at the end, with [CLS], [SEP] and [UNK] ({int(a_mask.sum()):,} "
                     f"maskable tokens), mask_id=4, vocab_size=30, p={p:g}", a_ids, a_mask, 4, 30, p, seed,
                     (0, 1, 2, 3, 4))

    def b(p, seed):
        return _Case(f"for a batch (300, 200) padded at the start, with [CLS], [SEP], [UNK] and ordinary tokens "
                     f"marked not maskable ({int(b_mask.sum()):,} maskable tokens), mask_id=49 (the last id), "
                     f"vocab_size=50, p={p:g}", b_ids, b_mask, 49, 50, p, seed, (0, 1, 2, 3, 49))

    return [a(0.15, 7), b(0.3, 8), a(0.5, 9), b(1.0, 10)]


def _tiny_cases() -> list[_Case]:
    g = _gen(42)
    none = torch.tensor([[2, 1, 1, 3, 0, 0], [2, 3, 0, 0, 0, 0], [2, 1, 3, 0, 0, 0]])
    small = torch.randint(5, 30, (4, 12), generator=g)
    small_mask = torch.ones(4, 12, dtype=torch.bool)
    small_mask[:, 0] = small_mask[:, -1] = False
    small_mask[1, 6:] = False
    return [
        _Case("for a batch (3, 6) where no token is maskable (only [CLS], [SEP], [UNK] and padding), p=0.5",
              none, torch.zeros(3, 6, dtype=torch.bool), 4, 30, 0.5, 11, (0, 1, 2, 3, 4)),
        _Case("for a batch (4, 12) with p=0", small, small_mask, 4, 30, 0.0, 12, (4,)),
        _Case("for a batch (4, 12) with p=1", small, small_mask, 4, 30, 1.0, 13, (4,)),
        _Case("for a batch of one token, (1, 1), maskable, p=1", torch.tensor([[17]]),
              torch.ones(1, 1, dtype=torch.bool), 4, 30, 1.0, 14, (4,)),
        _Case("for a batch of one token, (1, 1), not maskable, p=1", torch.tensor([[2]]),
              torch.zeros(1, 1, dtype=torch.bool), 4, 30, 1.0, 15, (2, 4)),
    ]


# ----------------------------------------------------------------------------------------------
# What every call must satisfy: chosen only where maskable, nothing else changed, ids in range


def _check_places(name, case: _Case, inputs, chosen, label=None):
    label = label or case.label
    ids, maskable = case.token_ids, case.maskable
    outside = chosen & ~maskable
    n_not, n_out = int((~maskable).sum()), int(outside.sum())
    if n_out:
        inside = float(chosen[maskable].float().mean()) if maskable.any() else 0.0
        _fail_first([
            (n_out == n_not and maskable.any() and _near(inside, 1 - case.p, int(maskable.sum())) and case.p < 1,
             f"Your {name}'s chosen is inverted {label}: it is True at every position where maskable is False and at "
             f"{_pct(inside)} of the maskable tokens (1 - p). chosen is True exactly at the tokens you selected, the "
             "ones the model must predict.\nHint: return the selection itself, not ~chosen."),
            (maskable.any() and not chosen[maskable].any(),
             f"Your {name} chose tokens only where maskable is False {label} ({n_out:,} of those {n_not:,} "
             "positions, none of the maskable tokens): maskable is True where a token may be chosen.\nHint: keep "
             "the choice where maskable is True, `& maskable` (not `& ~maskable`)."),
            (not torch.isin(ids[outside], torch.tensor(case.specials)).any(),
             f"Your {name} chose {n_out:,} ordinary tokens that the caller marked not maskable {label}: your code "
             "decides from the token ids which tokens may be chosen, instead of using the maskable argument.\nHint: "
             "maskable alone says which tokens may be chosen (a caller may rule out ordinary tokens too): "
             "`& maskable`, as it is given."),
            (True,
             f"Your {name} chose {n_out:,} of the {n_not:,} positions where maskable is False {label} (padding, "
             "[CLS], [SEP], [UNK] and the like): only tokens where maskable is True may be chosen, and chosen must "
             f"be False everywhere else.\nHint: {_HINT_CHOOSE}"),
        ])
    changed = (inputs != ids) & ~chosen
    n_changed = int(changed.sum())
    if n_changed:
        unchosen = int((~chosen).sum())
        to_mask = int((inputs[changed] == case.mask_id).sum())
        where = tuple(int(i) for i in changed.nonzero()[0])
        # a random id (other than the token's own) at 10 % of the tokens not chosen, or of the maskable ones among them
        swap = 0.1 * (case.vocab_size - 1) / case.vocab_size
        unchosen_maskable = int((~chosen & maskable).sum())
        random_share = next(((share, what) for share, among, what in (
            (n_changed / unchosen, unchosen, "tokens that were not chosen"),
            (n_changed / max(unchosen_maskable, 1), unchosen_maskable if not (changed & ~maskable).any() else 0,
             "maskable tokens that were not chosen"))
            if among >= 1000 and _near(share, swap, among)), None)
        _fail_first([
            (bool((inputs[~chosen] == -100).all()),
             f"Your {name} put -100 at every position that is not chosen {label}: that is how labels are often "
             "made, but inputs is what the model reads, so every token that is not chosen stays as it was.\nHint: "
             "inputs starts as a copy of token_ids, token_ids.clone(); only the chosen tokens change."),
            (chosen.any() and bool((inputs[chosen] == case.mask_id).all()) and to_mask < n_changed,
             f"Your {name}'s chosen marks only the tokens that became mask_id {label}: {n_changed:,} tokens got a "
             "random id where chosen is False. The model predicts every selected token, the ones replaced by a "
             "random id and the ones left as they were too.\nHint: chosen is the whole selection, made before the "
             "80/10/10 split; return that one."),
            (random_share is not None and to_mask <= max(5, 3 * n_changed / case.vocab_size),
             f"Your {name} gave a random id to {_pct(random_share[0]) if random_share else ''} of the "
             f"{random_share[1] if random_share else ''} {label} "
             f"({n_changed:,} tokens): the random replacement's condition lacks chosen, so about 10 % of the tokens "
             "the model is not asked to predict get a random id too.\nHint: combine the condition with chosen: "
             "chosen & (0.8 <= r) & (r < 0.9) for a random id (and chosen & (r < 0.8) for mask_id)."),
            (to_mask * 2 >= n_changed,
             f"Your {name} changed {n_changed:,} of the {unchosen:,} tokens that were not chosen {label} "
             f"({to_mask:,} of them to mask_id): the 80/10/10 replacement applies to the chosen tokens only; "
             "every other token stays as it was.\nHint: combine each replacement's condition with chosen: "
             "chosen & (r < 0.8) for mask_id, chosen & (0.8 <= r) & (r < 0.9) for a random id."),
            (True,
             f"Your {name} changed {n_changed:,} of the {unchosen:,} tokens that were not chosen {label} (at {where} "
             f"token_ids holds {int(ids[where])}, your inputs {int(inputs[where])}): inputs must equal token_ids "
             "wherever chosen is False.\nHint: start from a copy, inputs = token_ids.clone(), and change only the "
             "chosen positions."),
        ])
    if not chosen.any():
        return
    values = inputs[chosen]
    counts = torch.bincount(values - values.min())
    common = int(counts.argmax()) + int(values.min())
    share = float(counts.max()) / values.numel()
    masked = float((values == case.mask_id).float().mean())
    wild = (values < 0) | (values >= case.vocab_size)
    _fail_first([
        (values.numel() >= 100 and common != case.mask_id and share >= 0.5 and masked < 0.3,
         f"Your {name} puts {common} where [MASK] goes {label}: {_pct(share)} of the chosen tokens became {common} "
         f"and {_pct(masked)} became mask_id={case.mask_id}. The [MASK] id is the argument mask_id (it depends on "
         "the vocabulary; 103 is only bert-base-uncased's).\nHint: use mask_id as given, never a number of your own."),
        (wild.any(),
         f"Your {name} gave {int(wild.sum())} chosen tokens ids outside 0 .. vocab_size - 1 = 0 .. "
         f"{case.vocab_size - 1} {label} (your ids run from {int(values.min())} to {int(values.max())}): they are "
         f"out of range, and the embedding would fail on them.\nHint: {_HINT_RANDOM}"),
    ])


def _check_share(name, fn, case: _Case, inputs, chosen):
    """Each maskable token is chosen with probability p."""
    maskable, p = case.maskable, case.p
    n = int(maskable.sum())
    share = float(chosen[maskable].float().mean())
    if _near(share, p, n):
        return
    said = (f"Your {name} is not right yet {case.label}: {_pct(share)} of the maskable tokens were chosen with "
            f"p={p:g}; each maskable token is chosen with probability p")
    _untouched_positions(said, case, chosen)
    _, shares = _split(case, inputs, chosen)
    per_row = maskable.sum(dim=1).double()  # (B,)
    among_all = float((p * per_row * per_row / maskable.shape[1]).sum() / per_row.sum())
    listed = [
        (p != 0.15 and _near(share, 0.15, n),
         "that is 15 % whatever p is: your code uses 0.15 where the argument p belongs.", "compare with p itself."),
        (_near(share, 1 - p, n),
         "that is 1 - p: a token is chosen where its random number is below p, torch.rand(...) < p (> p chooses "
         "1 - p of them).", _HINT_CHOOSE),
        (_near(share, among_all, n) and abs(among_all - p) > 0.02,
         f"that is about p times the share of each sequence's positions that are maskable ({_pct(among_all)} "
         "expected so): your count of chosen tokens is taken among all positions (padding, [CLS] and [SEP] "
         "included) and the ones that are not maskable are dropped afterwards.",
         "choose among the maskable tokens only: " + _HINT_CHOOSE),
        (_near(share, 0.8 * p, n) and shares[0] > 0.97,
         "that is about 0.8 p, and every one of them became mask_id: chosen marks only the tokens that became "
         "mask_id, but the model predicts the ones that got a random id or stayed as they were too.",
         "chosen is the whole selection, made before the 80/10/10 split; return that one."),
        (_near(share, 0.9 * p, n) and shares[2] < 0.03,
         "that is about 0.9 p, and none of them stayed as it was: chosen leaves out the selected tokens that keep "
         "their id, but the model must predict those too.",
         "chosen is the whole selection, made before the 80/10/10 split (not inputs != token_ids)."),
    ]
    _fail_first((fits, f"{said}: {what}\nHint: {hint}") for fits, what, hint in listed)
    found = _p_probe(name, fn, case)
    raise ExerciseError(f"{said}: {found}" if found else f"{said}.\nHint: {_HINT_CHOOSE}")


def _untouched_positions(said, case: _Case, chosen):
    """Raise if no token after (or before) some position is ever chosen, though many maskable ones lie there."""
    columns = chosen.any(dim=0).nonzero()[:, 0]  # (the positions where some token is chosen)
    if not len(columns):
        return
    last, first = int(columns.max()) + 1, int(columns.min())
    after, before = int(case.maskable[:, last:].sum()), int(case.maskable[:, :first].sum())
    share = float(chosen[case.maskable].float().mean())  # (what the learner's rate would choose there)
    if share * after >= 30:
        raise ExerciseError(
            f"{said}, and no token at position {last} or later is ever chosen, though {after:,} maskable tokens lie "
            f"there: your choice covers only the first {last} positions of each sequence (a length of your own "
            f"where the batch's, token_ids.shape[1] = {case.token_ids.shape[1]}, belongs?).\nHint: {_HINT_CHOOSE}")
    if share * before >= 30:
        raise ExerciseError(
            f"{said}, and no token before position {first} is ever chosen, though {before:,} maskable tokens lie "
            f"there: your choice leaves out the first {first} positions of each sequence.\nHint: {_HINT_CHOOSE}")


# ----------------------------------------------------------------------------------------------
# The 80/10/10 split of the chosen tokens


_SPLIT_MISTAKES = [
    ((1.0, 0.0, 0.0),
     "every chosen token became mask_id: none got a random id and none stayed as it was. BERT replaces 80 % of the "
     "chosen by mask_id, gives 10 % a random id and leaves 10 %, so the model cannot learn that only [MASK] "
     "positions matter."),
    ((0.9, 0.0, 0.1),
     "90 % became mask_id and none a random id: the random replacement is missing, or it puts mask_id too (a random "
     "id is torch.randint(vocab_size, ...), not mask_id)."),
    ((0.8, 0.0, 0.2),
     "none became a random id (80 % mask_id, 20 % as they were): the random ids never reach inputs. Either a result "
     "is not assigned (masked_fill and torch.where return a new tensor: inputs = torch.where(...)), or a later step "
     "writes mask_id over them: give each replacement its own range of one draw, r < 0.8 mask_id, 0.8 <= r < 0.9 a "
     "random id."),
    ((0.8, 0.2, 0.0),
     "none stayed as it was: 10 % of the chosen keep their id (and are predicted all the same), 10 % get a random id."),
    ((0.9, 0.1, 0.0),
     "none stayed as it was: 10 % of the chosen keep their id (and are predicted all the same); mask_id takes 80 %, "
     "not 90 %."),
    ((0.0, 0.0, 1.0),
     "none of the chosen tokens changed: inputs is token_ids as it was. masked_fill (without the underscore) and "
     "torch.where return a new tensor: assign the result, inputs = inputs.masked_fill(...)."),
    ((0.1, 0.1, 0.8),
     "only 10 % became mask_id and 80 % stayed as they were: the 80 % and the 10 % are swapped. 80 % mask_id, 10 % "
     "a random id, 10 % left."),
    ((0.1, 0.8, 0.1),
     "80 % got a random id and only 10 % mask_id: the 80 % and the 10 % are swapped. 80 % mask_id, 10 % a random "
     "id, 10 % left."),
    ((0.8, 0.02, 0.18),
     "only 2 % got a random id and 18 % stayed: of the 20 % not masked, half get a random id (Hugging Face draws "
     "bernoulli(0.5) there); a second draw below 0.1 picks only a tenth of those 20 %."),
    ((0.72, 0.1, 0.18),
     "72 % became mask_id, 10 % a random id and 18 % stayed: the random ids overwrite some of the mask_id tokens, "
     "because the two ranges overlap (two independent draws, one below 0.8 and the other below 0.1, or one draw "
     "compared with both). Split one number per token into ranges that do not overlap: "
     "r < 0.8 mask_id, 0.8 <= r < 0.9 a random id, the rest kept."),
    ((0.0, 0.9, 0.1),
     "none became mask_id and 90 % got a random id: the random ids are written over the mask_id tokens, because "
     "the random replacement's range includes the mask's (chosen & (r < 0.9) after chosen & (r < 0.8)). Give it "
     "a range of its own: 0.8 <= r < 0.9."),
]


def _check_split(name, fn, case: _Case, inputs, chosen):
    """Of the chosen tokens, 80 % mask_id, 10 % a random id, 10 % left as they were."""
    n, shares = _split(case, inputs, chosen)
    if n == 0:
        return
    told = f"Your {name} is not right yet {case.label}: "
    bert = _split_fits(shares, (0.8, 0.1, 0.1), n, case.vocab_size)
    # Each token's lot drawn on its own first; then, if the shares are off, the split at p=1 and in small batches.
    found = _fate_probe(case, inputs, chosen) or ("" if bert else _split_probe(name, fn, case, shares, n))
    if found:
        raise ExerciseError(told + found)
    if bert:
        return
    fits = [(_split_distance(shares, rule, n, case.vocab_size), what) for rule, what in _SPLIT_MISTAKES
            if _split_fits(shares, rule, n, case.vocab_size, slack=0.02)]  # the closest listed split, if any
    what = (f": {min(fits)[1]}" if fits
            else "; BERT's rule is 80 % mask_id, 10 % a random id and 10 % left as they were.")
    raise ExerciseError(f"{told}{_split_text(shares)}{what}\nHint: {_HINT_SPLIT}")


def _check_one_id(name, case: _Case, inputs, chosen):
    """The random ids are drawn one per position: not one id for them all."""
    _, _, swapped = _fates(case, inputs, chosen)
    drawn = inputs[swapped].unique()
    if int(swapped.sum()) >= 20 and drawn.numel() == 1:
        raise ExerciseError(
            f"Your {name} is not right yet {case.label}: of your {int(swapped.sum()):,} random replacements (chosen "
            f"tokens that became neither mask_id nor stayed as they were), every one is id {int(drawn)}: the random "
            "id is fixed (or drawn once for the whole batch).\nHint: draw one id per position: " + _HINT_RANDOM)


def _uniform_up_to(top: int, drawn, was, mask_id: int) -> bool:
    """Whether ``drawn`` (random ids, none mask_id nor the original ``was``) look uniform over 0 .. top."""
    ids = torch.arange(top + 1)
    allowed = ((ids[None, :] != was[:, None]) & (ids[None, :] != mask_id)).double()  # (N, top + 1)
    expected = (allowed / allowed.sum(dim=1, keepdim=True).clamp(min=1)).sum(dim=0)  # (top + 1,)
    counts = torch.bincount(drawn, minlength=top + 1)[:top + 1].double()
    keep = expected > 0
    dof = max(int(keep.sum()) - 1, 1)
    chi2 = float(((counts[keep] - expected[keep]) ** 2 / expected[keep]).sum())
    return chi2 <= dof + 12 * math.sqrt(2 * dof) + 20


def _top_follows_batch(results) -> bool:
    """Whether, in every batch with enough random replacements, the largest random id is the batch's largest id."""
    tops = []
    for case, inputs, chosen in results:
        _, _, swapped = _fates(case, inputs, chosen)
        if int(swapped.sum()) >= 200:
            tops.append(int(inputs[swapped].max()) == int(case.token_ids.max()))
    return len(tops) > 1 and all(tops)


def _check_random_ids(name, case: _Case, inputs, chosen, results=()):
    """The random ids: drawn uniformly over 0 .. vocab_size - 1 (what one can see of them: those that are
    neither mask_id nor the original token). ``results``: every batch's (case, inputs, chosen), to compare."""
    v, mask_id = case.vocab_size, case.mask_id
    _, _, swapped = _fates(case, inputs, chosen)
    drawn, was = inputs[swapped], case.token_ids[swapped]  # (N,), (N,)
    n = drawn.numel()
    if n < 20:
        return
    ids = torch.arange(v)
    counts = torch.bincount(drawn, minlength=v).double()  # (V,)
    # Given that a draw is neither mask_id nor the original, it is uniform over the other V - 2 ids.
    expected = ((ids[None, :] != was[:, None]).double().sum(dim=0) / (v - 2))  # (V,)
    expected[mask_id] = 0.0
    said = f"Your {name} is not right yet {case.label}: of your {n:,} random replacements"
    unique = drawn.unique()
    missing = [k for k in range(v) if k != mask_id and expected[k] >= 30 and counts[k] == 0]
    if missing:
        batch = set(case.token_ids.unique().tolist())
        spans = _spans(missing)
        many = len(missing) > 1
        top = int(unique.max()) if n else v - 1
        if many and set(missing) == set(range(top + 1, v)) - {mask_id} and _uniform_up_to(top, drawn, was, mask_id) \
                and top + 1 != mask_id and top == int(case.token_ids.max()) and _top_follows_batch(results):
            raise ExerciseError(
                f"{said}, none is above {top}, the largest id in this batch, though the vocabulary goes up to "
                f"{v - 1}; in every batch your random ids stop at the batch's largest id: the upper bound of "
                "torch.randint is token_ids.max() + 1 where vocab_size belongs (a batch need not use every id of "
                f"the vocabulary).\nHint: {_HINT_RANDOM}")
        if set(unique.tolist()) <= batch and set(missing).isdisjoint(batch):
            raise ExerciseError(
                f"{said}, every one is an id that occurs in the batch: id{'s' if many else ''} {spans} never "
                f"appear{'' if many else 's'}, though the vocabulary has {v} ids. The random ids come from the whole "
                f"vocabulary, not from the batch's tokens.\nHint: {_HINT_RANDOM}")
        top = int(unique.max()) if n else v - 1
        if len(missing) > 1 and set(missing) == set(range(top + 1, v)) - {mask_id}:
            raise ExerciseError(
                f"{said}, none is above {top}, though the vocabulary goes up to {v - 1}: the upper bound of "
                f"torch.randint is {top + 1}" + (", mask_id, where vocab_size belongs" if top + 1 == mask_id else
                                                ", a fixed number where vocab_size belongs")
                + f" (torch.randint(high, ...) draws 0 .. high - 1).\nHint: {_HINT_RANDOM}")
        if missing == [0]:
            raise ExerciseError(
                f"{said}, none is id 0, the first id (about {expected[0]:.0f} were expected): torch.randint(1, "
                "vocab_size) starts at 1, but id 0 (a special token here) is in the vocabulary too and may be drawn, "
                f"as BERT does.\nHint: {_HINT_RANDOM}")
        if missing == [v - 1]:
            raise ExerciseError(
                f"{said}, none is vocab_size - 1 = {v - 1}, the last id (about {expected[v - 1]:.0f} were "
                "expected): torch.randint(low, high) never draws high itself, so torch.randint(vocab_size - 1, ...) "
                f"stops one short.\nHint: {_HINT_RANDOM}")
        raise ExerciseError(
            f"{said}, none is id {spans} (about {float(expected[missing].mean()):.0f} of each were expected): your "
            "random ids come from only part of the vocabulary.\nHint: " + _HINT_RANDOM)
    keep = expected > 0
    chi2 = float(((counts[keep] - expected[keep]) ** 2 / expected[keep]).sum())
    dof = int(keep.sum()) - 1
    if chi2 > dof + 12 * math.sqrt(2 * dof) + 20:
        ends = [k for k in (0, v - 1) if k != mask_id and expected[k] >= 50]
        if len(ends) == 2 and all(0.3 < float(counts[k] / expected[k]) < 0.8 for k in ends):
            rest = [k for k in range(1, v - 1) if expected[k] > 0]
            if all(float(counts[k] / expected[k]) > 0.9 for k in rest):
                raise ExerciseError(
                    f"{said}, the first and the last id, 0 and {v - 1}, come about half as often as the others ("
                    f"{int(counts[0])} and {int(counts[v - 1])} times, about {float(expected[0]):.0f} and "
                    f"{float(expected[v - 1]):.0f} expected): that is what rounding a uniform number gives, "
                    "(torch.rand(...) * (vocab_size - 1)).round(): the two ends get half a step each. Every id must "
                    f"be equally likely.\nHint: {_HINT_RANDOM}")
        worst = int(((counts - expected).abs() / expected.clamp(min=1).sqrt() * keep).argmax())
        raise ExerciseError(
            f"{said}, some ids come far more often than others: id {worst} {int(counts[worst])} times where about "
            f"{float(expected[worst]):.0f} were expected. Every id of the vocabulary is equally likely, and each "
            "position draws its own.\nHint: " + _HINT_RANDOM)


# ----------------------------------------------------------------------------------------------
# The generator


def _check_generator(name, fn, case: _Case, inputs, chosen):
    """The same seed gives the same result whatever torch's global state; other seeds other choices."""
    again_inputs, again_chosen = _call(name, fn, case, global_seed=_GLOBAL_SEED + 1)
    told = (f"Your {name} gave different results {case.label} in two calls with generators seeded alike "
            f"(torch.Generator().manual_seed({case.seed}) both times; torch's global random state was reseeded "
            "differently in between)")
    if not torch.equal(chosen, again_chosen):
        _, third = _call(name, fn, case)  # torch's global state seeded as in the first call
        if not torch.equal(chosen, third):  # not torch's global state either: numpy's or Python's random
            raise ExerciseError(
                f"{told}: they chose different positions, and a third call with torch's global random state seeded "
                "as in the first one chose others again, so the choice draws from a random source that neither "
                "seed sets (numpy.random, Python's random module, or a generator seeded by generator.seed()), not "
                "from `generator`.\nHint: "
                "draw with torch and pass the generator: torch.rand(token_ids.shape, generator=generator) < p; "
                "pretrain seeds it so that a run can be repeated.")
        raise ExerciseError(
            f"{told}: they chose different positions, so the choice draws from torch's global random state, not "
            "from `generator`.\nHint: pass the generator to every draw: torch.rand(token_ids.shape, "
            "generator=generator) (torch.rand_like takes no generator); pretrain seeds it so that a run can be "
            "repeated.")
    if not torch.equal(inputs, again_inputs):
        raise ExerciseError(
            f"{told}: they chose the same positions but replaced them differently, so the 80/10/10 split or the "
            "random ids draw from torch's global random state, not from `generator`.\nHint: pass the generator to "
            "every draw: torch.rand(token_ids.shape, generator=generator) for the split and torch.randint("
            "vocab_size, token_ids.shape, generator=generator) for the random ids.")
    # A generator seeded alike but drawn from first: where it stands, not its seed, must decide. (A copy made
    # from generator.initial_seed() fails here as it does in the grader's process, where the copy it is given has
    # another initial seed.)
    moved = _gen(case.seed)
    torch.rand(1000, generator=moved)
    _, moved_chosen = _call(name, fn, case, generator=moved)
    if torch.equal(chosen, moved_chosen):
        picked = chosen[case.maskable]
        found = _batch_draw_probe(name, fn, case) if not picked.any() or picked.all() else ""
        if found:
            raise ExerciseError(f"Your {name} is not right yet {case.label}: {found}")
        raise ExerciseError(
            f"Your {name} chose exactly the same positions {case.label} with two generators seeded alike "
            f"({case.seed}), one of them drawn from before the call: the choice does not come from the generator "
            "it is given, as it stands (a seed of your own inside, torch.manual_seed or generator.manual_seed(...), "
            "a copy made from generator.initial_seed(), or no random draw at all), so the generator does not move "
            "on from call to call and every batch of a training run would hide the same positions.\nHint: draw "
            "from `generator` as given, without seeding or copying it: torch.rand(token_ids.shape, "
            "generator=generator).")
    _, other_chosen = _call(name, fn, case, seed=case.seed + 1000)
    if torch.equal(chosen, other_chosen):
        picked = chosen[case.maskable]
        found = _batch_draw_probe(name, fn, case) if not picked.any() or picked.all() else ""
        if found:
            raise ExerciseError(f"Your {name} is not right yet {case.label}: {found}")
        raise ExerciseError(
            f"Your {name} chose exactly the same positions {case.label} with two generators seeded differently "
            f"({case.seed} and {case.seed + 1000}): the choice does not come from the generator it is given (a seed of "
            "your own inside, torch.manual_seed or generator.manual_seed(...), or no random draw at all), so every "
            "batch of a training run would hide the same positions.\nHint: draw from `generator` as given, without "
            "seeding it: torch.rand(token_ids.shape, generator=generator).")


# ----------------------------------------------------------------------------------------------
# The checker


def _check_count(name, case: _Case, inputs, chosen):
    """Chosen only where maskable (and nothing else changed), none at p=0, every maskable token at p=1."""
    _check_places(name, case, inputs, chosen)
    n_maskable, n_chosen = int(case.maskable.sum()), int(chosen.sum())
    if case.p == 0 and n_chosen:
        raise ExerciseError(
            f"Your {name} chose {n_chosen} tokens {case.label}: with p=0 no token is chosen (not even one per "
            f"sequence).\nHint: {_HINT_CHOOSE}")
    if case.p == 1 and n_chosen != n_maskable:
        raise ExerciseError(
            f"Your {name} chose {n_chosen:,} of the {n_maskable:,} maskable tokens {case.label}: with p=1 every "
            f"maskable token is chosen.\nHint: {_HINT_CHOOSE}")


def _check_default_p(name, case: _Case, inputs, chosen, label, why):
    """Called with p left at its default: chosen only where maskable, and 15 % of the maskable tokens."""
    _check_places(name, case, inputs, chosen, label)
    share = float(chosen[case.maskable].float().mean())
    if not _near(share, 0.15, int(case.maskable.sum())):
        raise ExerciseError(f"Your {name} chose {_pct(share)} of the maskable tokens {label}; p's default is 0.15, "
                            + why)


@_checker("mask_tokens")
def check_mask_tokens(fn):
    """Check ``mask_tokens(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15) -> (inputs, chosen)``."""
    name = exercise("mask_tokens").name
    cases = _cases()
    results = []
    # Which tokens are chosen, in every batch first (a wrong choice can look like a wrong split).
    for number, case in enumerate(cases):
        inputs, chosen = _call_case(name, fn, case)
        if number == 0:
            _check_generator(name, fn, case, inputs, chosen)
        _check_count(name, case, inputs, chosen)
        found = _dependence_probe(case, chosen)
        if found:
            raise ExerciseError(f"Your {name} is not right yet {case.label}: {found}")
        _check_share(name, fn, case, inputs, chosen)
        results.append((case, inputs, chosen))
    # Then what becomes of the chosen ones, and the random ids (the batches with the most of them first).
    for case, inputs, chosen in results:
        _check_one_id(name, case, inputs, chosen)
        _check_split(name, fn, case, inputs, chosen)
    for case, inputs, chosen in sorted(results, key=lambda r: -int(r[2].sum())):
        _check_random_ids(name, case, inputs, chosen, results)

    # As pretrain calls it: the generator fifth, without its name, and p at its default.
    case = cases[0]
    label = (f"{case.label.rsplit(', p=', 1)[0]}, called as pretrain calls it, mask_tokens(token_ids, maskable, "
             "mask_id, vocab_size, generator): the generator fifth, without its name, and p left at its default")
    try:
        inputs, chosen = _call(name, fn, case, label=label, seed=21, form="pretrain")
    except ExerciseError as exc:
        if exc.__cause__ is None:  # the checker's own verdict on what came back: it stands
            raise
        raise ExerciseError(
            f"{exc}\nKeep the signature's order, {_SIGNATURE}: pretrain passes the generator fifth, without its name."
        ) from exc.__cause__
    _check_default_p(name, case, inputs, chosen, label,
                     f"BERT's 15 %.\nHint: keep the signature the exercise gives: {_SIGNATURE}.")

    # generator=None: torch's global generator.
    label = (f"{case.label.rsplit(', p=', 1)[0]}, called without a generator, mask_tokens(token_ids, maskable, "
             "mask_id, vocab_size) (p at its default)")
    inputs, chosen = _call(name, fn, case, label=label, form="global")
    _check_default_p(name, case, inputs, chosen, label,
                     f"whether a generator is given or not.\nHint: {_HINT_CHOOSE}")
    _, again = _call(name, fn, case, label=label, form="global", global_seed=_GLOBAL_SEED + 1)
    if torch.equal(chosen, again):
        raise ExerciseError(
            f"Your {name} chose exactly the same positions in two calls {label}, with torch's global random state "
            "seeded differently: without a generator it must draw from torch's global random state, and yours "
            "does not (a torch.Generator() of its own starts from the same seed every time).\nHint: pass "
            "generator on as it is: torch.rand(token_ids.shape, generator=None) draws from the global state.")

    # Tiny batches: nothing maskable, p=0, p=1, one token.
    for case in _tiny_cases():
        _check_count(name, case, *_call(name, fn, case))

    # A small vocabulary, where the random ids' spread over every id shows.
    # (No split here: a random id that never equals the original moves a share by 0.1 / V, a lot when V is 6.)
    case = _small_vocabulary_case()
    inputs, chosen = _call(name, fn, case)
    _check_count(name, case, inputs, chosen)
    _check_random_ids(name, case, inputs, chosen)


def _small_vocabulary_case() -> _Case:
    g = _gen(43)
    ids = torch.tensor([0, 1, 3, 4, 5])[torch.randint(5, (100, 250), generator=g)]  # (100, 250): every id but 2
    return _Case("for a batch (100, 250) of a vocabulary of 6 ids, mask_id=2, vocab_size=6, every token maskable, "
                 "p=1", ids, torch.ones(100, 250, dtype=torch.bool), 2, 6, 1.0, 16, (2,))


def _call_case(name, fn, case: _Case):
    """``_call`` on a big batch; an empty torch.randint range that starts after mask_id is explained."""
    try:
        return _call(name, fn, case)
    except ExerciseError as exc:
        cause = exc.__cause__
        found = re.search(r"expects 'from' to be less than 'to', but got from=(-?\d+) >= to=(-?\d+)", str(cause))
        if not (isinstance(cause, RuntimeError) and found and int(found[1]) == case.mask_id + 1
                and int(found[2]) == case.vocab_size):
            raise
        raise ExerciseError(
            f"Your {name} raised RuntimeError {case.label}: {cause}\nHint: that is torch.randint(mask_id + 1, "
            f"vocab_size) = torch.randint({case.mask_id + 1}, {case.vocab_size}): here mask_id is the last id, so "
            "nothing is left above it. The random ids come from the whole vocabulary, the special tokens "
            "included (as BERT draws them): torch.randint(vocab_size, token_ids.shape, generator=generator)."
        ) from cause
