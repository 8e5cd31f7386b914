"""Checker of the ``EncoderBlock`` class (notebook 07): post-LN and pre-LN, residuals, norms, the mask, dropout."""

from __future__ import annotations

import functools
import inspect
import re

import torch

from ._compare import _close, _identical
from ._modules import Pair, _sub
from ._run import ExerciseError, _checker, _gen, _randn
from .registry import exercise


def _layout(x, a, f, n1, n2, pre, res=(True, True), scale=1.0, total=1.0):
    """The block from these parts: each sublayer in turn, x + sub(norm(x)) in pre-LN (``pre``), norm(x + sub(x))
    in post-LN; ``res`` says which of the two residual connections are there, ``scale`` multiplies each sublayer's
    output, ``total`` each residual sum."""
    for sub, norm, kept in ((a, n1, res[0]), (f, n2, res[1])):
        y = scale * (sub(norm(x)) if pre else sub(x))
        y = total * (x + y) if kept else y
        x = y if pre else norm(y)
    return x


def _variant(pre: bool, formula, mask_of=None):
    """A mistake's result on (x, r, mask): ``formula`` of the reference block's parts (see _BLOCK_MISTAKES)."""
    def make(x, r, mask):
        m = mask if mask_of is None else mask_of(mask)
        out = formula(x, lambda t: r.attn(t, m), r.ffn, r.norm1, r.norm2, pre)
        return [{"out": one} for one in out] if isinstance(out, list) else {"out": out}
    return make


# Each mistake of the block: its explanation and its result, a formula of the parts x, a (the attention with
# the mask, or with the mask ``mask_of`` makes of it when one is given), f, n1, n2 and pre (built as pre-LN).
_BLOCK_MISTAKES = [
    ("a residual connection is missing: each sublayer's output is added to its input (x + ...).",
     lambda x, a, f, n1, n2, pre: _layout(x, a, f, n1, n2, pre, res=(False, False))),
    ("norm1 and norm2 are swapped: norm1 goes with the attention sublayer, norm2 with the feed-forward.",
     lambda x, a, f, n1, n2, pre: _layout(x, a, f, n2, n1, pre)),
    ("the residual connection around the attention sublayer is missing: add the attention's "
     "output to its input (x + ...).",
     lambda x, a, f, n1, n2, pre: _layout(x, a, f, n1, n2, pre, res=(False, True))),
    ("the residual connection around the feed-forward sublayer is missing: add the feed-forward "
     "output to its input (x + ...).",
     lambda x, a, f, n1, n2, pre: _layout(x, a, f, n1, n2, pre, res=(True, False))),
    ("norm1 is used for both sublayers: the feed-forward sublayer has its own LayerNorm, norm2.",
     lambda x, a, f, n1, n2, pre: _layout(x, a, f, n1, n1, pre)),
    ("norm2 is used for both sublayers: the attention sublayer has its own LayerNorm, norm1.",
     lambda x, a, f, n1, n2, pre: _layout(x, a, f, n2, n2, pre)),
    ("the sublayers are in the wrong order: attention comes first, then the feed-forward network.",
     lambda x, a, f, n1, n2, pre: [_layout(x, f, a, n1, n2, pre), _layout(x, f, a, n2, n1, pre)]),
    ("the mask is not passed to the attention: call self.attn(..., mask).", _layout, lambda m: None),
    ("the second LayerNorm is missing: in post-LN the block ends with x = norm2(x + ffn(x)).",
     lambda x, a, f, n1, n2, pre: (h := n1(x + a(x))) + f(h)),
    ("the attention sublayer is used twice: the second sublayer is the feed-forward network, self.ffn(...).",
     lambda x, a, f, n1, n2, pre: _layout(x, a, a, n1, n2, pre)),
    ("the feed-forward network is used twice: the first sublayer is the attention, self.attn(..., mask).",
     lambda x, a, f, n1, n2, pre: _layout(x, f, f, n1, n2, pre)),
    ("the mask is inverted before it reaches the attention. True already means 'may attend': pass "
     "it on as given, self.attn(..., mask).", _layout, lambda m: ~m),
    ("the block's output is normalised again. In pre-LN only each sublayer's input is normalised: "
     "return x + ffn(norm2(x)) as it is.",
     lambda x, a, f, n1, n2, pre: n2(_layout(x, a, f, n1, n2, True))),
    ("the sublayers' inputs are normalised too. In post-LN the norm comes only after each residual "
     "sum: x = norm1(x + attn(x, mask)).",
     lambda x, a, f, n1, n2, pre: n2((h := n1(x + a(n1(x)))) + f(n2(h)))),
    ("the residual adds the normalised x. In pre-LN the residual stream stays un-normalised: "
     "x = x + attn(norm1(x)), not h + attn(h) with h = norm1(x).",
     lambda x, a, f, n1, n2, pre: (h := n2(n1(x) + a(n1(x)))) + f(h) if pre
     else _layout(x, a, f, n1, n2, pre)),
    ("the feed-forward network reads the block's input instead of the attention sublayer's result: "
     "compute the attention step first, then feed its output to the feed-forward step.",
     lambda x, a, f, n1, n2, pre: x + a(n1(x)) + f(n2(x)) if pre else n2(n1(x + a(x)) + f(x))),
    ("the mask is transposed before it reaches the attention: (B, 1, L, 1) masks queries (rows), not keys. "
     "Pass the block's mask on as given, self.attn(..., mask).",
     _layout, lambda m: None if m is None else m.transpose(-2, -1)),
    ("your block returns its input unchanged: the sublayers add nothing to it (their outputs are multiplied by "
     "zero somewhere, as by a ReZero scale that starts at 0). Add each sublayer's output in full: "
     "x + attn(...), with the norms of this layout.", lambda x, a, f, n1, n2, pre: x),
    ("the LayerNorm sits on the sublayer's output, before the add: x + norm1(attn(x)). Post-LN normalises "
     "the sum, x = norm1(x + attn(x, mask)); pre-LN normalises the sublayer's input, x + attn(norm1(x), mask).",
     lambda x, a, f, n1, n2, pre: (h := x + n1(a(x))) + n2(f(h))),
    ("the LayerNorm is applied to the residual path before the add: norm1(x) + attn(x). In post-LN the norm "
     "comes after the sum: x = norm1(x + attn(x, mask)); x = norm2(x + ffn(x)).",
     lambda x, a, f, n1, n2, pre: n2(h := n1(x) + a(x)) + f(h)),
    ("the feed-forward step's residual adds the block's input, not the result of the attention step: "
     "h = (attention step); return norm2(h + ffn(h)) in post-LN, h + ffn(norm2(h)) in pre-LN.",
     lambda x, a, f, n1, n2, pre: x + f(n2(x + a(n1(x)))) if pre else n2(x + f(n1(x + a(x))))),
    ("the feed-forward step's residual adds norm1 of the block's input: in pre-LN the residual stream is "
     "never normalised, x = x + attn(norm1(x), mask); x = x + ffn(norm2(x)).",
     lambda x, a, f, n1, n2, pre: n1(x) + f(n2(x + a(n1(x))))),
    ("norm2 is missing: in pre-LN the feed-forward sublayer reads a normalised input too, "
     "x = x + ffn(norm2(x)).", lambda x, a, f, n1, n2, pre: (h := x + a(n1(x))) + f(h)),
]


def _plain(norm):
    """``norm`` without its weight and bias (what a LayerNorm built inside forward, or F.layer_norm without them,
    gives), with its eps or with nn.LayerNorm's default."""
    return [lambda t, e=e: torch.nn.functional.layer_norm(t, t.shape[-1:], eps=e) for e in (norm.eps, 1e-5)]


def _keep(x, mask):
    """The padding mask (B, 1, 1, L) as (B, L, 1) floats; None for no mask or any other mask (a causal one)."""
    if mask is None or mask.dim() != 4 or mask.shape[1:3] != (1, 1) or mask.shape[0] != x.shape[0]:
        return None
    return mask[:, 0, 0, :, None].to(x.dtype)


def _pads_zeroed(before: bool, pass_mask: bool = True):
    """x zeroed at its padding positions before the sublayers (``before``), or the output after them."""
    def make(x, r, mask):
        keep = _keep(x, mask)
        if keep is None:
            return []
        m = mask if pass_mask else None
        a = lambda t: r.attn(t, m)  # noqa: E731
        if before:
            return {"out": _layout(x * keep, a, r.ffn, r.norm1, r.norm2, r.norm_first)}
        return {"out": _layout(x, a, r.ffn, r.norm1, r.norm2, r.norm_first) * keep}
    return make


def _step(pre, sub, norm, x):
    """One sublayer step in the block's layout."""
    return x + sub(norm(x)) if pre else norm(x + sub(x))


def _attention_added(x, a, f, n1, n2, pre):
    """The feed-forward step's residual adds the attention's output o, not the attention step's result h."""
    o = a(n1(x)) if pre else a(x)
    return o + f(n2(x + o)) if pre else n2(o + f(n1(x + o)))


def _attention_read(x, a, f, n1, n2, pre):
    """The feed-forward network reads the attention's output o (normalised or not), not the step's result h."""
    if pre:
        o = a(n1(x))
        return [x + o + f(n2(o)), x + o + f(o)]
    o = a(x)
    return n2(n1(x + o) + f(o))


# Two listed messages that get a second formula below.
_RESIDUAL_NORMALISED = next(m for m, *_ in _BLOCK_MISTAKES if m.startswith("the residual adds the normalised x"))
_NORMALISED_AGAIN = next(m for m, *_ in _BLOCK_MISTAKES if m.startswith("the block's output is normalised again"))

# Found by probing learners' answers after the list above was written (kept after it: a tie goes to the first).
_BLOCK_MISTAKES_LATER = [
    ("the feed-forward step's residual adds the attention's output alone, not the result of the attention step: "
     "h = (attention step), then norm2(h + ffn(h)) in post-LN, h + ffn(norm2(h)) in pre-LN.",
     lambda x, a, f, n1, n2, pre: _attention_added(x, a, f, n1, n2, pre)),
    ("the feed-forward network reads x + attn(x) before norm1: in post-LN the attention step ends with the norm, "
     "h = norm1(x + attn(x, mask)), and the feed-forward step reads that h: norm2(h + ffn(h)).",
     lambda x, a, f, n1, n2, pre: [] if pre else n2(n1(s := x + a(x)) + f(s))),
    ("the feed-forward step's residual adds x + attn(x) before norm1: in post-LN the attention step's result is "
     "h = norm1(x + attn(x, mask)), and the feed-forward step adds to that h: norm2(h + ffn(h)).",
     lambda x, a, f, n1, n2, pre: [] if pre else n2((s := x + a(x)) + f(n1(s)))),
    ("the attention's output is indexed with [0], which keeps the first sequence of the batch and adds it to "
     "every sequence: self.attn(x, mask) returns one tensor (B, L, d_model), not a tuple as "
     "nn.MultiheadAttention does, so use it as it is.",
     lambda x, a, f, n1, n2, pre: _layout(x, lambda t: a(t)[0], f, n1, n2, pre)),
    ("the feed-forward step is missing: after the attention step comes x = norm2(x + ffn(x)) in post-LN, "
     "x = x + ffn(norm2(x)) in pre-LN.", lambda x, a, f, n1, n2, pre: _step(pre, a, n1, x)),
    ("the attention step is missing: the block first does x = norm1(x + attn(x, mask)) in post-LN, "
     "x = x + attn(norm1(x), mask) in pre-LN, and then the feed-forward step.",
     lambda x, a, f, n1, n2, pre: [_step(pre, f, n2, x), _step(pre, f, n1, x)]),
    ("the norms' weight and bias (gamma and beta) are not used: a LayerNorm built inside forward "
     "(nn.LayerNorm(d_model)) or F.layer_norm without weight and bias normalises with weight 1 and bias 0. Use "
     "the block's own self.norm1 and self.norm2.",
     lambda x, a, f, n1, n2, pre: [_layout(x, a, f, p1, p2, pre) for p1, p2 in zip(_plain(n1), _plain(n2))]),
    ("each residual sum is halved, (x + attn(...)) / 2: add the sublayer's output to x as it is, "
     "x + attn(...), with no averaging.",
     lambda x, a, f, n1, n2, pre: _layout(x, a, f, n1, n2, pre, total=0.5)),
    ("an activation is applied to the feed-forward network's output: self.ffn(x) already applies its activation "
     "between its two layers, so add its output as it is, x + ffn(...).",
     lambda x, a, f, n1, n2, pre: [_layout(x, a, lambda t, act=act: act(f(t)), n1, n2, pre)
                                   for act in (torch.nn.functional.gelu, torch.relu)]),
    ("the block's output goes through an activation (ReLU or GELU): the block returns its last residual sum "
     "(post-LN: the norm of it) as it is; the activation belongs inside the feed-forward network only.",
     lambda x, a, f, n1, n2, pre: [act(_layout(x, a, f, n1, n2, pre))
                                   for act in (torch.relu, torch.nn.functional.gelu)]),
    ("the feed-forward network reads norm2(norm1(x)) of the block's input: it reads the stream after the "
     "attention step, x = x + attn(norm1(x), mask); then x + ffn(norm2(x)).",
     lambda x, a, f, n1, n2, pre: x + a(n1(x)) + f(n2(n1(x))) if pre else []),
    ("in post-LN the feed-forward network reads a LayerNorm of the attention step's result, which is normalised "
     "already: h = norm1(x + attn(x, mask)); then norm2(h + ffn(h)), with no norm on ffn's input.",
     lambda x, a, f, n1, n2, pre: [] if pre else [n2((h := n1(x + a(x))) + f(n1(h))), n2(h + f(n2(h)))]),
    (_RESIDUAL_NORMALISED,
     lambda x, a, f, n1, n2, pre: (h := n1(x) + a(n1(x))) + f(n2(h)) if pre else []),
    (_NORMALISED_AGAIN, lambda x, a, f, n1, n2, pre: n1(_layout(x, a, f, n1, n2, True)) if pre else []),
    ("in the attention step the LayerNorm sits on the sublayer's output, before the add: x + norm1(attn(x)). "
     "Post-LN normalises the sum, x = norm1(x + attn(x, mask)); pre-LN normalises the sublayer's input, "
     "x + attn(norm1(x), mask).", lambda x, a, f, n1, n2, pre: _step(pre, f, n2, x + n1(a(x)))),
    ("in the feed-forward step the LayerNorm sits on the sublayer's output, before the add: x + norm2(ffn(x)). "
     "Post-LN normalises the sum, x = norm2(x + ffn(x)); pre-LN normalises the sublayer's input, "
     "x + ffn(norm2(x)).", lambda x, a, f, n1, n2, pre: (h := _step(pre, a, n1, x)) + n2(f(h))),
    ("the feed-forward network reads the attention's output alone, not the result of the attention step: "
     "h = x + attn(norm1(x), mask) in pre-LN, h = norm1(x + attn(x, mask)) in post-LN, goes into the "
     "feed-forward step.",
     lambda x, a, f, n1, n2, pre: _attention_read(x, a, f, n1, n2, pre)),
]


def _block_mistakes(norm_first: bool, mode: str = "eval", dropout: float = 0.0):
    """The block's mistakes for this layout; some depend on the mode and the dropout rate it was built with."""
    asked = ("pre-LN (norm_first=True): x = x + attn(norm1(x)); x = x + ffn(norm2(x))" if norm_first else
             "post-LN (norm_first=False): x = norm1(x + attn(x)); x = norm2(x + ffn(x))")
    mistakes = [(f"pre-LN and post-LN are mixed up: you wrote {'post-LN' if norm_first else 'pre-LN'}, but this "
                 f"block was built as {asked}.\nHint: branch on self.norm_first.",
                 lambda x, a, f, n1, n2, pre: _layout(x, a, f, n1, n2, not pre))]
    mistakes += _BLOCK_MISTAKES
    if dropout:
        mistakes += [(f"each sublayer's output is multiplied by {why} in {mode}() mode: a wrong scaling. nn.Dropout "
                      "already scales what it keeps by 1 / (1 - p) during training and does nothing in eval(), so "
                      "add the sublayer's output as it is, x + self.dropout1(attn(...)), with no factor of your own.",
                      functools.partial(_layout, scale=factor))
                     for factor, why in ((1.0 - dropout, f"(1 - p) = {1.0 - dropout:.3g}"),
                                         (1.0 / (1.0 - dropout), f"1 / (1 - p) = {1.0 / (1.0 - dropout):.3g}"))]
    if mode == "train" and not dropout:
        mistakes.append((
            "in train() mode with dropout=0.0 every sublayer output is dropped, as if p were 1: the dropout "
            "rate is the probability to drop, so pass p itself (F.dropout(t, p, self.training), or "
            "nn.Dropout(dropout)), not 1 - p.",
            lambda x, a, f, n1, n2, pre: x if pre else n2(n1(x))))
    mistakes += [
        ("the attention sublayer is written pre-LN, x + attn(norm1(x)), and the feed-forward sublayer post-LN, "
         f"norm2(x + ffn(x)): both sublayers take the block's layout, here {asked}.",
         lambda x, a, f, n1, n2, pre: _step(False, f, n2, _step(True, a, n1, x))),
        ("the attention sublayer is written post-LN, norm1(x + attn(x)), and the feed-forward sublayer pre-LN, "
         f"x + ffn(norm2(x)): both sublayers take the block's layout, here {asked}.",
         lambda x, a, f, n1, n2, pre: _step(True, f, n2, _step(False, a, n1, x))),
    ]
    mistakes += _BLOCK_MISTAKES_LATER
    return [(message, _variant(norm_first, *how)) for message, *how in mistakes] + [
        ("x is multiplied by the padding mask (its padding positions zeroed) before the sublayers: the mask goes "
         "only to the attention, self.attn(..., mask), and x stays as it is.",
         lambda x, r, mask: [_pads_zeroed(True)(x, r, mask), _pads_zeroed(True, False)(x, r, mask)]),
        ("your output is zero at the padding positions: the block computes every position, padding included, and "
         "leaves it there (the mask only keeps padding keys out of the attention); do not zero them.",
         _pads_zeroed(False)),
    ]


_NO_ATTENTION = {"attn.w_o.weight": 0.0, "attn.w_o.bias": 0.0}
_NO_FFN = {"ffn.w2.weight": 0.0, "ffn.w2.bias": 0.0}
_BLOCK_SETTINGS = [
    (_NO_FFN, "with the feed-forward sublayer giving zeros (ffn.w2's weight and bias zero, in yours and in the "
              "reference), your block is right, so the mistake is in the feed-forward half: what it reads (the "
              "attention half's result), norm2, the feed-forward call, dropout2 and its residual sum."),
    (_NO_ATTENTION, "with the attention sublayer giving zeros (attn.w_o's weight and bias zero, in yours and in the "
                    "reference), your block is right, so the mistake is in the attention half: norm1, the "
                    "attention call with the mask, dropout1 and its residual sum."),
    ({**_NO_ATTENTION, **_NO_FFN}, "with both sublayers giving zeros your block is right, but not with either one "
                                   "on: look at how the halves are chained, each half reads the result of the "
                                   "one before it (the feed-forward half reads x after the attention half)."),
]


def _skeleton_probe(pair, label, x, mask, norm_first: bool) -> str:
    """With both sublayers giving zeros, a block is its residuals and norms: name what the learner's returns."""
    n1, n2 = pair.ref.norm1, pair.ref.norm2
    with pair.setting({**_NO_ATTENTION, **_NO_FFN}, both=False), torch.no_grad():
        got = pair.call(label, x, mask).double()
        sums = {
            "x unchanged": x, "norm1(x)": n1(x), "norm2(x)": n2(x), "norm2(norm1(x))": n2(n1(x)),
            "norm1(norm2(x))": n1(n2(x)), "2 * x": 2 * x, "4 * x": 4 * x, "zeros": torch.zeros_like(x),
            "norm2(2 * norm1(x))": n2(2 * n1(x)), "norm2(norm1(x) + x)": n2(n1(x) + x),
            "x + norm1(x) + norm2(x)": x + n1(x) + n2(x), "norm1(2 * x)": n1(2 * x),
            "2 * x + norm1(x)": 2 * x + n1(x), "x + norm1(x)": x + n1(x), "x + norm2(norm1(x))": x + n2(n1(x)),
        }
    want = "x unchanged" if norm_first else "norm2(norm1(x))"
    if got.shape != x.shape or _close(got, sums[want].double(), 3.0):
        return ""
    found = next((what for what, value in sums.items() if _close(got, value.double(), 3.0)), "")
    style = "pre-LN" if norm_first else "post-LN"
    seen = (f"yours returns {found}" if found else
            f"yours returns none of x, norm1(x), norm2(norm1(x)) or a sum of them (it is up to "
            f"{float((got - sums[want].double()).abs().max()):.4g} away)")
    return (f"with both sublayers giving zeros (attn.w_o and ffn.w2 zero), a {style} block is its residuals and norms "
            f"alone and returns {want}; {seen}. So the residual sums or the norms are wrong: "
            + ("x = x + attn(norm1(x), mask); x = x + ffn(norm2(x)), with no norm on the result."
               if norm_first else "x = norm1(x + attn(x, mask)); x = norm2(x + ffn(x)), each norm once."))


@_checker("encoder_block")
def check_encoder_block(cls):
    """Check an ``EncoderBlock(d_model, n_heads, d_ff, dropout=..., norm_first=...)`` class."""
    from ..block import EncoderBlock as Reference

    name = exercise("encoder_block").name
    g = _gen(5)
    d_model, n_heads, d_ff = 16, 4, 32
    pad = torch.tensor([[True] * 5, [True, True, True, False, False]])[:, None, None, :]
    pad3 = torch.tensor([[True, True, False, False], [True] * 4, [True, False, False, False]])[:, None, None, :]
    x = _randn(g, 2, 5, d_model)
    x1, x3 = _randn(g, 1, 3, d_model), _randn(g, 3, 4, d_model)
    for norm_first in (False, True):
        style = "pre-LN (norm_first=True)" if norm_first else "post-LN (norm_first=False)"
        for dropout in (0.3, 0.0):
            ref = Reference(d_model, n_heads, d_ff, dropout=0.0, norm_first=norm_first, implementation="eager")
            pair = Pair(name, cls, (d_model, n_heads, d_ff), ref, seed=41 + norm_first,
                        kwargs={"dropout": dropout, "norm_first": norm_first}, norms=("norm1", "norm2"),
                        rehint=_rehint)
            cases = [
                (f"as {style}, x (2, 5, {d_model}), no mask", x, None),
                (f"as {style} with a padding mask (2, 1, 1, 5)", x, pad),
                (f"as {style} with tiny inputs (about 1e-3)", x * 1e-3, pad),
                (f"as {style} with large inputs (about 1000)", x * 1e3, pad),
                (f"as {style}, a batch of one, x (1, 3, {d_model}), no mask", x1, None),
                (f"as {style}, x (3, 4, {d_model}) with padding in the first and last sequences", x3, pad3),
                (f"as {style}, a batch of one with a padding mask (1, 1, 1, 3)", x1,
                 torch.tensor([True, True, False])[None, None, None, :]),
                (f"as {style} with a causal mask (5, 5) (any mask that broadcasts to (B, H, L, L) is passed on)", x,
                 torch.ones(5, 5, dtype=torch.bool).tril()),
            ]
            for mode in pair.modes(*(("eval",) if dropout else ("eval", "train"))):
                where = f"dropout={dropout}, in {mode}() mode"
                for label, xx, mask in cases:
                    label = f"{label}, {where}"
                    others = [functools.partial(pair.call, f"{lab}, {where}", xo, mo)
                              for lab, xo, mo in cases if xo is not xx]
                    pair.check(
                        label, (xx, mask), _block_mistakes(norm_first, mode, dropout), (xx, ref, mask),
                        "post-LN: x = norm1(x + attn(x, mask)); x = norm2(x + ffn(x)). "
                        "pre-LN: x = x + attn(norm1(x), mask); x = x + ffn(norm2(x)). Take the sizes "
                        "from x, never fixed numbers.", factor=3.0,
                        random_hint="this block was built with dropout=0.0, so nothing in it may be random: "
                                    "build the dropout layers from the dropout argument, nn.Dropout(dropout), "
                                    "not from a fixed rate.",
                        others=others,
                        probes=[pair.settings_probe(label, (xx, mask), _BLOCK_SETTINGS, factor=3.0),
                                functools.partial(_skeleton_probe, pair, label, xx, mask, norm_first)],
                        axes=("sequence", "position", "feature"))
            if dropout:
                _check_dropout(pair, f"as {style}, dropout={dropout}, in train() mode", x, pad, dropout, norm_first)
            else:
                pair.gradients(f"{cases[1][0]}, in eval() mode", x, pad)
        # Other sizes and eps: nothing may be fixed to 16 wide, 4 heads or LayerNorm's default eps. Inputs of
        # small spread (about 0.03), where eps=1e-3 changes what the norms give. (A class of one's own written
        # without the eps argument keeps the default.)
        given_eps = {"eps": 1e-3} if _takes(cls, "eps") else {}
        ref = Reference(24, 3, 40, dropout=0.0, norm_first=norm_first, implementation="eager", **given_eps)
        pair = Pair(name, cls, (24, 3, 40), ref, seed=43 + norm_first, norms=("norm1", "norm2"),
                    kwargs={"dropout": 0.0, "norm_first": norm_first, **given_eps}, rehint=_rehint)
        label = (f"as {style} built with d_model=24, n_heads=3, d_ff=40" + (" and eps=1e-3" if given_eps else "")
                 + ", x (2, 5, 24) of small spread (about 0.03) with a padding mask (2, 1, 1, 5), dropout=0.0, in "
                 "eval() mode")
        small = _randn(g, 2, 5, 24) * 0.03
        pair.cand.eval()
        pair.check(label, (small, pad), _block_mistakes(norm_first, "eval", 0.0), (small, ref, pad),
                   "take every size from the arguments and from x (never 16, 4 or a fixed eps), and give the norms "
                   "the eps the block is built with: LayerNorm(d_model, eps=eps); self.norm1(x) then uses it.",
                   factor=3.0, axes=("sequence", "position", "feature"))


_SUBLAYER_CALLS = {
    "MultiHeadAttention": "self.attn(x, mask) takes x and the mask, by position or as mask=mask (attn_mask= and "
                          "key_padding_mask= are nn.MultiheadAttention's names, not this attention's)",
    "FeedForward": "self.ffn(x) takes only x",
    "LayerNorm": "a LayerNorm takes only x: self.norm1(x)",
}


def _rehint(exc, *values):
    """A sublayer called with a keyword its forward does not have gets its own hint (the exercise's says to keep
    the signature, which is about the block's own forward); other errors stay as they are."""
    found = re.search(r"(\w+)\.forward\(\) got an unexpected keyword argument '(\w+)'", str(exc.__cause__ or ""))
    if not isinstance(exc.__cause__, TypeError) or not found:
        return exc
    cls, keyword = found.groups()
    what = _SUBLAYER_CALLS.get(cls, f"pass the arguments of {cls} as its forward names them")
    return ExerciseError(str(exc).split("\nHint:")[0] + f"\nHint: {cls}'s forward has no argument named "
                         f"{keyword!r}, so your call of it fails: {what}.")


def _takes(cls, argument: str) -> bool:
    """Whether ``cls(...)`` accepts ``argument`` as a keyword (named, or through ``**kwargs``)."""
    try:
        parameters = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == argument or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def _dropped_share(pair, label, x, mask, on: str, off: str, calls: int = 20) -> float:
    """Post-LN: the share of the ``on`` sublayer's output that its dropout drops, over ``calls`` calls.

    On an input of zeros, with the last weights of both sublayers zero, the ``on`` sublayer's last bias all
    ones, the ``off`` sublayer's zero and both norms plain (weight 1, bias 0), a position's output is
    norm2(norm1(dropout(ones))): positive where a value was kept, negative where it was dropped, whatever
    the scale of the kept ones (a norm hides that scale, which this layout therefore cannot show).
    """
    plain = {f"{norm}.{part}": value for norm in ("norm1", "norm2") for part, value in (("weight", 1.0), ("bias", 0.0))}
    with pair.setting({f"{on}.weight": 0.0, f"{on}.bias": 1.0, f"{off}.weight": 0.0, f"{off}.bias": 0.0, **plain}):
        out = torch.stack([pair.call(label, torch.zeros_like(x), mask).detach() for _ in range(calls)])
    return float((out < -1e-3).sum()) / out.numel()  # (a position whose values were all kept comes out all 0)


def _check_dropout(pair, label, x, mask, p: float, norm_first: bool) -> None:
    """In train() mode dropout must happen, on each sublayer's output, and only there.

    With the weights of the sublayers' last layers (attn.w_o, ffn.w2) set to zero, a sublayer outputs
    just its last bias, whatever happens inside it. Keeping one bias and zeroing the other, a right
    block in train() is random only through that sublayer's dropout; with both zero it is not random
    at all and equals the reference (x for pre-LN, norm2(norm1(x)) for post-LN). In pre-LN the
    output minus x is then the kept sublayer's dropped-out bias, which shows the rate: every kept
    value is scaled by 1 / (1 - p). In post-LN the norms hide that scale; the share of values dropped
    is counted instead (:func:`_dropped_share`).
    """
    name = pair.name
    pair.cand.train()
    if torch.equal(pair.call(label, x, mask), pair.call(label, x, mask)):
        if not pair.cand.training:
            raise ExerciseError(
                f"Your {name} switches itself to eval() mode when it is called {label}: after a call in train() "
                "mode, its .training is False, so dropout never happens during training.\nHint: leave the mode "
                "to the caller: no self.eval() or self.train(False) inside forward."
            )
        raise ExerciseError(
            f"Your {name} gives exactly the same output twice {label}, so no dropout is "
            "happening during training.\nHint: apply dropout (self.dropout1, self.dropout2) "
            "to each sublayer's output before adding it to the residual."
        )
    with pair.setting({**_NO_ATTENTION, **_NO_FFN}):
        got, want = pair.call(label, x, mask), pair.want(x, mask)
    if got.shape == want.shape and not _close(got, want, factor=3.0):
        raise ExerciseError(
            f"Your {name} applies dropout (or something else random) outside the sublayers {label}: with "
            "both sublayers giving zeros, the output still changes in train() mode. Dropout belongs on "
            "each sublayer's output only, before the residual sum: x + dropout(attn(...)), never "
            "dropout(x + attn(...)) or dropout of x itself."
        )
    for sublayer, drop, on, off in (("attention", "dropout1", "attn.w_o", "ffn.w2"),
                                    ("feed-forward", "dropout2", "ffn.w2", "attn.w_o")):
        with pair.setting({f"{on}.weight": 0.0, f"{off}.weight": 0.0, f"{off}.bias": 0.0}):
            first = pair.call(label, x, mask)
            if _identical(first, pair.call(label, x, mask)):
                raise ExerciseError(
                    f"Your {name} never drops the {sublayer} sublayer's output {label}. Dropout goes on what "
                    f"the sublayer returns, before the residual sum: x + self.{drop}(...) around it (post-LN: "
                    "inside the norm), not on the sublayer's input."
                )
            if norm_first:
                bias = _sub(name, pair.cand, f"{on}.bias").detach().double()
                ratio = ((first.detach().double() - x.double()) / bias)[..., bias.abs() > 1e-2]
                kept = ratio[ratio.abs() > 1e-6]
                scale = 1.0 / (1.0 - p)
                if kept.numel() and not torch.allclose(kept, torch.full_like(kept, scale), rtol=1e-3, atol=0.0):
                    raise ExerciseError(
                        f"Your {name}'s dropout on the {sublayer} sublayer scales the values it keeps by "
                        f"{float(kept.median()):.3g} {label}, but dropout={p} keeps each value with probability "
                        f"1 - p and scales it by 1 / (1 - p) = {scale:.3g}.\nHint: apply self.{drop} once, built "
                        "from the dropout argument; p is the probability to drop, not to keep."
                    )
        if not norm_first:
            share = _dropped_share(pair, label, x, mask, on, off)
            if abs(share - p) > 0.06:
                why = (": it drops 1 - p, as if p were the probability to keep" if abs(share - (1 - p)) < 0.06 else
                       f": two dropouts in a row drop 1 - (1 - p)^2 = {1 - (1 - p) ** 2:.0%}"
                       if abs(share - (1 - (1 - p) ** 2)) < 0.06 else
                       ": is the rate fixed in the code instead of taken from the dropout argument?")
                raise ExerciseError(
                    f"Your {name}'s dropout on the {sublayer} sublayer drops {share:.0%} of the values {label} "
                    f"(counted over 20 calls), but dropout={p} drops each value with probability p = {p:.0%}{why}"
                    f"\nHint: build self.{drop} = nn.Dropout(dropout) from the dropout argument and apply it once "
                    "to the sublayer's output; p is the probability to drop, not to keep."
                )
