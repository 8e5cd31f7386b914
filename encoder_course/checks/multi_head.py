"""Checker of the ``MultiHeadAttention`` class (notebook 04): heads split and merged, projections, masks."""

from __future__ import annotations

import functools
import itertools
import math

import torch
import torch.nn.functional as F

from ._compare import _close, _describe, _fitted_factor, probe
from ._modules import Pair, _build, _copy_params
from ._run import ExerciseError, _checker, _gen, _randn
from .attention import _attention, _fragile
from .registry import exercise

_MHA_PATHS = [f"{w}.{p}" for w in ("w_q", "w_k", "w_v", "w_o") for p in ("weight", "bias")]
_QKV = ("w_q", "w_k", "w_v")
# How the features (B, L, d_model) are viewed as heads before they move to (B, H, L, d_head), and merged back:
# "transpose" views them as (B, L, H, d_head), as it should; "plain" as (B, H, L, d_head) directly; "head_last"
# as (B, L, d_head, H), where the features of one head are not contiguous.
_VIEWS = {"transpose": "blhd", "plain": "bhld", "head_last": "bldh"}


def _mha(x, p, n_heads, mask=None, *, split="transpose", merge="transpose", divide=None, use_wo=True,
         project_v=True, shared=None, bias=_QKV + ("w_o",), transpose_w=True, causal=False, residual=False, route=None,
         mask_t=False, fragile=None, **attn_kw):
    """Multi-head attention and its usual mistakes, as a list of results: in float64, or in x's dtype with a
    ``fragile`` softmax (one that breaks on large scores, see ``_fragile``). ``divide(d_model, n_heads)``: what
    the scores are divided by instead of sqrt(d_head); ``shared``: the projection each of q, k, v uses instead;
    ``bias``: the projections whose bias is added."""
    b, length, d_model = x.shape
    sizes = {"b": b, "l": length, "h": n_heads, "d": d_model // n_heads}
    x64 = x if fragile else x.double()
    lin = {k: v.to(x64.dtype) for k, v in p.items()}

    def proj(w, t):
        w = (shared or {}).get(w, w)
        weight = lin[f"{w}.weight"] if transpose_w else lin[f"{w}.weight"].T  # F.linear computes t @ W.T
        return F.linear(t, weight, lin[f"{w}.bias"] if w in bias else None)

    view = _VIEWS[split]  # each of q, k, v viewed that way and moved to (B, H, L, d_head)
    q, k, v = (torch.einsum(f"{view}->bhld", t.reshape([sizes[a] for a in view]))
               for t in (proj("w_q", x64), proj("w_k", x64), proj("w_v", x64) if project_v else x64))
    if divide is not None:
        q = q * math.sqrt(sizes["d"]) / divide(d_model, n_heads)
    if mask is not None and mask_t:
        mask = mask.transpose(-2, -1)
    if mask is not None and route is not None:  # head h of sequence i gets sequence route[i * H + h]'s mask
        full = torch.broadcast_to(mask, (b, n_heads, length, length))
        keep_all = torch.ones(length, length, dtype=torch.bool)
        mask = torch.stack([keep_all if j is None else full[j, i % n_heads] for i, j in enumerate(route)])
        mask = mask.reshape(b, n_heads, length, length)
    if causal:
        tril = torch.ones(length, length, dtype=torch.bool).tril()
        mask = tril if mask is None else mask & tril
    heads = _fragile(q, k, v, mask, fragile) if fragile else [_attention(q, k, v, mask, **attn_kw)]
    merged = [torch.einsum(f"bhld->{_VIEWS[merge]}", one["out"]).reshape(b, length, d_model) for one in heads]
    outs = [proj("w_o", out) if use_wo else out for out in merged]
    return [{"out": (out + x64 if residual else out).to(x.dtype)} for out in outs]


def _slip(*options, **common):
    """A mistake's results: ``_mha`` with the ``common`` keywords and each of the ``options`` in turn."""
    return lambda x, p, h, m: [out for one in options or [{}] for out in _mha(x, p, h, m, **common, **one)]


_MHA_MISTAKES = [
    ("the heads are split without the transpose. Reshape (B, L, d_model) to (B, L, H, d_head) and then "
     "transpose to (B, H, L, d_head); a direct view to (B, H, L, d_head) mixes positions and features.",
     _slip({"merge": "plain"}, {}, split="plain")),
    ("the heads are merged without the transpose. Transpose (B, H, L, d_head) back to (B, L, H, d_head) "
     "before reshaping to (B, L, d_model) (call .contiguous() or use .reshape).", _slip(merge="plain")),
    ("the heads are split or merged in the wrong order: (B, L, d_model) reshapes to (B, L, H, d_head), "
     "heads before features, so each head owns d_head neighbouring features; (B, L, d_head, H) "
     "interleaves the heads. Use the same order to merge them back.",
     _slip({"split": "head_last", "merge": "head_last"}, {"split": "head_last"}, {"merge": "head_last"})),
    ("q, k and v all come from the same projection. Each has its own: q = self.w_q(x), "
     "k = self.w_k(x), v = self.w_v(x).", _slip(*({"shared": dict.fromkeys(_QKV, w)} for w in _QKV))),
    ("q, k and v do not come from their own projections (a layer is used twice, or two are swapped), or q and k "
     "are swapped in the scores (k @ q^T): q = self.w_q(x), k = self.w_k(x), v = self.w_v(x), and the scores "
     "q @ k.transpose(-2, -1).",
     _slip(*({"shared": dict(zip(_QKV, combo))} for combo in itertools.product(_QKV, repeat=3)
             if combo != _QKV and len(set(combo)) > 1))),
    ("it adds the input back (a residual). Multi-head attention returns w_o(merged heads) only; the "
     "encoder block adds the residual.", _slip(residual=True)),
    ("the projections' biases are missing: call the layers, self.w_q(x), or pass their bias to F.linear.",
     _slip({"bias": ()}, {"bias": ("w_o",)})),
    ("the scores are divided by d_head; divide them by its square root, math.sqrt(d_head).",
     _slip(divide=lambda d, h: d // h)),
    ("the projections use the weight matrices untransposed. nn.Linear stores its weight as "
     "(out_features, in_features) and computes x @ W.T + b; simplest is to call the layers: self.w_q(x).",
     _slip(transpose_w=False)),
    ("later positions get no weight, as with a causal mask. An encoder's attention is bidirectional: "
     "every token may attend to every key the given mask allows (no is_causal, no triangle of its own).",
     _slip(causal=True)),
    ("the scores are scaled by sqrt(n_heads); each head should use sqrt(d_head) = sqrt(d_model / n_heads).",
     _slip(divide=lambda d, h: math.sqrt(h))),
    ("the output projection is missing: after merging the heads, apply self.w_o.", _slip(use_wo=False)),
    ("the values are not projected: v should be self.w_v(x), split into heads like q and k.", _slip(project_v=False)),
    ("the scores are scaled by sqrt(d_model); each head should use sqrt(d_head) = sqrt(d_model / n_heads).",
     _slip(divide=lambda d, h: math.sqrt(d))),
    ("the scores are not scaled: divide each head's q @ k^T by sqrt(d_head).", _slip(divide=lambda d, h: 1.0)),
    ("the softmax runs over the wrong axis: it must normalise over the keys, the last dimension (dim=-1).",
     _slip({"softmax_dim": 1}, {"softmax_dim": 2})),
    ("the mask is inverted. True means 'may attend': fill the scores where the mask is False.",
     _slip(*({"fill": f} for f in ("zero", "nan", "min")), mask_mode="inverted")),
    ("masked scores are filled with -1e4, a finite number that scores as large as these outgrow, so the masked "
     "keys still get weight. Fill them with float('-inf') before the softmax: it loses to any score.",
     _slip(mask_mode="finite")),
    ("masked scores are set to 0, which still gives those keys weight. Fill them with float('-inf') "
     "before the softmax.", _slip(mask_mode="zero")),
    ("the mask is applied after the softmax; fill the masked scores with float('-inf') before it.",
     _slip(mask_mode="after")),
    ("the bool mask is added to the scores (True counts as 1, False as 0), which hardly changes the weights: fill "
     "the scores where the mask is False with float('-inf'), scores.masked_fill(~mask, float('-inf')).",
     _slip(mask_mode="add")),
    ("the weights are divided by sqrt(d_head) after the softmax, so they no longer sum to 1: divide the scores, "
     "before the softmax, q @ k^T / sqrt(d_head).", _slip(weights_are="scaled_after", scale="none")),
    ("the mask has no effect (is it passed on to the attention?). Padding keys must get zero weight.",
     _slip(mask_mode="ignore")),
    ("exp() overflows: your softmax does not subtract each row's maximum before exp(), and exp(89) is already "
     "infinite in float32, so large scores give inf / inf = NaN. Subtract scores.amax(dim=-1, keepdim=True) "
     "first, or use torch.softmax.", _slip(fragile="naive")),
    ("the mask is applied after the softmax and the kept weights renormalised: the same on paper, but mask "
     "before the softmax; renormalising divides 0 by 0 when every kept weight underflows (large scores whose "
     "maximum sits on a masked key), which gives NaN. Fill the masked scores with float('-inf'), then take "
     "the softmax.", _slip(fragile="renormalise")),
    ("the mask is transposed before use: (B, 1, L, 1) masks queries (rows of the scores), not keys. The mask "
     "already lines up with the scores (B, H, L_q, L_k), keys last: pass it on without transposing it.",
     _slip(*({"fill": f} for f in ("zero", "nan", "min")), mask_t=True)),
    ("the scores are divided by the square root rounded to an integer (int(math.sqrt(d_head)), math.isqrt or "
     "// somewhere): keep it a float, math.sqrt(d_head), d_head ** 0.5.",
     _slip(divide=lambda d, h: math.isqrt(d // h))),
    ("the scores are divided by sqrt(d_model) / n_heads; each head divides by the square root of its own "
     "size: sqrt(d_head) = sqrt(d_model / n_heads).", _slip(divide=lambda d, h: math.sqrt(d) / h)),
    ("the heads have a fixed size, not d_model // n_heads: with d_head fixed in the code, the number of heads "
     "follows from d_model instead of n_heads. Take d_head = d_model // n_heads, and the number of heads from "
     "self.n_heads, never fixed numbers.",
     lambda x, p, h, m: [out for size in (8, 16, 32, 64) if x.shape[-1] % size == 0 and x.shape[-1] // size != h
                         for out in _mha(x, p, x.shape[-1] // size, m)]),
    ("it splits into a fixed number of heads, not n_heads: take the number of heads from self.n_heads "
     "(and d_head = d_model // n_heads), never from the example's numbers.",
     lambda x, p, h, m: [out for fixed in (1, 2, 3, 4, 6, 8) if fixed != h and x.shape[-1] % fixed == 0
                         for out in _mha(x, p, fixed, m)]),
]

_ROUTES = (  # how head h of sequence b can get the mask of another place, and what causes it
    (lambda b, h, B, H: (b * H + h) % B,
     "heads folded into the batch as (B * H, L, L) need each sequence's mask H times in a row, "
     "mask.repeat_interleave(H, dim=0), not mask.repeat(H, 1, 1), which tiles the whole batch"),
    (lambda b, h, B, H: h if B == H else None,
     "a heads-first layout (H, B, L, d_head) lines a (B, 1, 1, L) mask's sequences up with the heads: "
     "keep (B, H, L, d_head), or move the mask's batch axis to match"),
    (lambda b, h, B, H: (h * B + b) // H,
     "heads folded into the batch heads first, as (H * B, L, L), need the batch's masks tiled H times, "
     "mask.repeat(H, 1, 1)"),
    (lambda b, h, B, H: b if h == 0 else None,
     "only the first head is masked: every head needs the mask, which broadcasts over the heads axis as "
     "given (index no head out of it)"),
)


def _routing_mistakes(batch: int, n_heads: int):
    """The mask routed to the wrong (sequence, head), grouped by where each head's mask comes from."""
    right = tuple(b for b in range(batch) for _ in range(n_heads))
    groups: dict = {}  # {the sequence whose mask each head gets: the causes}
    for fn, cause in _ROUTES:
        table = tuple(fn(b, h, batch, n_heads) for b in range(batch) for h in range(n_heads))
        if table != right and any(j is not None for j in table):
            groups.setdefault(table, []).append(cause)
    mistakes = []
    for table, causes in groups.items():
        i = next(i for i, (j, r) in enumerate(zip(table, right)) if j != r)
        seen = "no mask" if table[i] is None else f"the mask of sequence {table[i]}"
        mistakes.append((f"the mask reaches the wrong sequence or head (head {i % n_heads} of sequence "
                         f"{i // n_heads} gets {seen}): " + "; or ".join(causes) + ".", _slip(route=table)))
    return mistakes


_MHA_RANDOM_HINT = {
    "eval": "in eval() mode nothing may be random: use nn.Dropout modules, which switch off in eval(), or "
            "F.dropout(..., training=self.training); never call torch.manual_seed inside forward.",
    "train": "this MultiHeadAttention was built without dropout (the exercise's has none), so nothing in it "
             "may be random, even in train() mode.",
}


def _mha_cases(g, d_model: int):
    """(label, x, mask, hint) for one width: shapes, masks of several layouts, tiny and large inputs."""
    x = _randn(g, 2, 6, d_model)
    pad = torch.tensor([[True] * 6, [True, True, True, True, False, False]])[:, None, None, :]
    pad3 = torch.tensor([[True, True, False, False], [True] * 4, [True, False, False, False]])[:, None, None, :]
    pairs = torch.rand(3, 1, 4, 4, generator=g) > 0.5
    pairs[..., 0] = True  # every query keeps a key
    size = f"d_model={d_model}"
    one = _randn(g, 1, 5, d_model)  # drawn where the batch-of-one case drew it: the other inputs stay the same
    return [
        (f"with {size}, x (2, 6, {d_model}), no mask", x, None, ""),
        (f"with {size} and a padding mask (2, 1, 1, 6)", x, pad,
         "Without a mask your class is right: pass the mask on to the attention and fill masked "
         "scores with float('-inf') before the softmax."),
        (f"with {size}, tiny inputs (about 1e-3)", x * 1e-3, pad, ""),
        (f"with {size}, large inputs (about 1000)", x * 1e3, pad,
         "It works on ordinary inputs but not on large ones: if you wrote the softmax yourself, "
         "subtract each row's maximum before exp()."),
        (f"with {size}, a batch of one, x (1, 5, {d_model}), no mask", one, None,
         "It works for a batch of 2 but not for a batch of 1: take B and L from x.shape and never squeeze "
         "the batch dimension away (.squeeze() without a dim drops every size-1 dimension)."),
        (f"with {size}, x (3, 4, {d_model}) and padding in the first and last sequences (3, 1, 1, 4)",
         _randn(g, 3, 4, d_model), pad3,
         "Each sequence has its own padding: apply each row of the mask to its own sequence, and do "
         "not assume the first sequence is the longest."),
        (f"with {size}, x (3, 4, {d_model}) and a causal mask of shape (4, 4)", _randn(g, 3, 4, d_model),
         torch.ones(4, 4, dtype=torch.bool).tril(),
         "The mask may have any shape that broadcasts to (B, H, L, L), here (L, L): pass it on to the "
         "attention unchanged (no view or reshape to (B, 1, 1, L)); broadcasting does the rest."),
        (f"with {size}, x (3, 4, {d_model}) and a mask per query and key (3, 1, 4, 4)",
         _randn(g, 3, 4, d_model), pairs,
         "The mask may have any shape that broadcasts to (B, H, L, L), here (B, 1, L, L): pass it on to "
         "the attention unchanged."),
        (f"with {size}, a batch of one with a padding mask (1, 1, 1, 5)", one,
         torch.tensor([True, True, True, False, False])[None, None, None, :],
         "It works for a batch of one without a mask and for larger batches with one: keep the mask's batch "
         "dimension of size 1 (.squeeze() without a dim drops it) and pass the mask on unchanged."),
    ]


_MHA_SETTINGS = [
    ({"w_o.bias": 0.0}, "with w_o's bias set to zero, in yours and in the reference, your output is right, so the "
                        "mistake is in how w_o's bias is used: the output is self.w_o(merged heads), its bias "
                        "added once, after the heads are merged."),
    ({"w_v.bias": 0.0}, "with w_v's bias set to zero, in yours and in the reference, your output is right, so the "
                        "mistake is in how w_v's bias is used: v = self.w_v(x), its bias added once."),
    ({"w_q.weight": 0.0, "w_q.bias": 0.0},
     "with the queries set to zero (w_q's weight and bias zero, in yours and in the reference), every score is 0 "
     "and every allowed key gets the same weight, and then your output is right: so the values, the heads and "
     "w_o are right, and the mistake is in the scores (how q and k are made, the scale 1 / sqrt(d_head), or "
     "the softmax)."),
]


def _scale_probe(pair, label, x, mask, n_heads) -> str:
    """If the answer is multi-head attention with its scores divided by some other number, name that number."""
    try:
        got = pair.call(label, x, mask).detach().double()
    except ExerciseError:
        return ""
    params, d_model = pair.params(), x.shape[-1]
    if got.shape != x.shape or not torch.isfinite(got).all():
        return ""

    def error(c: float) -> float:
        return float((_mha(x, params, n_heads, mask, divide=lambda d, h: c)[0]["out"].double() - got).abs().max())

    c = _fitted_factor(error, -1, 3, 1e-4 * float(got.abs().max()) + 1e-6)
    if c is None:
        return ""
    d_head = d_model // n_heads
    precedence = "" if abs(c - d_model // n_heads ** 0.5) > 1e-3 * c else (
        f" That is d_model // n_heads ** 0.5 = {d_model} // {n_heads ** 0.5:.4g}: ** binds before //, so write "
        "math.sqrt(d_model // n_heads), or keep self.d_head and take math.sqrt(self.d_head).")
    return (f"your scores are divided by {c:.4g}, where each head divides by sqrt(d_head) = sqrt({d_head}) = "
            f"{math.sqrt(d_head):.4g} (the rest, the heads, the mask and the softmax, is right).{precedence}")


def _padded_queries_probe(pair, label, x, mask) -> str:
    """With a padding mask, an answer wrong only at the padding's own positions (as queries) masks queries too."""
    if mask is None or mask.dim() != 4 or mask.shape[-2] != 1:
        return ""
    got, want = pair.call(label, x, mask).detach(), pair.want(x, mask).detach()
    real = mask[:, 0, 0, :, None].expand_as(want)  # (B, L, d_model): True at the real tokens
    if got.shape != want.shape or bool(real.all()) or not _close(got[real], want[real]) or _close(got, want):
        return ""
    zero = bool((got[~real] == 0).all())
    return ("only the outputs at the padding's positions differ, as queries"
            + (" (yours are 0 there)" if zero else "") + ": the mask hides keys, not queries. A padding query "
            "still attends to the real keys and gets an ordinary output, which is ignored later (by the loss or "
            "the pooling): use the (B, 1, 1, L) mask as given, without masking the queries or zeroing their rows.")


@probe
def _first_sequence_probe(pair, label, x, mask, n_heads) -> str:
    """Every sequence given the first one's mask (mask[0]): with its batch order reversed, the first sequence of
    the mask is padded, and the answer then pads every sequence so."""
    if mask is None or mask.shape[0] < 2:
        return ""
    flipped = mask.flip(0)
    if torch.equal(flipped[:1].expand_as(flipped), flipped):
        return ""
    label = f"{label}, with the mask's sequences in reverse order"
    got = pair.call(label, x, flipped)
    first = _mha(x, pair.params(), n_heads, flipped[:1].expand_as(flipped))[0]["out"]
    if got.shape != first.shape or not _close(got, first) or _close(got, pair.want(x, flipped)):
        return ""
    return ("every sequence gets the first sequence's mask (mask[0], or mask[:1]): the mask has one row per "
            "sequence, (B, 1, 1, L), and each sequence's padding is its own. Pass the mask on as given; it "
            "broadcasts over the heads and the queries.")


def _heads_probe(pair, cls, label, x, mask, n_heads) -> str:
    """With n_heads > 1: is the module right with one head? Then show where each head's features land."""
    from ..multi_head import MultiHeadAttention as Reference

    if n_heads == 1:
        return ""
    d_model = x.shape[-1]
    try:  # a class that cannot be built or run with one head says nothing here
        one = _build(pair.name, cls, d_model, 1)
        ref = Reference(d_model, 1, implementation="eager").eval()
        one.load_state_dict(pair.cand.state_dict(), strict=False)
        _copy_params(pair.name, one, ref, _MHA_PATHS)
        one.eval()
        with torch.no_grad():
            got = pair.call(label, x, mask, module=one)
            want = ref(*[t for t in (x, mask) if t is not None])
    except ExerciseError:
        return ""
    if got.shape != want.shape or not _close(got, want):
        return ""
    # Every head the same uniform weights, w_v and w_o identities: each position's output is the mean of
    # x over its allowed keys, feature by feature, and a head's features must come back where they were.
    uniform = {path: ("identity" if path in ("w_v.weight", "w_o.weight") else 0.0) for path in _MHA_PATHS}
    with pair.setting(uniform), torch.no_grad():
        mixed = pair.call(label, x, mask)
        plain = pair.want(x, mask)
    where = ""
    if mixed.shape == plain.shape and not _close(mixed, plain):
        where = (" With every key weighted equally and w_v, w_o identity matrices, each output feature should be "
                 "the mean of that feature of x over the keys, and it is not: "
                 + _describe(mixed, plain, ("sequence", "position", "feature")))
    return (f"with one head your module is right, with {n_heads} heads it is not, so the mistake is in how the "
            "heads are made and put back: split (B, L, d_model) into (B, H, L, d_head), each head its own "
            f"d_head = d_model / n_heads neighbouring features, attend, and merge back in the same order.{where}")


@_checker("multi_head_attention")
def check_multi_head_attention(cls):
    """Check a ``MultiHeadAttention(d_model, n_heads)`` class (``w_q, w_k, w_v, w_o``; ``forward(x, mask=None)``)."""
    from ..multi_head import MultiHeadAttention as Reference

    name = exercise("multi_head_attention").name
    g = _gen(2)
    # Widths where sqrt(d_head), its integer part, d_head, sqrt(d_model), sqrt(d_model) / n_heads and sqrt(n_heads)
    # all differ come first.
    for index, (d_model, n_heads, seed) in enumerate(((24, 2, 11), (12, 3, 12), (16, 4, 14), (8, 1, 13))):
        pair = Pair(name, cls, (d_model, n_heads), Reference(d_model, n_heads, implementation="eager"), seed=seed)
        cases = _mha_cases(g, d_model)
        for mode in pair.modes(*(("eval", "train") if index == 0 else ("eval",))):
            for label, xx, mask, case_hint in cases:
                label = f"{label}, n_heads={n_heads}, in {mode}() mode"
                got = pair.call(label, xx, mask)
                b, length = xx.shape[:2]
                if tuple(got.shape) == (b, n_heads, length, length):
                    raise ExerciseError(
                        f"Your {name} returned shape {tuple(got.shape)} {label}: the attention weights (B, H, "
                        f"L, L), but it should return the output {(b, length, d_model)}: the heads' outputs "
                        "(weights @ v) merged back to (B, L, d_model) and projected by self.w_o."
                    )
                mistakes = _MHA_MISTAKES + (_routing_mistakes(xx.shape[0], n_heads) if mask is not None else [])
                try:
                    pair.check(
                        label, (xx, mask), mistakes, (xx, pair.params(), n_heads, mask),
                        "project x with w_q, w_k, w_v; split into heads (B, H, L, d_head); attend with the "
                        "mask; merge the heads back to (B, L, d_model); apply w_o.", case_hint=case_hint,
                        random_hint=_MHA_RANDOM_HINT[mode],
                        probes=[functools.partial(_padded_queries_probe, pair, label, xx, mask),
                                functools.partial(_scale_probe, pair, label, xx, mask, n_heads),
                                pair.settings_probe(label, (xx, mask), _MHA_SETTINGS),
                                functools.partial(_heads_probe, pair, cls, label, xx, mask, n_heads)],
                        axes=("sequence", "position", "feature"))
                except ExerciseError as exc:  # no effect, or only the first sequence's mask, which has none
                    found = "the mask has no effect" in str(exc) and _first_sequence_probe(pair, label, xx, mask,
                                                                                            n_heads)
                    if found:
                        raise ExerciseError(f"Your {name} is not right yet {label}: {found}") from None
                    raise
        if index == 0:
            label, xx, mask, _ = cases[1]
            pair.gradients(f"{label}, n_heads={n_heads}", xx, mask)
