"""Checker of the ``Encoder`` class (notebook 08): the embeddings, every layer in turn with the mask, the final
LayerNorm of a pre-LN stack.

The learner's class is built as a post-LN stack with BERT's embeddings and as a pre-LN stack with sinusoidal
positions, three layers each; every parameter is set to a random value and copied into the package's ``Encoder``,
and both run with no mask, with a (B, 1, 1, L) padding mask, with a causal (1, 1, L, L) mask, with a (B, L)
padding mask (True = real token), with token types, and on a batch of one. Its state-dict keys must be the
package's, and its layers must not share weights.
"""

from __future__ import annotations

import functools
import itertools
import math
import re

import torch

from ._compare import _close, _fitted_factor, _identical, probe
from ._modules import Pair, _copy_params, _sub
from ._run import ExerciseError, _checker, _gen
from .registry import exercise

_P = 0.3  # the dropout rate of the train() check


def _configs():
    from ..encoder import EncoderConfig

    base = dict(vocab_size=40, max_len=12, d_model=16, n_heads=4, d_ff=32, n_layers=3, dropout=0.0, pad_id=0)
    return [
        ("as a post-LN stack of 3 layers with BERT's embeddings (learned positions, 2 token types, a LayerNorm)",
         EncoderConfig(**base, norm_first=False, positions="learned", type_vocab_size=2, embedding_norm=True)),
        ("as a pre-LN stack of 3 layers with sinusoidal positions",
         EncoderConfig(**base, norm_first=True, positions="sinusoidal", scale_embeddings=True)),
    ]


def _as_4d(mask):
    return mask[:, None, None, :] if mask is not None and mask.dim() == 2 else mask


def _stack(ids, mask, types, r, kind="right"):
    """The stack and its usual slips, from the reference's modules ``r`` (eval mode)."""
    m = _as_4d(mask)
    if kind == "no_mask":
        m = None
    elif kind == "mask_inverted" and m is not None:
        m = ~m
    elif kind == "mask_queries":
        if mask is None or mask.dim() != 2:
            return {"out": torch.full((1,), float("nan"))}
        m = mask[:, None, :, None]
    x = r.embeddings(ids, None if kind == "no_types" else types)  # (B, L, d_model)
    layers = list(r.layers)
    layers = {"reversed": layers[::-1], "first_only": layers[:1] * len(layers), "last_only": layers[-1:],
              "one_layer": layers[:1], "no_layers": []}.get(kind, layers)
    final = r.final_norm
    if kind == "norm_first_of_all" and final is not None:
        x = final(x)
    for layer in layers:
        x = layer(x, m) + (x if kind == "layer_residual" else 0.0)
        if kind == "norm_each_layer" and final is not None:
            x = final(x)
    if final is not None and kind not in ("no_final_norm", "norm_each_layer", "norm_first_of_all"):
        x = final(x)
    return {"out": x}


_MISTAKES = [
    ("no_mask", "the mask is not passed to the layers: call layer(x, mask) for every layer, so no token attends "
                "to padding."),
    ("mask_inverted", "the mask is inverted before the layers get it: True already means 'a real token, may be "
                      "attended to', so pass it on as given."),
    ("mask_queries", "the (B, L) mask was turned into (B, 1, L, 1), which masks queries (rows) instead of keys: "
                     "mask[:, None, None, :] gives (B, 1, 1, L), one row of keys for every query."),
    ("reversed", "the layers run in reverse order: the first layer reads the embeddings and the last one writes "
                 "the output, `for layer in self.layers:`."),
    ("first_only", "the first layer is applied N times: each of the N layers runs once, with its own weights, "
                   "`for layer in self.layers: x = layer(x, mask)`."),
    ("last_only", "only the last layer's work reaches the output: every layer must read what the one before it "
                  "wrote, x = layer(x, mask), starting from the embeddings (not layer(embeddings) each time, and "
                  "not only self.layers[-1])."),
    ("one_layer", "only the first layer runs: loop over all of self.layers (a `return` inside the loop stops it "
                  "after one layer)."),
    ("no_layers", "your Encoder returns the embeddings: no layer is applied. Run every layer in turn, "
                  "x = layer(x, mask)."),
    ("no_final_norm", "the final LayerNorm is missing: a pre-LN stack ends with x = self.final_norm(x) after the "
                      "last layer (its residual stream is never normalised otherwise)."),
    ("norm_each_layer", "the final LayerNorm is applied after every layer: it comes once, after the last layer."),
    ("norm_first_of_all", "the final LayerNorm is applied to the embeddings, before the layers: it goes after "
                          "the last layer."),
    ("layer_residual", "a residual is added around each layer, x = x + layer(x, mask): the blocks have their "
                       "residual connections inside already, so x = layer(x, mask)."),
    ("no_types", "the token types do not reach the embeddings: call self.embeddings(token_ids, token_type_ids)."),
]


_STACK_MISTAKES = [(message, functools.partial(_stack, kind=kind)) for kind, message in _MISTAKES]


_HINT = ("x = self.embeddings(token_ids, token_type_ids); a (B, L) mask becomes mask[:, None, None, :]; then "
         "x = layer(x, mask) for every layer, in order; a pre-LN stack ends with x = self.final_norm(x).")


# ----------------------------------------------------------------------------------------------
# Probes


@probe
def _depth_probe(pair, label, ids, mask, types) -> str:
    """Is the answer what the stack gives after some other number of layers (with or without the final norm)?"""
    r = pair.ref
    try:
        got = pair.call(label, ids, mask, types)
    except ExerciseError:
        return ""
    m = _as_4d(mask)
    with torch.no_grad():
        after = list(itertools.accumulate(r.layers, lambda h, layer: layer(h, m), initial=r.embeddings(ids, types)))
    n, final = len(r.layers), r.final_norm
    for k, normed in itertools.product(range(n + 1), (False, True) if final is not None else (False,)):
        if (k, normed) != (n, final is not None) and _close(got, final(after[k]) if normed else after[k], 3.0):
            with_norm = ", then the final LayerNorm" if normed else (", without the final LayerNorm"
                                                                    if final is not None else "")
            return (f"your output is what the stack gives after {k} of its {n} layers{with_norm}: run every one "
                    "of self.layers once, in order, each reading the previous one's output"
                    + (", then self.final_norm once." if final is not None else "."))
    return ""


def _through_layers(ref, x, mask):
    """The reference's layers on ``x`` (the mask made (B, 1, 1, L) as its forward does), before any final norm."""
    mask = _as_4d(mask)
    for layer in ref.layers:
        x = layer(x, mask)
    return x


def _first_input_probe(pair, label, ids, mask, types) -> str:
    """Whether the answer is the reference stack fed the embeddings' output times some factor c (black-box: the
    learner's code may run in another process, where no hook on its layers is seen)."""
    try:
        with torch.no_grad():
            got = pair.call(label, ids, mask, types).double()
    except ExerciseError:
        return ""
    ref = pair.ref
    with torch.no_grad():
        emb = ref.embeddings(ids, types)

        def error(c: float) -> float:
            out = _through_layers(ref, emb * c, mask)
            out = ref.final_norm(out) if ref.final_norm is not None else out
            return float((out.double() - got).abs().max()) if out.shape == got.shape else math.inf

        c = _fitted_factor(error, -2, 2, 1e-4 * float(got.abs().max()) + 1e-6)
    if c is None or abs(c - 1) < 1e-3:
        return ""
    return (f"your output is the stack run on the embeddings' output times {c:.4g}: what reaches the first layer "
            "is scaled. The embeddings already do their scaling, positions and norm: pass their output, "
            "self.embeddings(token_ids, token_type_ids), to the first layer as it is.")


def _final_probe(pair, label, ids, mask, types) -> str:
    """A residual too many at the end: the last layer's output plus the final LayerNorm of it (pre-LN), or the
    stack's output plus the embeddings' output (a residual around the whole stack)."""
    ref = pair.ref
    try:
        with torch.no_grad():
            got = pair.call(label, ids, mask, types)
    except ExerciseError:
        return ""
    with torch.no_grad():
        embedded = ref.embeddings(ids, types)
        h = _through_layers(ref, embedded, mask)
        if h.shape != got.shape:
            return ""
        if ref.final_norm is not None and _close(got, h + ref.final_norm(h), 3.0):
            return ("your output is the last layer's output plus its final LayerNorm, x + self.final_norm(x): the "
                    "final LayerNorm has no residual around it. A pre-LN stack ends with x = self.final_norm(x).")
        out = h if ref.final_norm is None else ref.final_norm(h)
        if _close(got, out + embedded, 3.0):
            return ("your output is the stack's output plus the embeddings' output: a residual around the whole "
                    "stack. Each layer holds its own residuals; return what the last layer gives"
                    + (", after self.final_norm." if ref.final_norm is not None else ", as it is."))
    return ""


def _ending_probe(pair, label, ids, mask, types) -> str:
    """Two endings of its own: the padding's rows zeroed, or a post-LN output normalised once more."""
    try:
        with torch.no_grad():
            got, want = pair.call(label, ids, mask, types), pair.want(ids, mask, types)
    except ExerciseError:
        return ""
    if got.shape != want.shape:
        return ""
    if mask is not None and mask.dim() == 4 and mask.shape[-2] == 1:
        real = mask[:, 0, 0, :, None].expand_as(want)
        if not bool(real.all()) and _close(got[real], want[real], 3.0) and bool((got[~real] == 0).all()):
            return ("your output is right at the real tokens and 0 at the padding, where the stack gives what its "
                    "layers compute: a padding position still attends to the real tokens, and what comes out there "
                    "is ignored later (by the loss or the pooling). Return the last layer's output as it is, "
                    "without zeroing the padding's rows.")
    if pair.ref.final_norm is None:
        d = want.shape[-1]
        again = torch.nn.functional.layer_norm(want, (d,))  # the reference's output normalised once more
        if _close(torch.nn.functional.layer_norm(got, (d,)), again, 3.0) and not _close(got, want, 3.0):
            return ("your output is the right one normalised once more, as if a LayerNorm came after the last "
                    "block: a post-LN block already ends with its own norm2, and only pre-LN (norm_first=True) adds "
                    "a final LayerNorm. For post-LN, final_norm is None (the exercise's __init__ builds it only when "
                    "config.norm_first) and forward skips it.")
    return ""


def _attention_off(n_layers: int):
    """With every layer's attention giving zeros, the mask no longer matters: right then means the mask is wrong."""
    off = {f"layers.{i}.attn.w_o.{p}": 0.0 for i in range(n_layers) for p in ("weight", "bias")}
    return [(off, "with the attention of every layer giving zeros (w_o zero, in yours and in the reference) your "
                  "Encoder is right, so the mistake is in what reaches the attention: the mask. Pass the mask you are "
                  "given, and only that (None when there is none): a (B, L) padding mask becomes (B, 1, 1, L); a mask "
                  "with 4 dimensions goes to every layer as given; True means a real token.")]


# With the final LayerNorm's gain 1 and bias 0, applying it once or twice is alike: right then names it.
_FINAL_NORM_PLAIN = [({"final_norm.weight": 1.0, "final_norm.bias": 0.0},
                      "with the final LayerNorm's gain 1 and bias 0 (in yours and in the reference) your Encoder is "
                      "right, so the mistake is in the final LayerNorm: apply it once, after the last layer, "
                      "x = self.final_norm(x).")]


@probe
def _one_layer_probe(pair, cls, cfg, label, ids, mask, types) -> str:
    """Built with one layer, is the learner's stack right? Then the layers are not chained as they should be."""
    try:
        single = _pair(pair.name, cls, cfg.replace(n_layers=1), seed=0)  # its weights: the learner's stack's
        for source, target in ((pair.cand, single.cand), (single.cand, single.ref)):
            _copy_params(pair.name, source, target, single.paths)
        single.cand.eval()
        got = single.call(f"{label}, built with n_layers=1", ids, mask, types)
    except ExerciseError:
        return ""
    if not _close(got, single.want(ids, mask, types), 3.0):
        return ""
    return (f"built with n_layers=1 your Encoder is right, with {cfg.n_layers} it is not, so the mistake is in how "
            "the layers are chained: each layer reads the previous one's output, every layer once, in order.")


# ----------------------------------------------------------------------------------------------
# The check


def _pair(name, cls, cfg, seed) -> Pair:
    """The learner's stack built from ``cfg``, every parameter random, and the reference with the same values."""
    from ..encoder import Encoder as Reference

    ref = Reference(cfg.replace(implementation="eager"))
    # each LayerNorm of the reference takes over the learner's eps, which their LayerNorm may keep
    norms = [path for path, module in ref.named_modules() if type(module).__name__ == "LayerNorm"]
    return Pair(name, cls, (cfg,), ref, seed=seed, norms=norms, inputs=("token_ids", "mask", "token_type_ids"),
                what="the encoded tokens (B, L, d_model)", before=functools.partial(_layout, name, cfg))


_NEW_BLOCKS = ("\nHint: build a new block for each layer, nn.ModuleList(EncoderBlock(...) for _ in "
               "range(config.n_layers)), as the exercise's __init__ does.")


def _layout(name, cfg, cand, ref) -> None:
    """n_layers blocks of their own, and the package's state-dict keys (a checkpoint loads by them)."""
    # named_modules() lists a module object once: one block listed n_layers times counts once
    layers = [path for path, _ in cand.named_modules() if re.fullmatch(r"layers\.\d+", path)]
    if len(layers) != cfg.n_layers:
        raise ExerciseError(
            f"Your {name}'s self.layers holds {len(layers)} distinct block{'s' if len(layers) != 1 else ''}, but "
            f"config.n_layers={cfg.n_layers}: an encoder has {cfg.n_layers} layers, each a block of its own with its "
            f"own weights (one block object listed {cfg.n_layers} times shares its weights).{_NEW_BLOCKS}")
    missing = sorted(set(ref.state_dict()) - set(cand.state_dict()))
    if missing:
        shown = ", ".join(f"`{k}`" for k in missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4 else "")
        raise ExerciseError(
            f"Your {name} has no {shown} in its state dict, which the course's Encoder has; a checkpoint's weights "
            "load by these names.\nHint: keep the __init__ the exercise gives: self.embeddings, self.layers (an "
            "nn.ModuleList of n_layers blocks) and self.final_norm.")
    layer_params = [_sub(name, cand, path) for path, _ in ref.named_parameters() if path.startswith("layers.")]
    if len({p.data_ptr() for p in layer_params}) < len(layer_params):
        raise ExerciseError(
            f"Your {name}'s layers share their weights: an encoder has {cfg.n_layers} layers with their own "
            f"weights.{_NEW_BLOCKS}")


def _cases(cfg, g):
    ids = torch.randint(1, cfg.vocab_size, (3, 7), generator=g)
    ids[1, 4:] = cfg.pad_id
    ids[2, 2:] = cfg.pad_id
    real = ids != cfg.pad_id  # (3, 7)
    causal = torch.ones(7, 7, dtype=torch.bool).tril()[None, None]  # (1, 1, 7, 7)
    one = torch.randint(1, cfg.vocab_size, (1, 5), generator=g)
    one[0, 3:] = cfg.pad_id
    cases = [
        ("token_ids (3, 7), no mask", ids, None, None),
        ("with a padding mask (3, 1, 1, 7)", ids, real[:, None, None, :], None),
        ("with a causal mask (1, 1, 7, 7)", ids, causal, None),
        ("with a (3, 7) padding mask (True = real token)", ids, real, None),
    ]
    if cfg.type_vocab_size:
        cases.append(("with a padding mask (3, 1, 1, 7) and token_type_ids (3, 7)", ids, real[:, None, None, :],
                      torch.randint(0, cfg.type_vocab_size, (3, 7), generator=g)))
    cases.append(("a batch of one, token_ids (1, 5) with a (1, 5) padding mask", one, one != cfg.pad_id, None))
    return cases


@_checker("encoder_stack")
def check_encoder_stack(cls):
    """Check an ``Encoder(config)`` class: ``forward(token_ids, mask=None, token_type_ids=None) -> (B, L, d_model)``."""
    name = exercise("encoder_stack").name
    g = _gen(9)
    for index, (desc, cfg) in enumerate(_configs()):
        pair = _pair(name, cls, cfg, 80 + index)
        cases = _cases(cfg, g)
        for mode in pair.modes("eval", "train"):
            for case, ids, mask, types in cases:
                label = f"{desc}, {case}, in {mode}() mode"
                pair.check(
                    label, (ids, mask, types), _STACK_MISTAKES, (ids, mask, types, pair.ref), _HINT, factor=3.0,
                    unrepeatable="something random is active in eval mode, or something is kept from one call to "
                                 "the next.\nHint: the stack needs no dropout of its own (the embeddings and the "
                                 "layers have theirs); do not store results on self inside forward.",
                    random_hint="this stack was built with dropout=0.0, so nothing in it may be random.",
                    probes=[functools.partial(_first_input_probe, pair, label, ids, mask, types),
                            functools.partial(_depth_probe, pair, label, ids, mask, types),
                            pair.settings_probe(label, (ids, mask, types), _attention_off(cfg.n_layers), 3.0),
                            functools.partial(_one_layer_probe, pair, cls, cfg, label, ids, mask, types),
                            pair.settings_probe(label, (ids, mask, types),
                                                _FINAL_NORM_PLAIN if pair.ref.final_norm is not None else [], 3.0),
                            functools.partial(_final_probe, pair, label, ids, mask, types),
                            functools.partial(_ending_probe, pair, label, ids, mask, types)],
                    axes=("sequence", "position", "feature"))
        case, ids, mask, types = cases[1]
        pair.gradients(f"{desc}, {case}, in eval() mode", ids, mask, types)
    _check_dropout(name, cls, _configs()[0][1].replace(dropout=_P), g)


def _check_dropout(name, cls, cfg, g) -> None:
    """With dropout in the embeddings and the layers, train() mode must be random (nothing switches it off)."""
    _, ids, mask, _ = _cases(cfg, g)[1]
    pair = _pair(name, cls, cfg, 90)
    pair.cand.train()
    label = f"as a post-LN stack of 3 layers, dropout={cfg.dropout}, with a padding mask (3, 1, 1, 7), in train() mode"
    if _identical(pair.call(label, ids, mask), pair.call(label, ids, mask)):
        raise ExerciseError(
            f"Your {name} gives exactly the same output twice {label}, so no dropout happens during training: "
            "something in forward switches the embeddings or the layers to eval() (or the modules were built "
            "without the config's dropout).\nHint: forward only calls the modules; train() and eval() are the "
            "caller's to set.")
    pair.cand.eval()
    label = label.replace("in train() mode", "in eval() mode")
    first, second = pair.call(label, ids, mask), pair.call(label, ids, mask)
    if not _identical(first, second) or not _close(first, pair.want(ids, mask), 3.0):
        raise ExerciseError(
            f"Your {name} {'gives a different output each time' if not _identical(first, second) else 'is wrong'} "
            f"{label}, where dropout does nothing: some dropout of your own stays on in eval() mode.\nHint: the "
            "stack needs no dropout of its own (the embeddings and the layers have theirs); F.dropout(x, p) drops in "
            "eval() too unless it is given training=self.training.")
    pair.cand.train()
    _check_own_dropout(pair, label.replace("in eval() mode", "in train() mode"), ids, mask)


def _check_own_dropout(pair, label, ids, mask) -> None:
    """The stack in train() with every submodule but its own dropout layers in eval(): a right stack is then
    the eval() stack, as all its dropout lives in the embeddings and the layers. A dropout of the stack's
    own (an nn.Dropout on self, or F.dropout with self.training) still drops."""
    # by type name: the grader's checker sees mirrors of the learner's modules, named like them
    holders = ("Dropout", "ModuleList", "Sequential", "ModuleDict")
    own = [child for child in pair.cand.children() if not all(type(m).__name__ in holders for m in child.modules())]
    for child in own:
        child.eval()
    label = label.replace("in train() mode", "in train() mode, its embeddings and layers switched to eval()")
    try:
        first, second = pair.call(label, ids, mask), pair.call(label, ids, mask)
    finally:
        pair.cand.train()
    random = not _identical(first, second)
    if random or not _close(first, pair.want(ids, mask), 3.0):
        why = ("still gives a different output each time {}: a dropout of the stack's own drops on top of theirs, so "
               "training drops more than the config's rate" if random else
               "differs from its eval() output {}: something of the stack's own acts in train() mode")
        raise ExerciseError(
            f"Your {pair.name} {why.format(label)}.\nHint: the stack needs no dropout of its own (the embeddings and "
            "every block have theirs), and nothing in forward depends on self.training; forward only calls them.")
