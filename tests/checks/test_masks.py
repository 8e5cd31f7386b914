"""The checkers of ``padding_mask`` and ``causal_mask`` (notebook 03): each wrong answer named, each right passing."""

from __future__ import annotations

import functools

import torch
from einops import rearrange

import encoder_course as ec
from encoder_course import checks

from .catalogue import Catalogue

C_PM = checks.check_padding_mask
C_CM = checks.check_causal_mask

CATALOGUE = Catalogue(C_PM, C_CM)
WRONG, RIGHT = CATALOGUE.wrong, CATALOGUE.right
wrong, right = CATALOGUE.add_wrong, CATALOGUE.add_right


_CM5 = torch.ones(5, 5, dtype=torch.bool).tril()


# ----------------------------------------------------------------------------------------------
# Wrong answers, each to be named


# padding_mask

wrong("pm-inverted", C_PM, "ids == pad_id: True on the padding",
      'it marks the padding with True')(lambda ids, p: (ids == p)[:, None, None, :])
wrong("pm-2d", C_PM, "(B, L) without the two middle dimensions", "[:, None, None, :]")(lambda ids, p: ids != p)
wrong("pm-float", C_PM, "a float mask", "should be a bool tensor")(lambda ids, p: (ids != p)[:, None, None, :].float())
wrong("pm-zero", C_PM, "compares with 0, not pad_id",
      "compares with 0 instead of pad_id")(lambda ids, p: (ids != 0)[:, None, None, :])
wrong("pm-key-axis", C_PM, "(B, 1, L, 1): the key axis not last",
      "last dimension")(lambda ids, p: (ids != p)[:, None, :, None])


@wrong("pm-B1L", C_PM, "(ids != pad)[:, None, :] -> (B, 1, L)",
       '(B, 1, 1, L)')
def pm_b1l(ids, pad_id):
    return (ids != pad_id)[:, None, :]


@wrong("pm-greater", C_PM, "ids > pad_id (works only when pad is the smallest id)",
       'token_ids > pad_id')
def pm_greater(ids, pad_id):
    return (ids > pad_id)[:, None, None, :]


@wrong("pm-B1LL", C_PM, "expanded to (B, 1, L, L)",
       '(B, 1, 1, L)')
def pm_b1ll(ids, pad_id):
    B, L = ids.shape
    return (ids != pad_id)[:, None, None, :].expand(B, 1, L, L)


@wrong("pm-where-int", C_PM, "torch.where(ids == pad, 0, 1): int64 mask",
       'bool tensor')
def pm_where(ids, pad_id):
    return torch.where(ids == pad_id, 0, 1)[:, None, None, :]


@wrong("pm-lengths", C_PM, "mask from lengths: arange(L) < (ids != pad).sum(1) (assumes right padding only)",
       'assumes the padding sits at the end')
def pm_lengths(ids, pad_id):
    lengths = (ids != pad_id).sum(dim=1)
    return (torch.arange(ids.shape[1])[None, :] < lengths[:, None])[:, None, None, :]


@wrong("pm-last-token-pad", C_PM, "ids != ids[:, -1:] (takes the last token as the pad id)",
       "takes each sequence's last token as its padding")
def pm_last(ids, pad_id):
    return (ids != ids[:, -1:])[:, None, None, :]


@wrong("pm-first-pad-argmax", C_PM, "positions before (ids == pad).argmax(1) (no padding -> all False)",
       'positions before the first pad')
def pm_argmax(ids, pad_id):
    first = (ids == pad_id).int().argmax(dim=1)
    return (torch.arange(ids.shape[1])[None, :] < first[:, None])[:, None, None, :]


@wrong("pm-position-vs-pad", C_PM, "compares the positions with pad_id: torch.arange(L) != pad_id",
       'compares the positions')
def pm_pos(ids, pad_id):
    return (torch.arange(ids.shape[1]) != pad_id).expand(ids.shape)[:, None, None, :]


@wrong("pm-transposed-ids", C_PM, "(ids != pad).T[:, None, None, :]: sequences and positions swapped",
       'sequences and the positions are swapped')
def pm_T(ids, pad_id):
    return (ids != pad_id).T[:, None, None, :]


@wrong("pm-unsqueeze-front", C_PM, "(ids != pad).unsqueeze(0).unsqueeze(0): (1, 1, B, L)",
       "(B, 1, 1, L)")
def pm_front(ids, pad_id):
    return (ids != pad_id).unsqueeze(0).unsqueeze(0)


@wrong("pm-byte", C_PM, "(ids != pad).byte() (the old uint8 mask habit)",
       'should be a bool tensor')
def pm_byte(ids, pad_id):
    return (ids != pad_id).byte()[:, None, None, :]


@wrong("pm-8-heads", C_PM, "expanded to (B, 8, 1, L) for the 8 heads of notebook 04",
       "(B, 1, 1, L)")
def pm_heads(ids, pad_id):
    B, L = ids.shape
    return (ids != pad_id)[:, None, None, :].expand(B, 8, 1, L)


# causal_mask

wrong("cm-upper", C_CM, "triu(): the upper triangle",
      "lower triangle")(lambda L: torch.ones(L, L, dtype=torch.bool).triu())
wrong("cm-no-diag", C_CM, "tril(-1): the diagonal False",
      'the diagonal is False')(lambda L: torch.ones(L, L, dtype=torch.bool).tril(-1))
wrong("cm-inverted", C_CM, "triu(1): True on the future",
      'it is inverted')(lambda L: torch.ones(L, L, dtype=torch.bool).triu(1))
wrong("cm-int", C_CM, "an int64 mask", "should be a bool tensor")(lambda L: torch.ones(L, L).tril().long())


@wrong("cm-tril-plus1", C_CM, "tril(1): each position also sees the next one",
       'diagonal=1')
def cm_tril1(L):
    return torch.ones(L, L, dtype=torch.bool).tril(1)


@wrong("cm-4d", C_CM, "returns (1, 1, L, L)",
       '(L, L)')
def cm_4d(L):
    return torch.ones(L, L, dtype=torch.bool).tril()[None, None]


@wrong("cm-float", C_CM, "torch.tril(torch.ones(L, L)): float mask",
       'bool tensor')
def cm_float(L):
    return torch.tril(torch.ones(L, L))


@wrong("cm-triu-minus1", C_CM, "torch.triu(ones, diagonal=-1)",
       'keeps the upper triangle')
def cm_triu_m1(L):
    return torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=-1)


@wrong("cm-hardcoded-5", C_CM, "a 5x5 table sliced [:L, :L] (from the notebook's example length)",
       'returned shape (5, 5)')
def cm_fixed(L):
    return _CM5[:L, :L]


@wrong("cm-uint8", C_CM, "torch.ones(L, L, dtype=torch.uint8).tril()",
       'should be a bool tensor')
def cm_u8(L):
    return torch.ones(L, L, dtype=torch.uint8).tril()


@wrong("cm-additive-neg-inf", C_CM, "an additive float mask: torch.triu(torch.full((L, L), -inf), 1)",
       'should be a bool tensor')
def cm_additive(L):
    return torch.triu(torch.full((L, L), float("-inf")), diagonal=1)


@wrong("cm-eye", C_CM, "torch.eye(L).bool(): each position sees only itself",
       'only the diagonal is True')
def cm_eye(L):
    return torch.eye(L).bool()


# Mistakes unlike the listed slips: the probe (a pad_id that appears nowhere, each id's marks, each
# query's keys) must name them.
wrong("pm-probe-at-most-pad", C_PM, "token_ids > pad_id + 1: the smallest real ids dropped too",
      "marks the ids")(lambda ids, pad_id: (ids > pad_id + 1)[:, None, None, :])
wrong("pm-probe-last-row-for-all", C_PM, "every sequence given the last sequence's padding",
      "your mask's rows should simply swap places too")(
    lambda ids, pad_id: (ids[-1:] != pad_id).expand_as(ids)[:, None, None, :])
wrong("pm-probe-pad-zero-literal", C_PM, "ids != 0 and ids != pad_id: 0 dropped as if always padding",
      "yours marks the ids [0] as padding")(lambda ids, pad_id: ((ids != pad_id) & (ids != 0))[:, None, None, :])
wrong("cm-probe-window", C_CM, "a local window |i - j| <= 1 instead of the whole past",
      "may attend to keys 0-1, but it should be key 0 alone")(
    lambda L: (torch.arange(L)[:, None] - torch.arange(L)[None, :]).abs() <= 1)
wrong("cm-probe-anti-triangle", C_CM, "the lower triangle flipped left to right", "is in its future")(
    lambda L: torch.ones(L, L, dtype=torch.bool).tril().flip(1))


# ----------------------------------------------------------------------------------------------
# Right answers, in many styles, each to pass


# padding_mask

wrong("pm-package", C_PM, "the package's own function, passed as the answer", "calls the course's own")(ec.padding_mask)


@right("pm-unsqueeze", C_PM, "(ids != pad_id).unsqueeze(1).unsqueeze(2)")
def pm_unsqueeze(ids, pad_id):
    return (ids != pad_id).unsqueeze(1).unsqueeze(2)


@right("pm-logical-not-view", C_PM, "torch.logical_not(ids.eq(pad)).view(B, 1, 1, L)")
def pm_r1(ids, pad_id):
    B, L = ids.shape
    return torch.logical_not(ids.eq(pad_id)).view(B, 1, 1, L)


@right("pm-eq-False-reshape", C_PM, "((ids == pad) == False).reshape(B,1,1,L)")
def pm_r2(ids, pad_id):
    return ((ids == pad_id) == False).reshape(ids.shape[0], 1, 1, ids.shape[1])  # noqa: E712


@right("pm-rearrange-ne", C_PM, "einops rearrange(ids.ne(pad), 'b l -> b 1 1 l')")
def pm_r3(ids, pad_id):
    return rearrange(ids.ne(pad_id), "b l -> b 1 1 l")


@right("pm-isin", C_PM, "~torch.isin(ids, torch.tensor([pad_id])), then [:, None, None]")
def pm_isin(ids, pad_id):
    return (~torch.isin(ids, torch.tensor([pad_id])))[:, None, None]


@right("pm-sub-bool", C_PM, "(ids - pad_id).bool()[:, None, None]")
def pm_sub(ids, pad_id):
    return (ids - pad_id).bool()[:, None, None]


@right("pm-ne-unsqueeze-neg", C_PM, "ids.ne(pad_id).unsqueeze(-2).unsqueeze(-2)")
def pm_neg(ids, pad_id):
    return ids.ne(pad_id).unsqueeze(-2).unsqueeze(-2)


# causal_mask

wrong("cm-package", C_CM, "the package's own function, passed as the answer", "calls the course's own")(ec.causal_mask)


@right("cm-arange", C_CM, "i[:, None] >= i[None, :] from torch.arange")
def causal_arange(L):
    i = torch.arange(L)
    return i[:, None] >= i[None, :]


@right("cm-not-triu1", C_CM, "~ones.triu(1)")
def cm_r1(L):
    return ~torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)


@right("cm-tril-float-bool", C_CM, "torch.tril(torch.ones(L, L)).bool()")
def cm_r2(L):
    return torch.tril(torch.ones(L, L)).bool()


@right("cm-tril-indices", C_CM, "zeros then fill torch.tril_indices(L, L) with True")
def cm_tril_idx(L):
    m = torch.zeros(L, L, dtype=torch.bool)
    r, c = torch.tril_indices(L, L)
    m[r, c] = True
    return m


@right("cm-lru-cache", C_CM, "lru_cache: one shared tensor per L")
@functools.lru_cache(maxsize=None)
def cm_cached(L):
    return torch.ones(L, L).triu(1) == 0


@right("cm-triu-T", C_CM, "torch.triu(ones bool).T (the upper triangle transposed; non-contiguous)")
def cm_T(L):
    return torch.triu(torch.ones(L, L, dtype=torch.bool)).T


@right("cm-python-lists", C_CM, "torch.tensor([[j <= i for j in range(L)] for i in range(L)])")
def cm_lists(L):
    return torch.tensor([[j <= i for j in range(L)] for i in range(L)])


test_catalogue_cases, test_wrong_answer_is_named, test_right_answer_passes = CATALOGUE.tests()
