"""The checkers of ``padding_mask``, ``causal_mask`` (notebook 03) and ``sliding_window_mask`` (notebook 13): each wrong
answer named, each right passing."""

from __future__ import annotations

import functools

import torch
from einops import rearrange

import encoder_course as ec
from encoder_course import checks

from .catalogue import Catalogue

C_PM = checks.check_padding_mask
C_CM = checks.check_causal_mask
C_SW = checks.check_sliding_window_mask

CATALOGUE = Catalogue(C_PM, C_CM, C_SW)
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
wrong("cm-fixed-size", C_CM, "a mask of 8 x 8 built once, sliced to L: too small past 8",
      "is the mask's size fixed")(lambda L: torch.ones(8, 8, dtype=torch.bool).tril()[:L, :L])
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
       "returned an additive mask")
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


def pm_until_first_pad(ids, pad_id):
    """Python loops: True until each row's first pad, then break."""
    mask = torch.zeros_like(ids, dtype=torch.bool)
    for b in range(ids.shape[0]):
        for j in range(ids.shape[1]):
            if ids[b, j] == pad_id:
                break
            mask[b, j] = True
    return mask[:, None, None, :]


wrong("pm-probe-until-first-pad", C_PM, "loops that stop at each row's first pad (assumes right padding)",
      "your mask depends on where an id sits")(pm_until_first_pad)
wrong("pm-probe-cumsum", C_PM, "(ids != pad).cumsum(-1).bool(): True from the first real token on",
      "your mask depends on where an id sits")(lambda ids, pad_id: (ids != pad_id).cumsum(-1).bool()[:, None, None, :])
wrong("cm-no-triangle", C_CM, "torch.ones(L, L, dtype=torch.bool): the .tril() forgotten", "the triangle is missing")(
    lambda L: torch.ones(L, L, dtype=torch.bool))
wrong("cm-one-short", C_CM, "torch.ones(L - 1, L - 1).tril(): one row and column short", "one short (length - 1")(
    lambda L: torch.ones(L - 1, L - 1, dtype=torch.bool).tril())
wrong("cm-1d-ones", C_CM, "torch.ones(L).tril(): a vector where the square belongs",
      "torch.tril and torch.triu work on a matrix")(lambda L: torch.ones(L, dtype=torch.bool).tril())
wrong("cm-probe-window", C_CM, "a local window |i - j| <= 1 instead of the whole past",
      "may attend to keys 0-1, but it should be key 0 alone")(
    lambda L: (torch.arange(L)[:, None] - torch.arange(L)[None, :]).abs() <= 1)
wrong("cm-probe-anti-triangle", C_CM, "the lower triangle flipped left to right", "is in its future")(
    lambda L: torch.ones(L, L, dtype=torch.bool).tril().flip(1))
wrong("pm-additive", C_PM, "zeros with -inf at the padding: an additive float mask",
      "returned an additive mask")(
    lambda ids, p: torch.zeros(ids.shape).masked_fill(ids == p, float("-inf"))[:, None, None, :])


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



# ----------------------------------------------------------------------------------------------
# sliding_window_mask (notebook 13)


def _off(length):
    i = torch.arange(length)
    return i[:, None] - i[None, :]  # (L, L): query minus key


# Wrong answers, each to be named

wrong("sw-strict", C_SW, "|i - j| < window // 2: the bound left out",
      "one key too few on each side")(lambda length, window, device=None: _off(length).abs() < window // 2)
wrong("sw-minus-one", C_SW, "|i - j| <= window // 2 - 1",
      "one key too few on each side")(lambda length, window, device=None: _off(length).abs() <= window // 2 - 1)
wrong("sw-plus-one", C_SW, "|i - j| <= window // 2 + 1",
      "one key too many on each side")(lambda length, window, device=None: _off(length).abs() <= window // 2 + 1)
wrong("sw-whole-window", C_SW, "|i - j| <= window: the whole window on either side",
      "the whole window on either side")(lambda length, window, device=None: _off(length).abs() <= window)
wrong("sw-inverted", C_SW, "|i - j| > window // 2: True outside the window",
      "it is inverted")(lambda length, window, device=None: _off(length).abs() > window // 2)
wrong("sw-float", C_SW, "(|i - j| <= window // 2).float()",
      "should be a bool tensor")(lambda length, window, device=None: (_off(length).abs() <= window // 2).float())
wrong("sw-4d", C_SW, "[None, None]: (1, 1, L, L) for the batch and the heads", "without batch or head dimensions")(
    lambda length, window, device=None: (_off(length).abs() <= window // 2)[None, None])


@wrong("sw-causal", C_SW, "0 <= i - j <= window // 2: only the past side, like a causal mask",
       "one-sided, like a causal mask")
def sw_causal(length, window, device=None):
    off = _off(length)
    return (off >= 0) & (off <= window // 2)


@wrong("sw-mistral", C_SW, "the keys i - window + 1 .. i: a causal sliding window of width window",
       "Mistral's sliding window")
def sw_mistral(length, window, device=None):
    ones = torch.ones(length, length, dtype=torch.bool)
    return ones.tril() & ones.triu(-(window - 1))


@wrong("sw-int-where", C_SW, "torch.where(|i - j| <= window // 2, 1, 0): an int64 mask", "bool tensor")
def sw_int(length, window, device=None):
    return torch.where(_off(length).abs() <= window // 2, 1, 0)


@wrong("sw-ceil-half", C_SW, "(window - 1) // 2 on each side: right for odd windows, one short for even ones",
       "(window - 1) // 2 on each side")
def sw_ceil(length, window, device=None):
    return _off(length).abs() <= (window - 1) // 2


@wrong("sw-no-diagonal", C_SW, "0 < |i - j| <= window // 2: the diagonal left out",
       "a query cannot attend to itself")
def sw_no_diag(length, window, device=None):
    off = _off(length).abs()
    return (off > 0) & (off <= window // 2)


@wrong("sw-minus-window-floor", C_SW, "ones.triu(-window // 2).tril(window // 2): (-window) // 2 rounds down",
       "the band is lopsided")
def sw_floor(length, window, device=None):
    return torch.ones(length, length, dtype=torch.bool).triu(-window // 2).tril(window // 2)


@wrong("sw-all-true", C_SW, "torch.ones(L, L, dtype=torch.bool): the window never applied",
       "the window is not applied")
def sw_ones(length, window, device=None):
    return torch.ones(length, length, dtype=torch.bool, device=device)


@wrong("sw-shortcut-bound", C_SW, "if window >= length: all True (the right bound is window // 2 >= length - 1)",
       "its bound is window // 2 >= length - 1")
def sw_shortcut(length, window, device=None):
    if window >= length:
        return torch.ones(length, length, dtype=torch.bool, device=device)
    i = torch.arange(length, device=device)
    return (i[:, None] - i[None, :]).abs() <= window // 2


@wrong("sw-loop-slice-end", C_SW, "a loop, mask[i, max(0, i - h):i + h] = True: each slice one key short",
       "stops before its end")
def sw_loop(length, window, device=None):
    h, mask = window // 2, torch.zeros(length, length, dtype=torch.bool, device=device)
    for i in range(length):
        mask[i, max(0, i - h):i + h] = True
    return mask


_SW_CACHE = {}


def sw_cached(length, window, device=None):
    """A mask cached per window, built for the first length asked and sliced afterwards."""
    if window not in _SW_CACHE:
        i = torch.arange(length, device=device)
        _SW_CACHE[window] = (i[:, None] - i[None, :]).abs() <= window // 2
    return _SW_CACHE[window][:length, :length]


wrong("sw-cached-per-window", C_SW, "a mask cached per window and sliced: a later, longer length gets the old size",
      "is the mask's size fixed somewhere")(sw_cached)


@wrong("sw-arange-window", C_SW, "i = torch.arange(window): the table sized by the window",
       "returned shape (3, 3)")
def sw_window_size(length, window, device=None):
    i = torch.arange(window)
    return (i[:, None] - i[None, :]).abs() <= window // 2


@wrong("sw-no-device", C_SW, "def sliding_window_mask(length, window): the device argument dropped",
       "Keep the signature the exercise gives")
def sw_no_device(length, window):
    return _off(length).abs() <= window // 2


# Mistakes unlike the listed slips: the probe (how far back and ahead each query sees) must name them.
@wrong("sw-probe-window-ahead", C_SW, "ones.tril(window).triu(-(window // 2)): the whole window ahead, half back",
       "1 key back and 3 ahead")
def sw_ahead(length, window, device=None):
    return torch.ones(length, length, dtype=torch.bool).tril(window).triu(-(window // 2))


@wrong("sw-probe-first-key-global", C_SW, "the window, and key 0 for every query (a [CLS] seen by all)",
       "outside the window")
def sw_cls(length, window, device=None):
    mask = _off(length).abs() <= window // 2
    mask[:, 0] = True
    return mask


@wrong("sw-probe-blocks", C_SW, "block-local attention: i // window == j // window",
       "may attend to keys 0-2, but it should be keys 0-1")
def sw_blocks(length, window, device=None):
    block = torch.arange(length) // window
    return block[:, None] == block[None, :]


@wrong("sw-probe-length-half", C_SW, "|i - j| <= length // 2: the sequence's half (3 = window at length 7)",
       "your band's width follows the length")
def sw_length_half(length, window, device=None):
    return _off(length).abs() <= length // 2


wrong("sw-package", C_SW, "the package's own function, passed as the answer", "calls the course's own")(
    ec.sliding_window_mask)


# Right answers, in many styles, each to pass

@right("sw-abs-arange", C_SW, "(i[:, None] - i[None, :]).abs() <= window // 2, on the device given")
def sw_right(length, window, device=None):
    i = torch.arange(length, device=device)
    return (i[:, None] - i[None, :]).abs() <= window // 2


@right("sw-triu-tril-float", C_SW, "torch.ones(L, L).triu(-w).tril(w).bool(), w = window // 2")
def sw_triu_tril(length, window, device=None):
    w = window // 2
    return torch.ones(length, length, device=device).triu(-w).tril(w).bool()


@right("sw-two-triangles", C_SW, "~(ones.triu(w + 1) | ones.tril(-w - 1)): everything but the two far corners")
def sw_corners(length, window, device=None):
    w = window // 2
    ones = torch.ones(length, length, dtype=torch.bool, device=device)
    return ~(ones.triu(w + 1) | ones.tril(-w - 1))


@right("sw-python-lists", C_SW, "torch.tensor([[abs(i - j) <= window // 2 for j ...] for i ...])")
def sw_lists(length, window, device=None):
    return torch.tensor([[abs(i - j) <= window // 2 for j in range(length)] for i in range(length)], device=device)


@right("sw-cdist", C_SW, "torch.cdist of the positions (p=1) <= window / 2, in float")
def sw_cdist(length, window, device=None):
    pos = torch.arange(length, dtype=torch.float32, device=device)[:, None]
    return torch.cdist(pos, pos, p=1) <= window // 2


test_catalogue_cases, test_wrong_answer_is_named, test_right_answer_passes = CATALOGUE.tests()
