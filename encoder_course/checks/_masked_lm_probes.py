"""Helpers of the ``mask_tokens`` checker (``masked_lm.py``): the case record, calling the learner's function
and checking what it gives back, the shares and their binomial bounds (the 80/10/10 split included), and
the probes that vary one thing at a time (how the choice follows p, whether tokens are chosen on their
own, whether the split depends on p or is drawn once per call, whether each chosen token's lot is drawn
on its own). Only ``masked_lm.py`` uses it.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch

from ._compare import probe
from ._modules import _call_inputs
from ._run import ExerciseError, _expect_tensor, _gen, _shape

_SDS = 6.0  # how many binomial standard deviations a measured share may stray
_SHARE_SLACK = 0.006  # rounding (a floor of p * n per sequence), on top of the deviations
_SPLIT_SLACK = 0.005  # a random draw that never equals mask_id or the original: at most 0.1 / V
_GLOBAL_SEED = 31_415  # torch's global generator, seeded by the checker (inside fork_rng)


@dataclass(frozen=True)
class _Case:
    label: str
    token_ids: torch.Tensor  # (B, L) long
    maskable: torch.Tensor  # (B, L) bool
    mask_id: int
    vocab_size: int
    p: float
    seed: int  # the generator's seed for this case
    specials: tuple[int, ...] = ()  # the special ids of this batch (padding, [CLS], [SEP], [UNK], [MASK])


# ----------------------------------------------------------------------------------------------
# Calling the learner's function, and what it must give back


def _call(name, fn, case: _Case, label=None, seed=None, p=None, global_seed=_GLOBAL_SEED, form="keywords",
          generator=None):
    """Call ``fn`` on the case and check what it returns; give ``(inputs, chosen)``.

    ``generator``: the generator to pass (one seeded with ``seed``, or the case's seed, when None).

    ``form``: "keywords" (generator= and p= by name), "pretrain" (as ``pretrain`` calls it: the generator
    fifth, p at its default) or "global" (no generator, p at its default).
    """
    label = label or case.label
    given = {"token_ids": case.token_ids, "maskable": case.maskable, "mask_id": case.mask_id,
             "vocab_size": case.vocab_size}
    if generator is None:
        generator = _gen(case.seed if seed is None else seed)
    if form == "keywords":
        fn = functools.partial(fn, generator=generator, p=case.p if p is None else p)
    elif form == "pretrain":
        given["generator"] = generator
    torch.manual_seed(global_seed)
    return _pair(name, label, _call_inputs(name, fn, label, given, None), case)


def _pair(name, label, result, case: _Case):
    ids = case.token_ids
    if isinstance(result, torch.Tensor):
        raise ExerciseError(
            f"Your {name} returned a single tensor {label}; it should return two: (inputs, chosen).\n"
            "Hint: end with `return inputs, chosen`: the batch with the replacements, and the bool mask of the "
            "positions the model must predict."
        )
    if not isinstance(result, (tuple, list)):
        _expect_tensor(name, result, label, "the pair (inputs, chosen)")  # (raises: result is no tensor)
    if len(result) != 2:
        raise ExerciseError(
            f"Your {name} returned {len(result)} values {label}; it should return two: (inputs, chosen).\n"
            "Hint: the labels are token_ids themselves: return only inputs and chosen."
        )
    for position, what in ((0, "first value (inputs)"), (1, "second value (chosen)")):
        if result[position] is None:
            raise ExerciseError(f"Your {name} returned None as its {what} {label}.\nHint: return both tensors, "
                                "`return inputs, chosen`.")
    inputs = _expect_tensor(name, result[0], label, "inputs as its first value")
    chosen = _expect_tensor(name, result[1], label, "chosen as its second value")
    if inputs.dtype == torch.bool and chosen.dtype != torch.bool:
        raise ExerciseError(f"Your {name} returned (chosen, inputs) {label}; the order is (inputs, chosen).")
    for what, got, hint in (
            ("inputs", inputs, "inputs is the whole batch, token_ids with the chosen tokens replaced: start from a "
                               "copy, token_ids.clone(), and assign to it, or use torch.where(...) or masked_fill(...) "
                               "(indexing with a bool mask, token_ids[chosen], gives only the selected tokens, 1-D)."),
            ("chosen", chosen, "chosen marks every position, True where the model must predict: a bool (B, L) like "
                               "maskable (indexing with a bool mask gives only the selected entries, 1-D).")):
        if got.shape != ids.shape:
            raise ExerciseError(f"Your {name} returned {what} of shape {_shape(got)} {label}, but it should be (B, L) "
                                f"= {_shape(ids)}, like token_ids.\nHint: {hint}")
    _fail_first([
        (inputs.dtype != torch.long,
         f"Your {name} returned inputs with dtype {inputs.dtype} {label}, but token ids are torch.int64 (long), like "
         "token_ids.\nHint: keep every step in long: torch.randint gives long ids, torch.where(cond, random_ids, "
         "inputs) with both long stays long; no .float() and no float fill values."),
        (chosen.dtype == torch.long and bool((chosen == -100).any()),
         f"Your {name} returned a second value holding token ids and -100 {label}: those are labels (what Hugging "
         "Face's collator returns). Return chosen, the bool mask of the positions the model must predict: the labels "
         "are token_ids themselves, and the loss takes chosen as its mask."),
        (chosen.dtype != torch.bool,
         f"Your {name} returned chosen with dtype {chosen.dtype} {label}; it should be bool (True where the model "
         "must predict), like maskable: the loss uses it as its mask.\nHint: a comparison (r < p) and & of bool "
         "tensors give bool; no .long(), .int() or .float()."),
    ])
    return inputs, chosen


def _fail_first(listed) -> None:
    """Raise the message of the first ``(fits, message)`` of ``listed`` that fits (each computed beforehand)."""
    for fits, message in listed:
        if fits:
            raise ExerciseError(message)


# ----------------------------------------------------------------------------------------------
# Shares and their bounds


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _near(share: float, q: float, n: int, slack: float = _SHARE_SLACK) -> bool:
    """``share`` (of ``n`` draws) is within 6 binomial standard deviations of ``q``, plus ``slack``."""
    if n == 0:
        return True
    return abs(share - q) <= _SDS * math.sqrt(max(q * (1 - q), 0.0) / n) + slack


def _above(share: float, q: float, n: int, slack: float) -> bool:
    """``share`` is more than 6 standard deviations (plus ``slack``) above ``q``."""
    return n > 0 and share > q + _SDS * math.sqrt(max(q * (1 - q), 0.0) / n) + slack


def _fates(case: _Case, inputs, chosen):
    """Of the chosen positions: which became mask_id, which kept their id, which got another (a random id)."""
    masked = chosen & (inputs == case.mask_id)
    kept = chosen & (inputs == case.token_ids) & ~masked
    return masked, kept, chosen & ~masked & ~kept


def _observed(rule, v: int):
    """The shares one can see of a split ``rule`` (mask, random, kept): a random id may equal mask_id or the
    original (never mask_id itself, in these batches)."""
    m, r, k = rule
    return m + r / v, r * (v - 2) / v, k + r / v


def _split(case: _Case, inputs, chosen):
    n = int(chosen.sum())
    masked, kept, swapped = _fates(case, inputs, chosen)
    return n, tuple(int(t.sum()) / max(n, 1) for t in (masked, swapped, kept))


def _split_fits(shares, rule, n, v, slack=_SPLIT_SLACK) -> bool:
    return all(_near(s, q, n, slack) for s, q in zip(shares, _observed(rule, v)))


def _split_distance(shares, rule, n, v) -> float:
    """How many standard deviations (the largest of the three) the shares are from ``rule``'s."""
    return max(abs(s - q) / math.sqrt(max(q * (1 - q), 0.25 / n) / n) for s, q in zip(shares, _observed(rule, v)))


def _split_text(shares) -> str:
    m, r, k = shares
    return (f"of the chosen tokens, {_pct(m)} became mask_id, {_pct(r)} a random id and {_pct(k)} stayed as they "
            "were")


# ----------------------------------------------------------------------------------------------
# Probes: how the choice depends on p, on the sequence and on the position


def _pairs(x, valid, dim):
    """Neighbouring pairs along ``dim`` (positions of a sequence, or sequences at one position) that are both
    ``valid``: how many, and the share of them where ``x`` is True at both."""
    a, b = (x.narrow(dim, 0, x.shape[dim] - 1), x.narrow(dim, 1, x.shape[dim] - 1))
    va, vb = valid.narrow(dim, 0, x.shape[dim] - 1), valid.narrow(dim, 1, x.shape[dim] - 1)
    both = va & vb
    n = int(both.sum())
    return n, (float((a & b & both).sum()) / n if n else 0.0)


def _clustered(measured: dict, chance: float, slack: float) -> dict:
    """Of ``measured`` ({dim: (pairs, share of them where both are alike)}), the dims whose share is more than 6
    standard deviations (plus ``slack``) above ``chance``, each with how many standard deviations it is."""
    return {dim: (both - chance) / math.sqrt(chance * (1 - chance) / n)
            for dim, (n, both) in measured.items() if _above(both, chance, n, slack)}


@probe
def _dependence_probe(case: _Case, chosen) -> str:
    """Are the tokens chosen on their own? Neighbouring positions of one sequence, and neighbouring sequences
    at one position, are both chosen with probability share squared when they are ("" when so)."""
    maskable = case.maskable
    n_tokens = int(maskable.sum())
    share = float(chosen[maskable].float().mean())
    if not 0 < share < 1:
        return ""
    alone = share * share
    measured = {dim: _pairs(chosen, maskable, dim) for dim in (1, 0)}  # along a sequence; across sequences
    flagged = _clustered(measured, alone, 0.01)
    if not flagged:
        return ""
    dim = max(flagged, key=flagged.get)  # the stronger of the two (one pattern shared by all makes both look odd)
    both = measured[dim][1]
    counts, length = chosen.sum(dim=1), chosen.shape[1]  # (B,): chosen per sequence; L, padding included
    fixed = next((k for k in {math.floor(case.p * length), round(case.p * length), math.ceil(case.p * length)}
                  if k and torch.equal(counts, maskable.sum(dim=1).clamp(max=k))), None)
    if dim == 1 and fixed is not None:
        return (f"every sequence has {fixed} tokens chosen (p x L, L = {length} with the padding), or all its "
                f"maskable ones when it has fewer: {_pct(share)} of the {n_tokens:,} maskable tokens in all, and "
                "nearly every token of a short sequence. Each maskable token is chosen on its own with probability "
                "p: one random number per token, torch.rand(token_ids.shape, generator=generator) < p.")
    if dim == 1:
        rows = chosen.any(dim=1) & maskable.any(dim=1)
        if bool((chosen[rows] == maskable[rows]).all()):  # whole sequences
            return (f"whole sequences are chosen or not: {int(rows.sum())} of the {int(maskable.any(dim=1).sum())} "
                    f"sequences have every maskable token chosen and the others none ({_pct(share)} of the "
                    f"{n_tokens:,} maskable tokens in all). One random number is drawn per sequence (shape (B, 1)): "
                    "draw one per token, torch.rand(token_ids.shape, generator=generator), (B, L).")
        return (f"neighbouring tokens are chosen together: two neighbouring maskable tokens are both chosen "
                f"{_pct(both)} of the time, {_pct(alone)} if each were chosen on its own ({_pct(share)} squared). "
                "BERT chooses every token on its own (choosing spans is another scheme): one random number per "
                "token, compared with p.")
    return (f"the same positions are chosen in every sequence: where two neighbouring sequences both have a "
            f"maskable token at one position, both are chosen {_pct(both)} of the time, where tokens chosen on "
            f"their own would be both chosen {_pct(alone)} of the time ({_pct(share)} squared). The random "
            "numbers are drawn once per position and shared by the sequences (shape (L,) or (1, L)): draw one "
            "per token, torch.rand(token_ids.shape, generator=generator), (B, L).")


@probe
def _p_probe(name, fn, case: _Case) -> str:
    """The share of chosen tokens for p = 0.1, 0.2, 0.4 and 0.8 on the case's batch: how it follows p."""
    ps = (0.1, 0.2, 0.4, 0.8)
    n = int(case.maskable.sum())
    shares = []
    for i, p in enumerate(ps):
        label = f"{case.label.rsplit(', p=', 1)[0]}, p={p:g}"
        inputs, chosen = _call(name, fn, case, label=label, seed=100 + i, p=p)
        if (chosen & ~case.maskable).any():
            return ""
        shares.append(float(chosen[case.maskable].float().mean()))
    listed = ", ".join(_pct(s) for s in shares)
    told = f"with p = 0.1, 0.2, 0.4 and 0.8 your {name} chooses {listed} of the maskable tokens"
    mean = sum(shares) / len(shares)
    if all(_near(s, mean, n, slack=0.002) for s in shares):  # (a share that follows p, however little, is not this)
        return (f"{told}: the share does not change with p, so p is not used (a number of your own takes its "
                "place). Compare each token's random number with the argument p.")
    below = [(s, p) for s, p in zip(shares, ps) if s < 0.9]  # a share capped at 1 says nothing of the factor
    ratio = sum(s for s, _ in below) / sum(p for _, p in below) if below else 1.0
    if all(_near(s, min(ratio * p, 1.0), n) for s, p in zip(shares, ps)):
        if abs(ratio - 0.01) < 0.003:
            return (f"{told}: about p / 100 each time, as if p were a percentage (a random number in 0 .. 100 "
                    "compared with p). p is a probability, 0.15 for 15 %: torch.rand(...) < p, with no factor.")
        return (f"{told}: about {ratio:.2g} times p each time. Each maskable token is chosen with probability p "
                "itself: torch.rand(...) < p, with no factor.")
    if all(_near(s, p * p, n) for s, p in zip(shares, ps)):
        return (f"{told}: about p squared each time, as if a token were chosen only when two random numbers both "
                "fall below p. Draw one number per token and compare it with p once.")
    return f"{told}; it should be p itself each time (10 %, 20 %, 40 % and 80 %)."


@probe
def _batch_draw_probe(name, fn, case: _Case) -> str:
    """Twenty calls at p=0.5 with generators seeded in turn: does each choose every maskable token or none?"""
    label = f"{case.label.rsplit(', p=', 1)[0]}, p=0.5"
    outcomes = set()
    for seed in range(300, 320):
        _, chosen = _call(name, fn, case, label=label, seed=seed, p=0.5)
        picked = chosen[case.maskable]
        if picked.any() and not picked.all():
            return ""
        outcomes.add(bool(picked.any()))
    if len(outcomes) < 2:
        return ""
    return ("in 20 calls at p=0.5 with generators seeded in turn, each call chose either every maskable token or "
            "none: one random number decides for the whole batch (torch.rand(1) < p, or an if on one draw). Each "
            "maskable token is chosen on its own: one number per token, torch.rand(token_ids.shape, "
            "generator=generator) < p.")


# ----------------------------------------------------------------------------------------------
# Probes of the 80/10/10 split of the chosen tokens


@probe
def _split_probe(name, fn, case: _Case, shares, n_chosen) -> str:
    """The split at p=1 on the same batch, and in small batches of their own: does it depend on p, or on one
    draw for the whole batch? ("" when neither)."""
    v = case.vocab_size
    if case.p < 1:
        label = f"{case.label.rsplit(', p=', 1)[0]}, p=1"
        inputs, chosen = _call(name, fn, case, label=label, seed=case.seed + 50, p=1.0)
        n, at_one = _split(case, inputs, chosen)
        _, _, swapped = _fates(case, inputs, chosen)
        if n and _split_fits(at_one, (0.8, 0.1, 0.1), n, v) and inputs[swapped].unique().numel() > 1:
            return (f"the split depends on p: at p=1 {_split_text(at_one)} (BERT's 80/10/10), but at p={case.p:g} "
                    f"{_split_text(shares)}. It reuses the random numbers that chose the tokens (all of them below "
                    "p, so below 0.8 when p is small): draw new ones for the split, r = torch.rand(token_ids.shape, "
                    "generator=generator), or compare the same number with 0.8 p and 0.9 p.")
    if _pure(shares, n_chosen, v) is None:
        return ""
    seen = set()
    g = _gen(77)
    ids = torch.randint(5, 30, (8, 32), generator=g)
    small = _Case("for a batch (8, 32) with every token maskable, p=0.5", ids, torch.ones(8, 32, dtype=torch.bool),
                  4, 30, 0.5, 0)
    # Until two fates are seen (one such answer in 10,000 gets past 40 calls).
    for calls, seed in enumerate(range(200, 240), start=1):
        inputs, chosen = _call(name, fn, small, seed=seed)
        count, split = _split(small, inputs, chosen)
        fate = _pure(split, count, small.vocab_size) if count >= 60 else None
        if fate:
            seen.add(fate)
        if len(seen) > 1:
            told = " and in others ".join(f"every one {fate}" for fate in sorted(seen))
            return (f"one random number decides the fate of every chosen token of a call: in {calls} calls with "
                    f"small batches of their own, the chosen tokens of each call all shared one fate, in some {told}. "
                    "Each chosen token needs its own draw: r = torch.rand(token_ids.shape, generator=generator), "
                    "(B, L), not one number.")
    return ""


def _ordered_fates(chosen, masked, kept) -> str:
    """Does a chosen token's fate follow its rank among the chosen ones, in its sequence or in the whole batch
    (the first 80 % mask_id, ...)? Drawn on its own, the fate does not depend on the rank ("" when it does not)."""
    order = torch.cumsum(chosen.long(), dim=1) - 1  # (B, L): each chosen token's index in its sequence's selection
    per_row = chosen.sum(dim=1, keepdim=True).clamp(min=1)  # (B, 1)
    ranks = {"in each sequence": ((order + 0.5) / per_row)[chosen]}  # (N,), in 0 .. 1
    n = int(chosen.sum())
    ranks["in the whole batch, row after row"] = (torch.arange(n, dtype=torch.float64) + 0.5) / n
    m, k = masked[chosen], kept[chosen]  # (N,), (N,)
    n_m, n_k = int(m.sum()), int(k.sum())
    if n_m < 30 or n_k < 30:
        return ""
    for where, rank in ranks.items():
        rank = rank.double()
        gap = float(rank[k].mean() - rank[m].mean())
        z = gap / math.sqrt((1 / 12) * (1 / n_m + 1 / n_k))  # a uniform rank's variance is 1/12
        if abs(z) > 8 and abs(gap) > 0.2:
            early, late = rank < 0.5, rank >= 0.9
            return (f"the fate follows the order of the chosen tokens {where}: of the chosen tokens in the first "
                    f"half of that order, {_pct(float(m[early].double().mean()))} became mask_id, of those in its "
                    f"last tenth {_pct(float(m[late].double().mean()))} (and {_pct(float(k[late].double().mean()))} "
                    "stayed as they were). The first 80 % of the chosen are not the ones to mask: each chosen "
                    "token's fate is drawn on its own, r = torch.rand(token_ids.shape, generator=generator), "
                    "mask_id where r < 0.8.")
    return ""


_PURE = {"became mask_id": (1.0, 0.0, 0.0), "got a random id": (0.0, 1.0, 0.0), "kept its id": (0.0, 0.0, 1.0)}


def _pure(shares, n, v):
    """The one fate every chosen token shared (as far as one can see: a random id may equal mask_id or the
    original), or None."""
    return next((fate for fate, rule in _PURE.items() if _split_fits(shares, rule, n, v, slack=0.02)), None)


@probe
def _fate_probe(case: _Case, inputs, chosen) -> str:
    """Does each chosen token get its lot on its own? Two chosen tokens side by side in a sequence (or at one
    position of neighbouring sequences) share their fate by chance only ("" when so)."""
    masked, kept, swapped = _fates(case, inputs, chosen)
    _, shares = _split(case, inputs, chosen)  # (chosen is never empty here)
    chance = sum(s * s for s in shares)
    if chance > 0.99:
        return ""
    ordered = _ordered_fates(chosen, masked, kept)
    if ordered:
        return ordered
    measured = {}
    for dim in (0, 1):  # across sequences, along a sequence (on a tie, the first)
        alike = [_pairs(fate, chosen, dim) for fate in (masked, swapped, kept)]
        measured[dim] = (alike[0][0], sum(both for _, both in alike))
    found = _clustered(measured, chance, 0.03)
    if not found:
        return ""
    dim = max(found, key=found.get)  # the stronger of the two
    same = measured[dim][1]
    where, shape = {0: ("two chosen tokens at one position of neighbouring sequences", "(L,), one per position"),
                    1: ("two chosen tokens next to each other in a sequence", "(B, 1), one per sequence")}[dim]
    return (f"{where} share their fate (both mask_id, both a random id or both kept) {_pct(same)} of the time, "
            f"{_pct(chance)} if each token's were drawn on its own: the numbers that split the chosen 80/10/10 are "
            f"drawn with shape {shape}. Draw one per token, r = torch.rand(token_ids.shape, generator=generator).")
