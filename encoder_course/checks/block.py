"""Checker of the ``EncoderBlock`` class (notebook 07): post-LN and pre-LN, residuals, norms, the mask, dropout."""

from __future__ import annotations

import functools

import torch

from ._compare import _close, _identical
from ._modules import Pair, _sub
from ._run import ExerciseError, _checker, _gen, _randn
from .multi_head import _MHA_PATHS
from .registry import exercise

_BLOCK_PATHS = (
    [f"attn.{p}" for p in _MHA_PATHS]
    + [f"ffn.{w}.{p}" for w in ("w1", "w2") for p in ("weight", "bias")]
    + [f"{n}.{p}" for n in ("norm1", "norm2") for p in ("weight", "bias")]
)


def _block(x, r, mask, norm_first, kind="right", scale=1.0):
    """The block and its usual mistakes, from the reference's submodules ``r`` (in eval mode)."""
    if kind == "no_mask":
        attn = r.attn
    elif kind == "mask_inverted":
        attn = (lambda t: r.attn(t, ~mask))
    elif kind == "mask_transposed":
        attn = (lambda t: r.attn(t, None if mask is None else mask.transpose(-2, -1)))
    else:
        attn = (lambda t: r.attn(t, mask))
    ffn, n1, n2 = r.ffn, r.norm1, r.norm2
    if kind == "scaled":  # each sublayer's output multiplied by a constant
        attn_once, ffn_once = attn, ffn
        attn, ffn = (lambda t: scale * attn_once(t)), (lambda t: scale * ffn_once(t))
    if kind == "identity":
        return {"out": x}
    if kind == "all_dropped":  # both sublayers' outputs dropped entirely
        return {"out": x if norm_first else n2(n1(x))}
    if kind == "norm_branch":  # the norm on the sublayer's output, before the add
        x = x + n1(attn(x))
        return {"out": x + n2(ffn(x))}
    if kind == "norm_skip":  # post-LN with the norm on the residual path: norm1(x) + attn(x)
        x = n1(x) + attn(x)
        return {"out": n2(x) + ffn(x)}
    if kind == "res_from_input":  # the second residual adds the block's input
        h = x + attn(n1(x)) if norm_first else n1(x + attn(x))
        return {"out": x + ffn(n2(h)) if norm_first else n2(x + ffn(h))}
    if kind == "pre_res_norm1":  # pre-LN whose second residual adds norm1(x) of the block's input
        h = n1(x)
        return {"out": h + ffn(n2(x + attn(h)))}
    if kind == "pre_no_norm2":  # pre-LN without the second norm
        x = x + attn(n1(x))
        return {"out": x + ffn(x)}
    if kind == "swap_norms":
        n1, n2 = n2, n1
    elif kind == "norm1_twice":
        n2 = n1
    elif kind == "norm2_twice":
        n1 = n2
    elif kind == "ffn_first":  # the norms either stay in place or travel with their sublayer
        outs = []
        for first_norm, second_norm in ((n1, n2), (n2, n1)):
            if norm_first:
                y = x + ffn(first_norm(x))
                outs.append({"out": y + attn(second_norm(y))})
            else:
                y = first_norm(x + ffn(x))
                outs.append({"out": second_norm(y + attn(y))})
        return outs
    elif kind == "no_res_attn":
        return _block_one_residual(x, attn, ffn, n1, n2, norm_first, residual_attn=False)
    elif kind == "no_res_ffn":
        return _block_one_residual(x, attn, ffn, n1, n2, norm_first, residual_ffn=False)
    if kind == "swap_ln":
        norm_first = not norm_first
    if kind in ("attn_twice", "ffn_twice"):
        attn = ffn = attn if kind == "attn_twice" else ffn
    if kind == "post_no_norm2":  # post-LN that returns before the second norm
        x = n1(x + attn(x))
        return {"out": x + ffn(x)}
    if kind == "pre_out_norm":  # pre-LN with an extra norm around the block's output
        x = x + attn(n1(x))
        return {"out": n2(x + ffn(n2(x)))}
    if kind == "sandwich":  # post-LN that also normalises each sublayer's input
        x = n1(x + attn(n1(x)))
        return {"out": n2(x + ffn(n2(x)))}
    if norm_first:
        if kind == "norm_residual":
            h = n1(x)
            x = h + attn(h)
            h = n2(x)
            return {"out": h + ffn(h)}
        if kind == "no_residual":
            x = attn(n1(x))
            return {"out": ffn(n2(x))}
        if kind == "parallel":
            return {"out": x + attn(n1(x)) + ffn(n2(x))}
        x = x + attn(n1(x))
        return {"out": x + ffn(n2(x))}
    if kind == "no_residual":
        x = n1(attn(x))
        return {"out": n2(ffn(x))}
    if kind == "parallel":
        a = n1(x + attn(x))
        return {"out": n2(a + ffn(x))}
    x = n1(x + attn(x))
    return {"out": n2(x + ffn(x))}


def _block_one_residual(x, attn, ffn, n1, n2, norm_first, residual_attn=True, residual_ffn=True):
    if norm_first:
        a = attn(n1(x))
        x = x + a if residual_attn else a
        f = ffn(n2(x))
        return {"out": x + f if residual_ffn else f}
    a = attn(x)
    x = n1(x + a if residual_attn else a)
    f = ffn(x)
    return {"out": n2(x + f if residual_ffn else f)}


# Each mistake of the block: its explanation and the name `_block` computes it under.
_BLOCK_MISTAKES = [
    ("no_residual",
     "a residual connection is missing: each sublayer's output is added to its input (x + ...)."),
    ("swap_norms",
     "norm1 and norm2 are swapped: norm1 goes with the attention sublayer, norm2 with the feed-forward."),
    ("no_res_attn",
     "the residual connection around the attention sublayer is missing: add the attention's "
     "output to its input (x + ...)."),
    ("no_res_ffn",
     "the residual connection around the feed-forward sublayer is missing: add the feed-forward "
     "output to its input (x + ...)."),
    ("norm1_twice",
     "norm1 is used for both sublayers: the feed-forward sublayer has its own LayerNorm, norm2."),
    ("norm2_twice",
     "norm2 is used for both sublayers: the attention sublayer has its own LayerNorm, norm1."),
    ("ffn_first",
     "the sublayers are in the wrong order: attention comes first, then the feed-forward network."),
    ("no_mask",
     "the mask is not passed to the attention: call self.attn(..., mask)."),
    ("post_no_norm2",
     "the second LayerNorm is missing: in post-LN the block ends with x = norm2(x + ffn(x))."),
    ("attn_twice",
     "the attention sublayer is used twice: the second sublayer is the feed-forward network, self.ffn(...)."),
    ("ffn_twice",
     "the feed-forward network is used twice: the first sublayer is the attention, self.attn(..., mask)."),
    ("mask_inverted",
     "the mask is inverted before it reaches the attention. True already means 'may attend': pass "
     "it on as given, self.attn(..., mask)."),
    ("pre_out_norm",
     "the block's output is normalised again. In pre-LN only each sublayer's input is normalised: "
     "return x + ffn(norm2(x)) as it is."),
    ("sandwich",
     "the sublayers' inputs are normalised too. In post-LN the norm comes only after each residual "
     "sum: x = norm1(x + attn(x, mask))."),
    ("norm_residual",
     "the residual adds the normalised x. In pre-LN the residual stream stays un-normalised: "
     "x = x + attn(norm1(x)), not h + attn(h) with h = norm1(x)."),
    ("parallel",
     "the feed-forward network reads the block's input instead of the attention sublayer's result: "
     "compute the attention step first, then feed its output to the feed-forward step."),
    ("mask_transposed",
     "the mask is transposed before it reaches the attention: (B, 1, L, 1) masks queries (rows), not keys. "
     "Pass the block's mask on as given, self.attn(..., mask)."),
    ("identity",
     "your block returns its input unchanged: the sublayers add nothing to it (their outputs are multiplied by "
     "zero somewhere, as by a ReZero scale that starts at 0). Add each sublayer's output in full: "
     "x + attn(...), with the norms of this layout."),
    ("norm_branch",
     "the LayerNorm sits on the sublayer's output, before the add: x + norm1(attn(x)). Post-LN normalises "
     "the sum, x = norm1(x + attn(x, mask)); pre-LN normalises the sublayer's input, x + attn(norm1(x), mask)."),
    ("norm_skip",
     "the LayerNorm is applied to the residual path before the add: norm1(x) + attn(x). In post-LN the norm "
     "comes after the sum: x = norm1(x + attn(x, mask)); x = norm2(x + ffn(x))."),
    ("res_from_input",
     "the feed-forward step's residual adds the block's input, not the result of the attention step: "
     "h = (attention step); return norm2(h + ffn(h)) in post-LN, h + ffn(norm2(h)) in pre-LN."),
    ("pre_res_norm1",
     "the feed-forward step's residual adds norm1 of the block's input: in pre-LN the residual stream is "
     "never normalised, x = x + attn(norm1(x), mask); x = x + ffn(norm2(x))."),
    ("pre_no_norm2",
     "norm2 is missing: in pre-LN the feed-forward sublayer reads a normalised input too, "
     "x = x + ffn(norm2(x))."),
]


def _block_mistakes(norm_first: bool, mode: str = "eval", dropout: float = 0.0):
    """The block's mistakes for this layout; some depend on the mode and the dropout rate it was built with."""
    extra = []
    if dropout:
        for factor, why in ((1.0 - dropout, f"(1 - p) = {1.0 - dropout:.3g}"),
                            (1.0 / (1.0 - dropout), f"1 / (1 - p) = {1.0 / (1.0 - dropout):.3g}")):
            extra.append((
                f"each sublayer's output is multiplied by {why} in {mode}() mode: a wrong scaling. nn.Dropout "
                "already scales what it keeps by 1 / (1 - p) during training and does nothing in eval(), so "
                "add the sublayer's output as it is, x + self.dropout1(attn(...)), with no factor of your own.",
                functools.partial(_block, norm_first=norm_first, kind="scaled", scale=factor)))
    if mode == "train" and not dropout:
        extra.append((
            "in train() mode with dropout=0.0 every sublayer output is dropped, as if p were 1: the dropout "
            "rate is the probability to drop, so pass p itself (F.dropout(t, p, self.training), or "
            "nn.Dropout(dropout)), not 1 - p.",
            functools.partial(_block, norm_first=norm_first, kind="all_dropped")))
    return _block_mistakes_of(norm_first) + extra


@functools.lru_cache(maxsize=None)
def _block_mistakes_of(norm_first: bool):
    asked = ("pre-LN (norm_first=True): x = x + attn(norm1(x)); x = x + ffn(norm2(x))" if norm_first else
             "post-LN (norm_first=False): x = norm1(x + attn(x)); x = norm2(x + ffn(x))")
    wrote = "post-LN" if norm_first else "pre-LN"
    return [
        (f"pre-LN and post-LN are mixed up: you wrote {wrote}, but this block was built as {asked}.\n"
         "Hint: branch on self.norm_first.",
         lambda x, r, m: _block(x, r, m, norm_first, "swap_ln")),
    ] + [(message, functools.partial(_block, norm_first=norm_first, kind=kind))
         for kind, message in _BLOCK_MISTAKES]


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
    ref = pair.ref
    with pair.setting({**_NO_ATTENTION, **_NO_FFN}, both=False), torch.no_grad():
        got = pair.call(label, x, mask).double()
    with torch.no_grad():
        n1, n2 = ref.norm1, ref.norm2
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
            pair = Pair(name, cls, (d_model, n_heads, d_ff), ref, _BLOCK_PATHS, seed=41 + norm_first,
                        kwargs={"dropout": dropout, "norm_first": norm_first}, norms=("norm1", "norm2"))
            cases = [
                (f"as {style}, x (2, 5, {d_model}), no mask", x, None),
                (f"as {style} with a padding mask (2, 1, 1, 5)", x, pad),
                (f"as {style} with tiny inputs (about 1e-3)", x * 1e-3, pad),
                (f"as {style} with large inputs (about 1000)", x * 1e3, pad),
                (f"as {style}, a batch of one, x (1, 3, {d_model}), no mask", x1, None),
                (f"as {style}, x (3, 4, {d_model}) with padding in the first and last sequences", x3, pad3),
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
            if not dropout:
                pair.gradients(f"{cases[1][0]}, in eval() mode", x, pad)
                continue
            pair.cand.train()
            label_t = f"as {style}, dropout={dropout}, in train() mode"
            if torch.equal(pair.call(label_t, x, pad), pair.call(label_t, x, pad)):
                raise ExerciseError(
                    f"Your {name} gives exactly the same output twice {label_t}, so no dropout is "
                    "happening during training.\nHint: apply dropout (self.dropout1, self.dropout2) "
                    "to each sublayer's output before adding it to the residual."
                )
            _check_dropout_place(pair, label_t, x, pad, dropout, norm_first)


def _check_dropout_place(pair, label, x, mask, p: float, norm_first: bool) -> None:
    """Dropout belongs on each sublayer's output, and only there.

    With the weights of the sublayers' last layers (attn.w_o, ffn.w2) set to zero, a sublayer outputs
    just its last bias, whatever happens inside it. Keeping one bias and zeroing the other, a right
    block in train() is random only through that sublayer's dropout; with both zero it is not random
    at all and equals the reference (x for pre-LN, norm2(norm1(x)) for post-LN). In pre-LN the
    output minus x is then the kept sublayer's dropped-out bias, which shows the rate: every kept
    value is scaled by 1 / (1 - p).
    """
    name, cand, ref = pair.name, pair.cand, pair.ref

    def zero(path):
        for module in (cand, ref):
            _sub(name, module, path).data.zero_()

    zero("attn.w_o.weight")
    zero("ffn.w2.weight")
    ffn_bias = _sub(name, cand, "ffn.w2.bias").detach().clone()
    cand.train()
    for sublayer, drop, off, on in (("attention", "dropout1", "ffn.w2.bias", None),
                                    ("feed-forward", "dropout2", "attn.w_o.bias", "ffn.w2.bias")):
        zero(off)
        if on is not None:
            _sub(name, cand, on).data.copy_(ffn_bias)
        first = pair.call(label, x, mask)
        if _identical(first, pair.call(label, x, mask)):
            raise ExerciseError(
                f"Your {name} never drops the {sublayer} sublayer's output {label}. Dropout goes on what "
                f"the sublayer returns, before the residual sum: x + self.{drop}(...) around it (post-LN: "
                "inside the norm), not on the sublayer's input."
            )
        if norm_first:
            bias = _sub(name, cand, "attn.w_o.bias" if on is None else on).detach().double()
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
    zero("ffn.w2.bias")
    got = pair.call(label, x, mask)
    want = ref(x, mask)
    if got.shape == want.shape and not _close(got, want, factor=3.0):
        raise ExerciseError(
            f"Your {name} applies dropout (or something else random) outside the sublayers {label}: with "
            "both sublayers giving zeros, the output still changes in train() mode. Dropout belongs on "
            "each sublayer's output only, before the residual sum: x + dropout(attn(...)), never "
            "dropout(x + attn(...)) or dropout of x itself."
        )
