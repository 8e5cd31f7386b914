"""Checker of the ``MultiHeadAttention`` class (notebook 04): heads split and merged, projections, masks."""

from __future__ import annotations

import functools
import itertools
import math

import torch
import torch.nn.functional as F

from ._compare import _close, _describe
from ._modules import Pair, _build, _copy_params
from ._run import ExerciseError, _checker, _gen, _randn
from .attention import _attention, _fragile
from .registry import exercise

_MHA_PATHS = [f"{w}.{p}" for w in ("w_q", "w_k", "w_v", "w_o") for p in ("weight", "bias")]


def _mha(x, p, n_heads, mask=None, *, split="transpose", merge="transpose", scale="head",
         use_wo=True, project_v=True, shared="", bias="all", transpose_w=True, causal=False, residual=False,
         route=None, mask_t=False, **attn_kw):
    b, length, d_model = x.shape
    d_head = d_model // n_heads
    x64 = x.double()
    lin = {k: v.double() for k, v in p.items()}

    def proj(w, t):
        w = (shared.get(w, w) if isinstance(shared, dict) else shared) if shared and w != "w_o" else w
        keep = bias == "all" or (bias == "w_o only" and w == "w_o")
        weight = lin[f"{w}.weight"] if transpose_w else lin[f"{w}.weight"].T  # F.linear computes t @ W.T
        return F.linear(t, weight, lin[f"{w}.bias"] if keep else None)

    def split_(t):
        if split == "transpose":
            return t.reshape(b, length, n_heads, d_head).transpose(1, 2)
        if split == "head_last":  # (B, L, d_head, H): the features of one head are not contiguous
            return t.reshape(b, length, d_head, n_heads).permute(0, 3, 1, 2)
        return t.reshape(b, n_heads, length, d_head)

    q, k = split_(proj("w_q", x64)), split_(proj("w_k", x64))
    v = split_(proj("w_v", x64) if project_v else x64)
    if scale == "model":
        q = q * math.sqrt(d_head) / math.sqrt(d_model)
    elif scale == "none":
        q = q * math.sqrt(d_head)
    elif scale == "heads":
        q = q * math.sqrt(d_head) / math.sqrt(n_heads)
    elif scale == "d_head":  # divided by d_head itself
        q = q / math.sqrt(d_head)
    elif scale == "sqrtD_over_H":  # divided by sqrt(d_model) / n_heads
        q = q * math.sqrt(d_head) * n_heads / math.sqrt(d_model)
    if mask is not None and mask_t:
        mask = mask.transpose(-2, -1)
    if mask is not None and route is not None:  # head h of sequence b gets sequence route(b, h)'s mask
        full = torch.broadcast_to(mask, (b, n_heads, length, length))
        keep_all = torch.ones(length, length, dtype=torch.bool)
        mask = torch.stack([torch.stack([keep_all if route(i, h) is None else full[route(i, h), h]
                                         for h in range(n_heads)]) for i in range(b)])
    if causal:
        tril = torch.ones(length, length, dtype=torch.bool).tril()
        mask = tril if mask is None else mask & tril
    heads = _attention(q, k, v, mask, **attn_kw)["out"]
    if merge == "transpose":
        merged = heads.transpose(1, 2).reshape(b, length, d_model)
    elif merge == "head_last":
        merged = heads.permute(0, 2, 3, 1).reshape(b, length, d_model)
    else:
        merged = heads.reshape(b, length, d_model)
    out = proj("w_o", merged) if use_wo else merged
    if residual:
        out = out + x64
    return {"out": out.to(x.dtype)}


def _mha_fragile(x, p, n_heads, mask, kind):
    """Multi-head attention whose softmax breaks on large scores (see ``_fragile``), in x's dtype."""
    b, length, d_model = x.shape

    def split(t):
        return t.reshape(b, length, n_heads, d_model // n_heads).transpose(1, 2)

    q, k, v = (split(F.linear(x, p[f"{w}.weight"], p[f"{w}.bias"])) for w in ("w_q", "w_k", "w_v"))
    return [{"out": F.linear(heads["out"].transpose(1, 2).reshape(b, length, d_model), p["w_o.weight"],
                             p["w_o.bias"])} for heads in _fragile(q, k, v, mask, kind)]


_MHA_MISTAKES = [
    ("the heads are split without the transpose. Reshape (B, L, d_model) to (B, L, H, d_head) and then "
     "transpose to (B, H, L, d_head); a direct view to (B, H, L, d_head) mixes positions and features.",
     lambda x, p, h, m: [_mha(x, p, h, m, split="plain", merge="plain"),
                         _mha(x, p, h, m, split="plain")]),
    ("the heads are merged without the transpose. Transpose (B, H, L, d_head) back to (B, L, H, d_head) "
     "before reshaping to (B, L, d_model) (call .contiguous() or use .reshape).",
     lambda x, p, h, m: _mha(x, p, h, m, merge="plain")),
    ("the heads are split or merged in the wrong order: (B, L, d_model) reshapes to (B, L, H, d_head), "
     "heads before features, so each head owns d_head neighbouring features; (B, L, d_head, H) "
     "interleaves the heads. Use the same order to merge them back.",
     lambda x, p, h, m: [_mha(x, p, h, m, split="head_last", merge="head_last"),
                         _mha(x, p, h, m, split="head_last"), _mha(x, p, h, m, merge="head_last")]),
    ("q, k and v all come from the same projection. Each has its own: q = self.w_q(x), "
     "k = self.w_k(x), v = self.w_v(x).",
     lambda x, p, h, m: [_mha(x, p, h, m, shared=w) for w in ("w_q", "w_k", "w_v")]),
    ("q, k and v do not come from their own projections (a layer is used twice, or two are swapped): "
     "q = self.w_q(x), k = self.w_k(x), v = self.w_v(x).",
     lambda x, p, h, m: [_mha(x, p, h, m, shared=dict(zip(("w_q", "w_k", "w_v"), combo)))
                         for combo in itertools.product(("w_q", "w_k", "w_v"), repeat=3)
                         if combo != ("w_q", "w_k", "w_v") and len(set(combo)) > 1]),
    ("it adds the input back (a residual). Multi-head attention returns w_o(merged heads) only; the "
     "encoder block adds the residual.",
     lambda x, p, h, m: _mha(x, p, h, m, residual=True)),
    ("the projections' biases are missing: call the layers, self.w_q(x), or pass their bias to F.linear.",
     lambda x, p, h, m: [_mha(x, p, h, m, bias="none"), _mha(x, p, h, m, bias="w_o only")]),
    ("the scores are divided by d_head; divide them by its square root, math.sqrt(d_head).",
     lambda x, p, h, m: _mha(x, p, h, m, scale="d_head")),
    ("the projections use the weight matrices untransposed. nn.Linear stores its weight as "
     "(out_features, in_features) and computes x @ W.T + b; simplest is to call the layers: self.w_q(x).",
     lambda x, p, h, m: _mha(x, p, h, m, transpose_w=False)),
    ("later positions get no weight, as with a causal mask. An encoder's attention is bidirectional: "
     "every token may attend to every key the given mask allows (no is_causal, no triangle of its own).",
     lambda x, p, h, m: _mha(x, p, h, m, causal=True)),
    ("the scores are scaled by sqrt(n_heads); each head should use sqrt(d_head) = sqrt(d_model / n_heads).",
     lambda x, p, h, m: _mha(x, p, h, m, scale="heads")),
    ("the output projection is missing: after merging the heads, apply self.w_o.",
     lambda x, p, h, m: _mha(x, p, h, m, use_wo=False)),
    ("the values are not projected: v should be self.w_v(x), split into heads like q and k.",
     lambda x, p, h, m: _mha(x, p, h, m, project_v=False)),
    ("the scores are scaled by sqrt(d_model); each head should use sqrt(d_head) = sqrt(d_model / n_heads).",
     lambda x, p, h, m: _mha(x, p, h, m, scale="model")),
    ("the scores are not scaled: divide each head's q @ k^T by sqrt(d_head).",
     lambda x, p, h, m: _mha(x, p, h, m, scale="none")),
    ("the softmax runs over the wrong axis: it must normalise over the keys, the last dimension (dim=-1).",
     lambda x, p, h, m: [_mha(x, p, h, m, softmax_dim=d) for d in (1, 2)]),
    ("the mask is inverted. True means 'may attend': fill the scores where the mask is False.",
     lambda x, p, h, m: [_mha(x, p, h, m, mask_mode="inverted", fill=f) for f in ("zero", "nan", "min")]),
    ("masked scores are set to 0, which still gives those keys weight. Fill them with float('-inf') "
     "before the softmax.", lambda x, p, h, m: _mha(x, p, h, m, mask_mode="zero")),
    ("the mask is applied after the softmax; fill the masked scores with float('-inf') before it.",
     lambda x, p, h, m: _mha(x, p, h, m, mask_mode="after")),
    ("the mask has no effect (is it passed on to the attention?). Padding keys must get zero weight.",
     lambda x, p, h, m: _mha(x, p, h, m, mask_mode="ignore")),
    ("exp() overflows: your softmax does not subtract each row's maximum before exp(), and exp(89) is already "
     "infinite in float32, so large scores give inf / inf = NaN. Subtract scores.amax(dim=-1, keepdim=True) "
     "first, or use torch.softmax.",
     lambda x, p, h, m: _mha_fragile(x, p, h, m, "naive")),
    ("the mask is applied after the softmax and the kept weights renormalised: the same on paper, but mask "
     "before the softmax; renormalising divides 0 by 0 when every kept weight underflows (large scores whose "
     "maximum sits on a masked key), which gives NaN. Fill the masked scores with float('-inf'), then take "
     "the softmax.",
     lambda x, p, h, m: _mha_fragile(x, p, h, m, "renormalise")),
    ("the mask is transposed before use: (B, 1, L, 1) masks queries (rows of the scores), not keys. The mask "
     "already lines up with the scores (B, H, L_q, L_k), keys last: pass it on without transposing it.",
     lambda x, p, h, m: [_mha(x, p, h, m, mask_t=True, fill=f) for f in ("zero", "nan", "min")]),
    ("the scores are divided by sqrt(d_model) / n_heads; each head divides by the square root of its own "
     "size: sqrt(d_head) = sqrt(d_model / n_heads).",
     lambda x, p, h, m: _mha(x, p, h, m, scale="sqrtD_over_H")),
    ("it splits into a fixed number of heads, not n_heads: take the number of heads from self.n_heads "
     "(and d_head = d_model // n_heads), never from the example's numbers.",
     lambda x, p, h, m: [_mha(x, p, fixed, m) for fixed in (1, 2, 3, 4, 6, 8)
                         if fixed != h and x.shape[-1] % fixed == 0]),
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


def _routed(x, p, n_heads, mask, fn):
    """The heads' outputs when head h of sequence b gets the mask ``fn(b, h, B, H)`` names."""
    return _mha(x, p, n_heads, mask, route=lambda b, h: fn(b, h, x.shape[0], n_heads))


def _routing_mistakes(batch: int, n_heads: int):
    """The mask routed to the wrong (sequence, head), grouped by where each head's mask comes from."""
    right = tuple(b for b in range(batch) for _ in range(n_heads))
    groups: dict = {}
    for fn, cause in _ROUTES:
        table = tuple(fn(b, h, batch, n_heads) for b in range(batch) for h in range(n_heads))
        if table != right and any(j is not None for j in table):
            groups.setdefault(table, []).append((fn, cause))
    mistakes = []
    for table, found in groups.items():
        b, h = divmod(next(i for i, (j, r) in enumerate(zip(table, right)) if j != r), n_heads)
        j = table[b * n_heads + h]
        seen = "no mask" if j is None else f"the mask of sequence {j}"
        mistakes.append((
            f"the mask reaches the wrong sequence or head (head {h} of sequence {b} gets {seen}): "
            + "; or ".join(cause for _, cause in found) + ".",
            functools.partial(_routed, fn=found[0][0])))
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
    return [
        (f"with {size}, x (2, 6, {d_model}), no mask", x, None, ""),
        (f"with {size} and a padding mask (2, 1, 1, 6)", x, pad,
         "Without a mask your class is right: pass the mask on to the attention and fill masked "
         "scores with float('-inf') before the softmax."),
        (f"with {size}, tiny inputs (about 1e-3)", x * 1e-3, pad, ""),
        (f"with {size}, large inputs (about 1000)", x * 1e3, pad,
         "It works on ordinary inputs but not on large ones: if you wrote the softmax yourself, "
         "subtract each row's maximum before exp()."),
        (f"with {size}, a batch of one, x (1, 5, {d_model}), no mask", _randn(g, 1, 5, d_model), None,
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
    # Widths where sqrt(d_head), d_head, sqrt(d_model) and sqrt(n_heads) all differ come first.
    for index, (d_model, n_heads, seed) in enumerate(((16, 2, 11), (12, 3, 12), (16, 4, 14), (8, 1, 13))):
        pair = Pair(name, cls, (d_model, n_heads), Reference(d_model, n_heads, implementation="eager"), _MHA_PATHS,
                    seed=seed)
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
                pair.check(
                    label, (xx, mask), mistakes, (xx, pair.params(), n_heads, mask),
                    "project x with w_q, w_k, w_v; split into heads (B, H, L, d_head); attend with the "
                    "mask; merge the heads back to (B, L, d_model); apply w_o.", case_hint=case_hint,
                    random_hint=_MHA_RANDOM_HINT[mode],
                    probes=[pair.settings_probe(label, (xx, mask), _MHA_SETTINGS),
                            functools.partial(_heads_probe, pair, cls, label, xx, mask, n_heads)],
                    axes=("sequence", "position", "feature"))
        if index == 0:
            label, xx, mask, _ = cases[1]
            pair.gradients(f"{label}, n_heads={n_heads}", xx, mask)
