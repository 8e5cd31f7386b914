"""The checker of ``mask_tokens`` (notebook 12): every wrong answer named, every right one passing."""

from __future__ import annotations

import torch

from encoder_course import checks
from encoder_course.measure import masked_lm

from .catalogue import Catalogue

C_MT = checks.check_mask_tokens

CATALOGUE = Catalogue(C_MT)
wrong, right = CATALOGUE.add_wrong, CATALOGUE.add_right


def choose(token_ids, maskable, generator, p):
    """The right choice: each maskable token with probability p."""
    return (torch.rand(token_ids.shape, generator=generator) < p) & maskable


def replace(token_ids, chosen, mask_id, vocab_size, generator, rule=(0.8, 0.1)):
    """The chosen tokens split by one draw: below rule[0] mask_id, the next rule[1] a random id, the rest kept."""
    r = torch.rand(token_ids.shape, generator=generator)
    random_ids = torch.randint(vocab_size, token_ids.shape, generator=generator)
    inputs = token_ids.masked_fill(chosen & (r < rule[0]), mask_id)
    return torch.where(chosen & (r >= rule[0]) & (r < rule[0] + rule[1]), random_ids, inputs)


def with_random_ids(draw):
    """A mask_tokens whose random ids are ``draw(token_ids, vocab_size, generator)``, the rest right."""
    def mask_tokens(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
        chosen = choose(token_ids, maskable, generator, p)
        r = torch.rand(token_ids.shape, generator=generator)
        inputs = token_ids.masked_fill(chosen & (r < 0.8), mask_id)
        swap = chosen & (r >= 0.8) & (r < 0.9)
        return torch.where(swap, draw(token_ids, vocab_size, generator), inputs), chosen
    return mask_tokens


def with_choice(pick):
    """A mask_tokens whose chosen tokens are ``pick(token_ids, maskable, generator, p)``, the rest right."""
    def mask_tokens(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
        chosen = pick(token_ids, maskable, generator, p)
        return replace(token_ids, chosen, mask_id, vocab_size, generator), chosen
    return mask_tokens


def with_split(rule):
    """A mask_tokens whose chosen tokens are split ``rule`` = (mask_id share, random share), the rest right."""
    def mask_tokens(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
        chosen = choose(token_ids, maskable, generator, p)
        return replace(token_ids, chosen, mask_id, vocab_size, generator, rule), chosen
    return mask_tokens


# ----------------------------------------------------------------------------------------------
# Wrong answers, each to be named


wrong("mt-package", C_MT, "the package's own function, passed as the answer",
      "calls the course's own mask_tokens")(masked_lm.mask_tokens)


@wrong("mt-single-tensor", C_MT, "returns inputs only", "returned a single tensor")
def mt_single(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = choose(token_ids, maskable, generator, p)
    return replace(token_ids, chosen, mask_id, vocab_size, generator)


@wrong("mt-pair-swapped", C_MT, "returns (chosen, inputs)", "the order is (inputs, chosen)")
def mt_swapped(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = choose(token_ids, maskable, generator, p)
    return chosen, replace(token_ids, chosen, mask_id, vocab_size, generator)


@wrong("mt-labels", C_MT, "returns (inputs, labels) with -100 where not chosen, as Hugging Face's collator",
       "those are labels")
def mt_labels(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = choose(token_ids, maskable, generator, p)
    return replace(token_ids, chosen, mask_id, vocab_size, generator), token_ids.masked_fill(~chosen, -100)


@wrong("mt-chosen-long", C_MT, "chosen returned as 0/1 longs", "it should be bool")
def mt_chosen_long(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = choose(token_ids, maskable, generator, p)
    return replace(token_ids, chosen, mask_id, vocab_size, generator), chosen.long()


@wrong("mt-inputs-float", C_MT, "the random ids put in with torch.where on floats", "token ids are torch.int64")
def mt_inputs_float(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = choose(token_ids, maskable, generator, p)
    r = torch.rand(token_ids.shape, generator=generator)
    random_ids = torch.randint(vocab_size, token_ids.shape, generator=generator).float()
    inputs = torch.where(chosen & (r < 0.8), float(mask_id), token_ids.float())
    return torch.where(chosen & (r >= 0.8) & (r < 0.9), random_ids, inputs), chosen


@wrong("mt-selected-only", C_MT, "returns token_ids[chosen] with the replacements: only the selected tokens, 1-D",
       "gives only the selected tokens")
def mt_selected(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = choose(token_ids, maskable, generator, p)
    return replace(token_ids, chosen, mask_id, vocab_size, generator)[chosen], chosen


@wrong("mt-in-place", C_MT, "token_ids[...] = mask_id: the caller's batch changed",
       "changed its input `token_ids` in place")
def mt_in_place(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = choose(token_ids, maskable, generator, p)
    r = torch.rand(token_ids.shape, generator=generator)
    random_ids = torch.randint(vocab_size, token_ids.shape, generator=generator)
    token_ids[chosen & (r < 0.8)] = mask_id
    swap = chosen & (r >= 0.8) & (r < 0.9)
    token_ids[swap] = random_ids[swap]
    return token_ids, chosen


@wrong("mt-maskable-in-place", C_MT, "maskable &= ...: the caller's maskable changed", "changed its input `maskable`")
def mt_maskable_in_place(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    maskable &= torch.rand(token_ids.shape, generator=generator) < p
    return replace(token_ids, maskable, mask_id, vocab_size, generator), maskable


wrong("mt-global-rng", C_MT, "every draw from the global generator (generator unused)",
      "the choice draws from torch's global random state")(
    lambda token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15:
    (lambda chosen: (replace(token_ids, chosen, mask_id, vocab_size, None), chosen))(
        (torch.rand(token_ids.shape) < p) & maskable))
wrong("mt-rand-like", C_MT, "the choice from torch.rand_like (which takes no generator)",
      "the choice draws from torch's global random state")(
    with_choice(lambda ids, maskable, g, p: (torch.rand_like(ids, dtype=torch.float) < p) & maskable))
wrong("mt-randint-global", C_MT, "the random ids from torch.randint without the generator",
      "the random ids draw from torch's global random state")(
    with_random_ids(lambda ids, v, g: torch.randint(v, ids.shape)))
wrong("mt-own-generator", C_MT, "a generator of its own, torch.Generator().manual_seed(0), in place of the argument",
      "the choice does not come from the generator it is given")(
    with_choice(lambda ids, maskable, g, p: choose(ids, maskable, torch.Generator().manual_seed(0), p)))
wrong("mt-reseeds-generator", C_MT, "generator.manual_seed(0) on the caller's generator",
      "the choice does not come from the generator it is given")(
    with_choice(lambda ids, maskable, g, p: choose(ids, maskable, g.manual_seed(0), p)))
wrong("mt-maskable-ignored", C_MT, "chosen = rand < p: padding, [CLS] and [SEP] may be chosen",
      "positions where maskable is False")(
    with_choice(lambda ids, maskable, g, p: choose(ids, torch.ones_like(maskable), g, p)))
wrong("mt-maskable-inverted", C_MT, "& ~maskable", "chose tokens only where maskable is False")(
    with_choice(lambda ids, maskable, g, p: choose(ids, ~maskable, g, p)))
wrong("mt-maskable-from-ids", C_MT, "maskable worked out from the ids (token_ids > 4), the argument unused",
      "decides from the token ids which tokens may be chosen")(
    with_choice(lambda ids, maskable, g, p: choose(ids, ids > 4, g, p)))


@wrong("mt-chosen-inverted", C_MT, "returns ~chosen", "chosen is inverted")
def mt_chosen_inverted(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = choose(token_ids, maskable, generator, p)
    return replace(token_ids, chosen, mask_id, vocab_size, generator), ~chosen


@wrong("mt-minus-100", C_MT, "inputs set to -100 where not chosen, as labels are", "put -100 at every position")
def mt_minus_100(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = choose(token_ids, maskable, generator, p)
    return replace(token_ids, chosen, mask_id, vocab_size, generator).masked_fill(~chosen, -100), chosen


@wrong("mt-split-every-token", C_MT, "the 80/10/10 replacement applied to every maskable token, not to the chosen",
       "applies to the chosen tokens only")
def mt_split_all(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = choose(token_ids, maskable, generator, p)
    return replace(token_ids, maskable, mask_id, vocab_size, generator), chosen


@wrong("mt-chosen-is-masked", C_MT, "returns as chosen only the positions that became mask_id",
       "chosen marks only the tokens that became mask_id")
def mt_chosen_masked(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = choose(token_ids, maskable, generator, p)
    inputs = replace(token_ids, chosen, mask_id, vocab_size, generator)
    return inputs, inputs == mask_id


@wrong("mt-chosen-is-changed", C_MT, "chosen = inputs != token_ids: the kept ones left out",
       "chosen leaves out the selected tokens that keep their id")
def mt_chosen_changed(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = choose(token_ids, maskable, generator, p)
    inputs = replace(token_ids, chosen, mask_id, vocab_size, generator)
    return inputs, inputs != token_ids


@wrong("mt-only-mask-chosen", C_MT, "only 80 % of the chosen are masked and returned as chosen; no random, no kept",
       "that is about 0.8 p")
def mt_only_mask(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = choose(token_ids, maskable, generator, p) & (torch.rand(token_ids.shape, generator=generator) < 0.8)
    return token_ids.masked_fill(chosen, mask_id), chosen


@wrong("mt-mask-id-103", C_MT, "masked_fill(..., 103): bert-base-uncased's [MASK] id, not the argument",
       "puts 103 where [MASK] goes")
def mt_103(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    return with_split((0.8, 0.1))(token_ids, maskable, 103, vocab_size, generator, p)


@wrong("mt-mask-id-4", C_MT, "masked_fill(..., 4): the course vocabulary's [MASK] id, not the argument",
       "puts 4 where [MASK] goes")
def mt_4(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    return with_split((0.8, 0.1))(token_ids, maskable, 4, vocab_size, generator, p)


wrong("mt-random-past-the-end", C_MT, "random ids from torch.randint(1, vocab_size + 1)",
      "ids outside 0 .. vocab_size - 1")(
    with_random_ids(lambda ids, v, g: torch.randint(1, v + 1, ids.shape, generator=g)))
wrong("mt-p-fixed", C_MT, "compares with 0.15 whatever p is", "uses 0.15 where the argument p belongs")(
    with_choice(lambda ids, maskable, g, p: choose(ids, maskable, g, 0.15)))
wrong("mt-one-minus-p", C_MT, "torch.rand(...) > p", "that is 1 - p")(
    with_choice(lambda ids, maskable, g, p: (torch.rand(ids.shape, generator=g) > p) & maskable))


def count_among_all(token_ids, maskable, generator, p):
    """round(p * n) positions per sequence, n its maskable tokens, but picked among all positions."""
    chosen = torch.zeros_like(maskable)
    for row in range(token_ids.shape[0]):
        k = round(p * int(maskable[row].sum()))
        picked = torch.randperm(token_ids.shape[1], generator=generator)[:k]
        chosen[row, picked] = True
    return chosen & maskable


wrong("mt-count-among-all", C_MT, "round(p * n) per sequence picked among all positions, then & maskable",
      "p times the share of each sequence's positions that are maskable")(with_choice(count_among_all))
wrong("mt-mask-only", C_MT, "every chosen token becomes mask_id", "every chosen token became mask_id")(
    with_split((1.0, 0.0)))
wrong("mt-split-swapped", C_MT, "10 % mask_id, 10 % random, 80 % kept", "the 80 % and the 10 % are swapped")(
    with_split((0.1, 0.1)))


@wrong("mt-random-is-mask", C_MT, "the random 10 % get mask_id too", "90 % became mask_id and none a random id")
def mt_random_is_mask(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = choose(token_ids, maskable, generator, p)
    r = torch.rand(token_ids.shape, generator=generator)
    inputs = token_ids.masked_fill(chosen & (r < 0.8), mask_id)
    return inputs.masked_fill(chosen & (r >= 0.8) & (r < 0.9), mask_id), chosen


wrong("mt-no-kept", C_MT, "80 % mask_id, the other 20 % random ids", "none stayed as it was")(with_split((0.8, 0.2)))


@wrong("mt-random-discarded", C_MT, "torch.where for the random ids, its result not assigned",
       "the random ids never reach inputs")
def mt_random_discarded(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = choose(token_ids, maskable, generator, p)
    r = torch.rand(token_ids.shape, generator=generator)
    random_ids = torch.randint(vocab_size, token_ids.shape, generator=generator)
    inputs = token_ids.masked_fill(chosen & (r < 0.8), mask_id)
    torch.where(chosen & (r >= 0.8) & (r < 0.9), random_ids, inputs)
    return inputs, chosen


@wrong("mt-nothing-assigned", C_MT, "inputs.masked_fill(...) without assigning the result: nothing replaced",
       "none of the chosen tokens changed")
def mt_nothing(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = choose(token_ids, maskable, generator, p)
    inputs = token_ids.clone()
    inputs.masked_fill(chosen, mask_id)
    return inputs, chosen


@wrong("mt-hf-tenth", C_MT, "Hugging Face's rule with bernoulli(0.1) for the random ones among the unmasked",
       "half get a random id")
def mt_hf_tenth(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = choose(token_ids, maskable, generator, p)
    replaced = torch.bernoulli(torch.full(token_ids.shape, 0.8), generator=generator).bool() & chosen
    swapped = torch.bernoulli(torch.full(token_ids.shape, 0.1), generator=generator).bool() & chosen & ~replaced
    inputs = token_ids.clone()
    inputs[replaced] = mask_id
    inputs[swapped] = torch.randint(vocab_size, token_ids.shape, generator=generator)[swapped]
    return inputs, chosen


@wrong("mt-two-draws-overlap", C_MT, "r1 < 0.8 masked, then an independent r2 < 0.1 random, overwriting",
       "the random ids overwrite some of the mask_id tokens")
def mt_overlap(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = choose(token_ids, maskable, generator, p)
    inputs = token_ids.masked_fill(chosen & (torch.rand(token_ids.shape, generator=generator) < 0.8), mask_id)
    swap = chosen & (torch.rand(token_ids.shape, generator=generator) < 0.1)
    return torch.where(swap, torch.randint(vocab_size, token_ids.shape, generator=generator), inputs), chosen


wrong("mt-random-fixed-id", C_MT, "the 'random' ones all get id 1 ([UNK])", "the random id is fixed")(
    with_random_ids(lambda ids, v, g: torch.ones_like(ids)))
wrong("mt-random-once", C_MT, "one random id drawn for the whole batch, torch.randint(vocab_size, (1,))",
      "drawn once for the whole batch")(with_random_ids(lambda ids, v, g: torch.randint(v, (1,), generator=g)))
def mt_random_below_mask_id(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    """torch.randint(mask_id, ...): mask_id typed where vocab_size belongs."""
    return with_random_ids(lambda ids, v, g: torch.randint(mask_id, ids.shape, generator=g))(
        token_ids, maskable, mask_id, vocab_size, generator, p)


wrong("mt-random-below-mask-id", C_MT, "torch.randint(mask_id, ...): mask_id typed where vocab_size belongs",
      "mask_id, where vocab_size belongs")(mt_random_below_mask_id)


def mt_mask_over_random(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    """Random ids where r < 0.1 first, then mask_id where r < 0.8 on top: every random id is overwritten."""
    chosen = choose(token_ids, maskable, generator, p)
    r = torch.rand(token_ids.shape, generator=generator)
    inputs = torch.where(chosen & (r < 0.1), torch.randint(vocab_size, token_ids.shape, generator=generator), token_ids)
    return inputs.masked_fill(chosen & (r < 0.8), mask_id), chosen


wrong("mt-mask-over-random", C_MT, "random ids for r < 0.1, then mask_id for r < 0.8 on top (the same r)",
      "or a later step writes mask_id over them")(mt_mask_over_random)
wrong("mt-random-from-batch", C_MT, "the random ids taken from the batch itself (its tokens shuffled)",
      "every one is an id that occurs in the batch")(
    with_random_ids(lambda ids, v, g: ids.flatten()[torch.randperm(ids.numel(), generator=g)].view(ids.shape)))
wrong("mt-random-no-specials", C_MT, "random ids from torch.randint(5, vocab_size): the specials left out",
      "come from only part of the vocabulary")(
    with_random_ids(lambda ids, v, g: torch.randint(5, v, ids.shape, generator=g)))
wrong("mt-random-off-by-one", C_MT, "random ids from torch.randint(vocab_size - 1): the last id never drawn",
      "torch.randint(vocab_size - 1, ...) stops one short")(
    with_random_ids(lambda ids, v, g: torch.randint(v - 1, ids.shape, generator=g)))


def skewed(ids, v, g):
    """Half of the random ids from the lower half of the vocabulary: every id possible, not uniformly."""
    low = torch.randint(v // 2, ids.shape, generator=g)
    return torch.where(torch.rand(ids.shape, generator=g) < 0.5, low, torch.randint(v, ids.shape, generator=g))


wrong("mt-random-skewed", C_MT, "half the random ids from the lower half of the vocabulary",
      "some ids come far more often than others")(with_random_ids(skewed))


@wrong("mt-default-p", C_MT, "p=0.1 as the default", "p's default is 0.15")
def mt_default_p(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.1):
    return with_split((0.8, 0.1))(token_ids, maskable, mask_id, vocab_size, generator, p)


@wrong("mt-signature-order", C_MT, "p before generator in the signature: pretrain's generator lands in p",
       "Keep the signature's order")
def mt_signature(token_ids, maskable, mask_id, vocab_size, p=0.15, generator=None):
    return with_split((0.8, 0.1))(token_ids, maskable, mask_id, vocab_size, generator, p)


@wrong("mt-global-fresh-generator", C_MT,
       "without a generator, a torch.Generator() of its own (the same seed each call)",
       "without a generator it must draw from torch's global random state")
def mt_fresh(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    generator = generator if generator is not None else torch.Generator()
    return with_split((0.8, 0.1))(token_ids, maskable, mask_id, vocab_size, generator, p)


def at_least_one(token_ids, maskable, generator, p):
    """round(p * n) of each sequence's maskable tokens, but at least one."""
    chosen = torch.zeros_like(maskable)
    for row in range(token_ids.shape[0]):
        where = maskable[row].nonzero()[:, 0]
        k = max(1, round(p * where.numel())) if where.numel() else 0
        chosen[row, where[torch.randperm(where.numel(), generator=generator)[:k]]] = True
    return chosen


wrong("mt-at-least-one", C_MT, "at least one token per sequence, even with p=0", "not even one per sequence")(
    with_choice(at_least_one))


# Mistakes unlike the listed slips: a probe (p varied, the choices and fates of neighbours compared, the
# split at p=1, many small batches) must name them.
wrong("mt-probe-p-squared", C_MT, "two draws must both fall below p", "about p squared")(
    with_choice(lambda ids, maskable, g, p: choose(ids, maskable, g, p) & choose(ids, maskable, g, p)))
wrong("mt-probe-half-p", C_MT, "compares with p / 2", "times p each time")(
    with_choice(lambda ids, maskable, g, p: choose(ids, maskable, g, p / 2)))
wrong("mt-probe-p-unused", C_MT, "compares with 0.25 whatever p is", "the share does not change with p")(
    with_choice(lambda ids, maskable, g, p: choose(ids, maskable, g, 0.25)))
wrong("mt-probe-same-positions", C_MT, "one random number per position, torch.rand(L), shared by the sequences",
      "the same positions are chosen in every sequence")(
    with_choice(lambda ids, maskable, g, p: (torch.rand(ids.shape[1], generator=g) < p) & maskable))
wrong("mt-probe-whole-sequences", C_MT, "one random number per sequence, torch.rand(B, 1)",
      "whole sequences are chosen or not")(
    with_choice(lambda ids, maskable, g, p: (torch.rand(ids.shape[0], 1, generator=g) < p) & maskable))



def fixed_per_length(token_ids, maskable, generator, p):
    """round(p * L) maskable tokens per sequence, L the padded length, drawn with randperm."""
    chosen = torch.zeros_like(maskable)
    for row, allowed in enumerate(maskable):
        where = allowed.nonzero().flatten()  # (n,)
        chosen[row, where[torch.randperm(len(where), generator=generator)[:round(p * token_ids.shape[1])]]] = True
    return chosen


wrong("mt-probe-count-per-length", C_MT, "round(p * L) tokens per sequence, L the padded length (randperm)",
      "tokens chosen (p x L, L =")(with_choice(fixed_per_length))


def spans(token_ids, maskable, generator, p):
    """Spans of three: a start with probability p / 3, and the two tokens after it."""
    start = torch.rand(token_ids.shape, generator=generator) < p / 3
    chosen = start.clone()
    chosen[:, 1:] |= start[:, :-1]
    chosen[:, 2:] |= start[:, :-2]
    return chosen & maskable


wrong("mt-probe-spans", C_MT, "spans of three tokens", "neighbouring tokens are chosen together")(with_choice(spans))


@wrong("mt-probe-split-reuses-draw", C_MT, "the split compares the choosing numbers with 0.8 and 0.9",
       "the split depends on p")
def mt_reuse(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    r = torch.rand(token_ids.shape, generator=generator)
    chosen = (r < p) & maskable
    inputs = token_ids.masked_fill(chosen & (r < 0.8), mask_id)
    swap = chosen & (r >= 0.8) & (r < 0.9)
    return torch.where(swap, torch.randint(vocab_size, token_ids.shape, generator=generator), inputs), chosen


@wrong("mt-probe-one-fate", C_MT, "one random number decides the fate of all the chosen tokens of a call",
       "one random number decides the fate of every chosen token")
def mt_one_fate(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = choose(token_ids, maskable, generator, p)
    r = float(torch.rand(1, generator=generator))
    if r < 0.8:
        return token_ids.masked_fill(chosen, mask_id), chosen
    if r < 0.9:
        return torch.where(chosen, torch.randint(vocab_size, token_ids.shape, generator=generator), token_ids), chosen
    return token_ids.clone(), chosen


def fates_by(shape):
    """The split's numbers drawn with ``shape(B, L)`` and broadcast."""
    def mask_tokens(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
        chosen = choose(token_ids, maskable, generator, p)
        r = torch.rand(shape(*token_ids.shape), generator=generator)
        inputs = token_ids.masked_fill(chosen & (r < 0.8), mask_id)
        swap = chosen & (r >= 0.8) & (r < 0.9)
        return torch.where(swap, torch.randint(vocab_size, token_ids.shape, generator=generator), inputs), chosen
    return mask_tokens


wrong("mt-probe-fate-per-sequence", C_MT, "the split's number drawn once per sequence, (B, 1)",
      "two chosen tokens next to each other in a sequence share their fate")(fates_by(lambda b, length: (b, 1)))
wrong("mt-probe-fate-per-position", C_MT, "the split's number drawn once per position, (L,)",
      "two chosen tokens at one position of neighbouring sequences share their fate")(
    fates_by(lambda b, length: (length,)))



# The replacement's conditions, the random ids' range and the generator's use.
def random_for(scope):
    """The random ids put where ``scope(chosen, maskable)`` and 0.8 <= r < 0.9 (the mask_id ones right)."""
    def mask_tokens(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
        chosen = choose(token_ids, maskable, generator, p)
        r = torch.rand(token_ids.shape, generator=generator)
        random_ids = torch.randint(vocab_size, token_ids.shape, generator=generator)
        inputs = token_ids.masked_fill(chosen & (r < 0.8), mask_id)
        return torch.where(scope(chosen, maskable) & (r >= 0.8) & (r < 0.9), random_ids, inputs), chosen
    return mask_tokens


wrong("mt-random-not-chosen", C_MT, "(r >= 0.8) & (r < 0.9) for the random ids, without chosen",
      "the random replacement's condition lacks chosen")(random_for(lambda chosen, maskable: True))
wrong("mt-random-maskable-not-chosen", C_MT, "maskable & (r >= 0.8) & (r < 0.9): maskable where chosen belongs",
      "the random replacement's condition lacks chosen")(random_for(lambda chosen, maskable: maskable))


@wrong("mt-random-over-mask", C_MT, "chosen & (r < 0.9) for the random ids, after the mask_id ones",
       "the random ids are written over the mask_id tokens")
def mt_random_over_mask(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = choose(token_ids, maskable, generator, p)
    r = torch.rand(token_ids.shape, generator=generator)
    random_ids = torch.randint(vocab_size, token_ids.shape, generator=generator)
    inputs = token_ids.masked_fill(chosen & (r < 0.8), mask_id)
    return torch.where(chosen & (r < 0.9), random_ids, inputs), chosen


def mt_random_after_mask_id(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    """torch.randint(mask_id + 1, vocab_size): the ids after [MASK] only, an empty range when mask_id is the last."""
    return with_random_ids(lambda ids, v, g: torch.randint(mask_id + 1, v, ids.shape, generator=g))(
        token_ids, maskable, mask_id, vocab_size, generator, p)


wrong("mt-random-after-mask-id", C_MT, "torch.randint(mask_id + 1, vocab_size): empty when mask_id is the last id",
      "that is torch.randint(mask_id + 1, vocab_size)")(mt_random_after_mask_id)
wrong("mt-random-from-one", C_MT, "torch.randint(1, vocab_size): id 0 never drawn",
      "torch.randint(1, vocab_size) starts at 1")(
    with_random_ids(lambda ids, v, g: torch.randint(1, v, ids.shape, generator=g)))
wrong("mt-random-up-to-batch-max", C_MT, "torch.randint(token_ids.max() + 1, ...): the batch's ids only",
      "token_ids.max() + 1 where vocab_size belongs")(
    with_random_ids(lambda ids, v, g: torch.randint(int(ids.max()) + 1, ids.shape, generator=g)))
wrong("mt-random-rounded", C_MT, "(torch.rand(...) * (vocab_size - 1)).round().long(): the two ends half as likely",
      "come about half as often as the others")(
    with_random_ids(lambda ids, v, g: (torch.rand(ids.shape, generator=g) * (v - 1)).round().long()))


def mt_numpy_choice(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    """The choice from numpy's global generator."""
    import numpy as np

    chosen = torch.from_numpy(np.random.rand(*token_ids.shape) < p) & maskable
    return replace(token_ids, chosen, mask_id, vocab_size, generator), chosen


def mt_python_random_choice(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    """The choice from Python's random module, one token at a time."""
    import random

    picks = [[random.random() < p for _ in range(token_ids.shape[1])] for _ in range(token_ids.shape[0])]
    chosen = torch.tensor(picks) & maskable
    return replace(token_ids, chosen, mask_id, vocab_size, generator), chosen


wrong("mt-numpy-random", C_MT, "the choice from np.random.rand", "a random source that neither seed sets")(
    mt_numpy_choice)
wrong("mt-python-random", C_MT, "the choice from Python's random.random()", "a random source that neither seed sets")(
    mt_python_random_choice)


def mt_copied_generator(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    """A copy of the generator, seeded from its initial seed: the caller's generator never moves on."""
    if generator is not None:
        generator = torch.Generator().manual_seed(generator.initial_seed())
    return with_split((0.8, 0.1))(token_ids, maskable, mask_id, vocab_size, generator, p)


def mt_torch_seeded_from_generator(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    """torch.manual_seed(generator.initial_seed()), then every draw from the global state."""
    if generator is not None:
        torch.manual_seed(generator.initial_seed())
    return with_split((0.8, 0.1))(token_ids, maskable, mask_id, vocab_size, None, p)


wrong("mt-generator-copied", C_MT, "torch.Generator().manual_seed(generator.initial_seed()): a fresh copy each call",
      "the generator does not move on from call to call")(mt_copied_generator)
wrong("mt-torch-seeded-from-generator", C_MT, "torch.manual_seed(generator.initial_seed()), then global draws",
      "the generator does not move on from call to call")(mt_torch_seeded_from_generator)


def first_of_row(token_ids, maskable, generator, p):
    """Only the first 128 positions of each row may be chosen (a max_len of the learner's own)."""
    chosen = choose(token_ids, maskable, generator, p)
    chosen[:, 128:] = False
    return chosen


wrong("mt-first-positions-only", C_MT, "chosen[:, 128:] = False: a length of its own",
      "your choice covers only the first")(with_choice(first_of_row))


# Mistakes unlike the listed slips: a probe must name them.
wrong("mt-probe-one-draw-per-batch", C_MT, "torch.rand(1) < p: the whole batch chosen or none of it",
      "one random number decides for the whole batch")(
    with_choice(lambda ids, maskable, g, p: maskable & (torch.rand(1, generator=g) < p)))
wrong("mt-probe-p-as-percent", C_MT, "torch.rand(...) * 100 < p: p read as a percentage",
      "as if p were a percentage")(
    with_choice(lambda ids, maskable, g, p: (torch.rand(ids.shape, generator=g) * 100 < p) & maskable))


def fates_in_order(per_row):
    """The first 80 % of the chosen (in each row, or in the whole batch) mask_id, the next 10 % random ids."""
    def mask_tokens(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
        chosen = choose(token_ids, maskable, generator, p)
        inputs = token_ids.clone()
        groups = [(row, chosen[row].nonzero()[:, 0]) for row in range(token_ids.shape[0])] if per_row else [
            (None, chosen.nonzero())]
        for row, where in groups:
            a, b = round(0.8 * len(where)), round(0.9 * len(where))
            random_ids = torch.randint(vocab_size, (b - a,), generator=generator)
            if per_row:
                inputs[row, where[:a]] = mask_id
                inputs[row, where[a:b]] = random_ids
            else:
                inputs[where[:a, 0], where[:a, 1]] = mask_id
                inputs[where[a:b, 0], where[a:b, 1]] = random_ids
        return inputs, chosen
    return mask_tokens


wrong("mt-probe-fates-in-order-per-row", C_MT, "each row's chosen split in order: the first 80 % mask_id, ...",
      "the fate follows the order of the chosen tokens")(fates_in_order(per_row=True))
wrong("mt-probe-fates-in-order-batch", C_MT, "the batch's chosen split in reading order: the first 80 % mask_id, ...",
      "the fate follows the order of the chosen tokens")(fates_in_order(per_row=False))


@wrong("mt-float-and", C_MT, "chosen & r with r the float draws: torch has no & for floats (a NotImplementedError)",
       "&, | and ~ work on bool tensors")
def mt_float_and(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    r = torch.rand(token_ids.shape, generator=generator)
    chosen = (r < p) & maskable
    inputs = token_ids.clone()
    inputs[chosen & r] = mask_id
    return inputs, torch.where(chosen, token_ids, torch.full_like(token_ids, -100))


# ----------------------------------------------------------------------------------------------
# Right answers, in many styles, each to pass


@right("mt-rand-where", C_MT,
       "rand < p, a second rand for the split, masked_fill then torch.where (the reference's way)")
def mt_rand_where(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = (torch.rand(token_ids.shape, generator=generator) < p) & maskable
    action = torch.rand(token_ids.shape, generator=generator)
    random_ids = torch.randint(vocab_size, token_ids.shape, generator=generator)
    inputs = token_ids.masked_fill(chosen & (action < 0.8), mask_id)
    return torch.where(chosen & (action >= 0.8) & (action < 0.9), random_ids, inputs), chosen


@right("mt-bernoulli-hf", C_MT, "Hugging Face's collator: bernoulli everywhere, clone and index assignment")
def mt_hf(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    probability = torch.full(token_ids.shape, p).masked_fill(~maskable, 0.0)
    chosen = torch.bernoulli(probability, generator=generator).bool()
    inputs = token_ids.clone()
    replaced = torch.bernoulli(torch.full(token_ids.shape, 0.8), generator=generator).bool() & chosen
    inputs[replaced] = mask_id
    swapped = torch.bernoulli(torch.full(token_ids.shape, 0.5), generator=generator).bool() & chosen & ~replaced
    random_words = torch.randint(vocab_size, token_ids.shape, dtype=torch.long, generator=generator)
    inputs[swapped] = random_words[swapped]
    return inputs, chosen


@right("mt-randperm-rows", C_MT, "exactly round(p * n) of each sequence's n maskable tokens, randperm per row")
def mt_randperm(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = torch.zeros_like(maskable)
    for row in range(token_ids.shape[0]):
        where = maskable[row].nonzero()[:, 0]
        k = round(p * where.numel())
        chosen[row, where[torch.randperm(where.numel(), generator=generator)[:k]]] = True
    return replace(token_ids, chosen, mask_id, vocab_size, generator), chosen


@right("mt-floor-randperm-flat", C_MT, "int(p * n) of each row's maskable tokens (a floor), the split by index lists")
def mt_floor(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = torch.zeros_like(maskable)
    for row in range(token_ids.shape[0]):
        where = torch.nonzero(maskable[row]).flatten()
        k = int(p * len(where))
        chosen[row, where[torch.randperm(len(where), generator=generator)[:k]]] = True
    inputs = token_ids.clone()
    rows, cols = chosen.nonzero(as_tuple=True)
    lot = torch.rand(len(rows), generator=generator)
    to_mask, to_random = lot < 0.8, (lot >= 0.8) & (lot < 0.9)
    inputs[rows[to_mask], cols[to_mask]] = mask_id
    inputs[rows[to_random], cols[to_random]] = torch.randint(0, vocab_size, (int(to_random.sum()),),
                                                             generator=generator)
    return inputs, chosen


@right("mt-one-draw-thresholds", C_MT, "one number per token: below 0.8 p mask_id, below 0.9 p random, below p kept")
def mt_one_draw(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    r = torch.rand(token_ids.shape, generator=generator)
    chosen = (r < p) & maskable
    inputs = torch.where(chosen & (r < 0.8 * p), mask_id, token_ids)
    random_ids = torch.randint(vocab_size, token_ids.shape, generator=generator)
    return torch.where(chosen & (r >= 0.8 * p) & (r < 0.9 * p), random_ids, inputs), chosen


@right("mt-global-branch", C_MT, "without a generator, torch.rand_like and torch.randint_like (the global state)")
def mt_global_branch(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    if generator is None:
        u = torch.rand_like(token_ids, dtype=torch.float)
        v = torch.rand_like(token_ids, dtype=torch.float)
        random_ids = torch.randint_like(token_ids, vocab_size)
    else:
        u = torch.rand(token_ids.shape, generator=generator)
        v = torch.rand(token_ids.shape, generator=generator)
        random_ids = torch.randint(vocab_size, token_ids.shape, generator=generator)
    chosen = maskable & (u < p)
    inputs = token_ids.clone()
    inputs[chosen & (v < 0.8)] = mask_id
    swap = chosen & (v >= 0.8) & (v < 0.9)
    inputs[swap] = random_ids[swap]
    return inputs, chosen


@right("mt-multinomial-never-same", C_MT,
       "the fate by torch.multinomial, and a random id that never equals the original ((id + k) % V, k in 1..V-1)")
def mt_multinomial(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = torch.rand(token_ids.shape, generator=generator).lt(p).logical_and(maskable)
    fate = torch.multinomial(torch.tensor([0.8, 0.1, 0.1]), token_ids.numel(), replacement=True,
                             generator=generator).view(token_ids.shape)
    shift = torch.randint(1, vocab_size, token_ids.shape, generator=generator)
    inputs = torch.where(chosen & (fate == 0), torch.full_like(token_ids, mask_id), token_ids)
    return torch.where(chosen & (fate == 1), (token_ids + shift) % vocab_size, inputs), chosen


@right("mt-exact-split-per-row", C_MT, "an exact 80/10/10 of each row's chosen tokens, shuffled with randperm")
def mt_exact_split_per_row(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = (torch.rand(token_ids.shape, generator=generator) < p) & maskable
    inputs = token_ids.clone()
    for i in range(token_ids.shape[0]):
        where = chosen[i].nonzero()[:, 0]
        where = where[torch.randperm(len(where), generator=generator)]
        a, b = round(0.8 * len(where)), round(0.9 * len(where))
        inputs[i, where[:a]] = mask_id
        inputs[i, where[a:b]] = torch.randint(vocab_size, (b - a,), generator=generator)
    return inputs, chosen

@right("mt-random-never-mask-id", C_MT, "a random id equal to mask_id replaced by the token's own id")
def mt_never_mask_id(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = (torch.rand(token_ids.shape, generator=generator) < p) & maskable
    lot = torch.rand(token_ids.shape, generator=generator)
    rnd = torch.randint(vocab_size, token_ids.shape, generator=generator)
    rnd = torch.where(rnd == mask_id, token_ids, rnd)
    inputs = token_ids.masked_fill(chosen & (lot < 0.8), mask_id)
    return torch.where(chosen & (lot >= 0.8) & (lot < 0.9), rnd, inputs), chosen

@right("mt-global-count-multinomial", C_MT,
       "round(p * n) of the batch's maskable tokens (randperm over the flat batch), random ids by multinomial")
def mt_global_count_randperm(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    flat = maskable.flatten().nonzero()[:, 0]
    k = round(p * len(flat))
    picked = flat[torch.randperm(len(flat), generator=generator)[:k]]
    chosen = torch.zeros(token_ids.numel(), dtype=torch.bool)
    chosen[picked] = True
    chosen = chosen.view(token_ids.shape)
    lot = torch.rand(token_ids.shape, generator=generator)
    inputs = token_ids.clone()
    inputs[chosen & (lot < 0.8)] = mask_id
    swap = chosen & (lot >= 0.8) & (lot < 0.9)
    if swap.any():
        inputs[swap] = torch.multinomial(torch.ones(vocab_size), int(swap.sum()), replacement=True,
                                         generator=generator)
    return inputs, chosen

@right("mt-floor-ids-reversed-ranges", C_MT, "r < 0.1 a random id (floor of rand * V), r >= 0.2 mask_id, the rest kept")
def mt_floor_ids_reversed_ranges(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = maskable & (torch.rand(token_ids.shape, generator=generator) < p)
    lot = torch.rand(token_ids.shape, generator=generator)
    rnd = (torch.rand(token_ids.shape, generator=generator) * vocab_size).long().clamp(max=vocab_size - 1)
    out = torch.where(chosen & (lot < 0.1), rnd, token_ids)  # 10 % random
    return torch.where(chosen & (lot >= 0.2), torch.full_like(token_ids, mask_id), out), chosen  # 80 % mask, rest kept

@right("mt-random-then-mask-over", C_MT, "random ids for r < 0.9 first, then mask_id over them for r < 0.8")
def mt_random_then_mask_over(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = torch.rand(token_ids.shape, generator=generator).le(p) & maskable
    lot = torch.rand(token_ids.shape, generator=generator)
    random_ids = torch.randint(vocab_size, token_ids.shape, generator=generator)
    inputs = torch.where(chosen & (lot < 0.9), random_ids, token_ids)
    inputs = inputs.masked_fill(chosen & (lot < 0.8), mask_id)  # the mask overwrites the first 80 %
    return inputs, chosen

@right("mt-bucketize-gather", C_MT,
       "bernoulli in float64 for the choice, bucketize for the fate, gather from three options")
def mt_bucketize_fates(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    chosen = torch.bernoulli(maskable.to(torch.float64) * p, generator=generator).to(torch.bool)
    fate = torch.bucketize(torch.rand(token_ids.shape, generator=generator), torch.tensor([0.8, 0.9]), right=True)
    options = torch.stack([torch.full_like(token_ids, mask_id),
                           torch.randint(vocab_size, token_ids.shape, generator=generator), token_ids])  # (3, B, L)
    replaced = options.gather(0, fate[None]).squeeze(0)
    return torch.where(chosen, replaced, token_ids), chosen

@right("mt-one-draw-of-three", C_MT,
       "one torch.rand of shape (3, B, L) for the choice, the fate and the random ids; index_put_")
def mt_one_big_draw(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    u = torch.rand((3, *token_ids.shape), generator=generator)
    chosen = (u[0] < p) & maskable
    rnd = torch.floor(u[2] * vocab_size).long()
    inputs = token_ids.clone()
    inputs.index_put_((chosen & (u[1] < 0.8)).nonzero(as_tuple=True), torch.tensor(mask_id))
    swap = chosen & (u[1] >= 0.8) & (u[1] < 0.9)
    inputs[swap] = rnd[swap]
    return inputs, chosen

@right("mt-default-generator", C_MT, "torch.default_generator when generator is None, .lt/.ge methods")
def mt_default_generator(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    g = generator if generator is not None else torch.default_generator
    B, L = token_ids.shape
    chosen = maskable.logical_and(torch.rand(B, L, generator=g).lt(p))
    lot = torch.rand(B, L, generator=g)
    new = token_ids.detach().clone()
    new[chosen & lot.lt(0.8)] = mask_id
    rand_pos = chosen & lot.ge(0.8) & lot.lt(0.9)
    new[rand_pos] = torch.randint(0, vocab_size, (int(rand_pos.sum()),), generator=g)
    return new, chosen

@right("mt-loop-over-rows", C_MT, "a Python loop over the rows, each row drawn and stacked back")
def mt_python_loop_rows(token_ids, maskable, mask_id, vocab_size, generator=None, p=0.15):
    rows_in, rows_ch = [], []
    for ids, ok in zip(token_ids, maskable):
        pick = (torch.rand(ids.shape, generator=generator) < p) & ok
        lot = torch.rand(ids.shape, generator=generator)
        rnd = torch.randint(vocab_size, ids.shape, generator=generator)
        row = torch.where(pick & (lot < 0.8), mask_id, ids)
        rows_in.append(torch.where(pick & (lot >= 0.8) & (lot < 0.9), rnd, row))
        rows_ch.append(pick)
    return torch.stack(rows_in), torch.stack(rows_ch)


test_catalogue_cases, test_wrong_answer_is_named, test_right_answer_passes = CATALOGUE.tests()


def test_the_reference_follows_berts_rule():
    """The reference on a big batch: only maskable tokens chosen, about p of them, split 80/10/10; the same seed,
    the same result."""
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 1000, (200, 100), generator=g)
    maskable = torch.rand(200, 100, generator=g) < 0.7
    inputs, chosen = masked_lm.mask_tokens(ids, maskable, 4, 1000, torch.Generator().manual_seed(1), p=0.3)
    again, same = masked_lm.mask_tokens(ids, maskable, 4, 1000, torch.Generator().manual_seed(1), p=0.3)
    assert torch.equal(inputs, again) and torch.equal(chosen, same)
    assert not (chosen & ~maskable).any() and torch.equal(inputs[~chosen], ids[~chosen])
    assert abs(float(chosen[maskable].float().mean()) - 0.3) < 0.02
    masked = float((inputs[chosen] == 4).float().mean())
    kept = float((inputs[chosen] == ids[chosen]).float().mean())
    assert abs(masked - 0.8) < 0.02 and abs(kept - 0.1) < 0.015
