"""Checker of the ``Embeddings`` class (notebook 08): token vectors (times sqrt(d_model) when asked), the first L
position vectors, token types (type 0 when none are given), the LayerNorm, dropout last.

The learner's class is built from four small configurations (BERT's layout, the 2017 one and two mixtures), its
parameters set to random values and copied into the package's ``Embeddings``; its state-dict keys must be the
package's, so a checkpoint loads into it.
"""

from __future__ import annotations

import functools
import math
import re

import torch

from ._compare import _close, _identical, _spans, probe
from ._modules import Pair
from ._run import ExerciseError, _checker, _gen
from .registry import exercise

_P = 0.3  # the dropout rate of the train() checks


def _configs():
    from ..encoder import EncoderConfig

    base = dict(vocab_size=40, max_len=12, d_model=16, n_heads=4, d_ff=32, n_layers=1, dropout=0.0)
    return [
        ("for BERT's layout (learned positions, 2 token types, a LayerNorm, no scaling)",
         EncoderConfig(**base, positions="learned", type_vocab_size=2, embedding_norm=True, eps=1e-6)),
        ("for the 2017 layout (sinusoidal positions, tokens scaled by sqrt(d_model), no token types, no LayerNorm)",
         EncoderConfig(**base, positions="sinusoidal", scale_embeddings=True)),
        ("for learned positions, tokens scaled by sqrt(d_model), 3 token types, no LayerNorm",
         EncoderConfig(**base, positions="learned", scale_embeddings=True, type_vocab_size=3)),
        ("for sinusoidal positions, 2 token types and a LayerNorm, no scaling",
         EncoderConfig(**base, positions="sinusoidal", type_vocab_size=2, embedding_norm=True)),
        # Another width (sqrt(24) is no whole number) and a large eps: nothing fixed to 16 or to the default eps.
        ("for d_model=24, tokens scaled by sqrt(d_model), learned positions and a LayerNorm with eps=1e-3",
         EncoderConfig(**{**base, "d_model": 24}, positions="learned", scale_embeddings=True, embedding_norm=True,
                       eps=1e-3)),
    ]


def _table(r, cfg) -> torch.Tensor:
    """The reference's position table (max_len, d_model)."""
    return (r.position.weight if cfg.positions == "learned" else r.position.table).detach()


def _embed(ids, types, r, cfg, kind="right", factor=None):
    """The embeddings and their usual slips, from the reference's tables ``r`` (eval mode)."""
    if kind == "no_types" and types is None:  # (told apart where token types are given)
        return {"out": torch.full((1,), float("nan"))}
    length, table = ids.shape[1], _table(r, cfg)
    tok = r.token.weight.detach()[ids]  # (B, L, d)
    type_ids = torch.zeros_like(ids) if types is None else types
    typ = r.token_type.weight.detach()[type_ids] if r.token_type is not None else 0.0
    if kind == "no_types" or (kind == "types_only_given" and types is None):
        typ = 0.0
    elif kind == "types_from_token_table":
        typ = r.token.weight.detach()[type_ids]
    pos = {"no_positions": lambda: 0.0, "position_zero": lambda: table[:1],
           "positions_from_one": lambda: table[1:length + 1], "positions_reversed": lambda: table[:length].flip(0),
           "positions_by_token": lambda: table[ids]}.get(kind, lambda: table[:length])()
    if factor is None:
        factor = math.sqrt(cfg.d_model) if cfg.scale_embeddings else 1.0
    if kind == "scale_all":
        return {"out": (tok + pos + typ) * math.sqrt(cfg.d_model)}
    if kind == "norm_before_positions":
        return {"out": r.norm(tok * factor) + pos + typ}
    if kind == "norm_before_types":
        return {"out": r.norm(tok * factor + pos) + typ}
    if kind == "pad_token_zero":
        tok = tok * (ids != cfg.pad_id)[..., None]
    x = tok * factor + pos + typ
    out = r.norm(x) if r.norm is not None and kind != "no_norm" else x
    return {"out": out * (ids != cfg.pad_id)[..., None] if kind == "pad_output_zero" else out}


def _mistakes(cfg, mode: str):
    """The listed slips of this config (a kind of ``_embed``, or the variant itself), in the order they are tried."""
    s, d = math.sqrt(cfg.d_model), cfg.d_model
    listed = [
        ("the position vectors are not added: add the first L rows of the position table, x + "
         "self.position.weight[:L] (learned) or x + self.sinusoids[:L] (sinusoidal), so one token at two "
         "positions gets two different vectors.", "no_positions"),
        ("every token gets the vector of position 0: the token at position p takes row p of the table, "
         "table[:L] (all L rows, not table[0] or table[:1]).", "position_zero"),
        ("the positions start at 1: the first token is at position 0, so take table[:L], not table[1:L + 1].",
         "positions_from_one"),
        ("the positions are in reverse order: row p of the table goes to the token at position p, table[:L] as "
         "it is.", "positions_reversed"),
        ("the position vectors are looked up by token id, self.position(token_ids): a token's position is where "
         "it stands, 0 to L - 1, so take the first L rows, self.position.weight[:L].", "positions_by_token"),
    ]
    if cfg.scale_embeddings:
        listed += [
            (f"the token vectors are not multiplied by sqrt(d_model) = {s:g}: this config has "
             "scale_embeddings=True (the 2017 paper, section 3.4), so x = self.token(token_ids) * "
             "math.sqrt(d_model), before anything is added.", functools.partial(_embed, factor=1.0)),
            (f"the token vectors are multiplied by d_model = {d}, not by its square root: math.sqrt(d_model).",
             functools.partial(_embed, factor=float(d))),
            ("the token vectors are divided by sqrt(d_model); the 2017 paper multiplies them: "
             "self.token(token_ids) * math.sqrt(d_model).", functools.partial(_embed, factor=1.0 / s)),
            ("the positions (and token types) are multiplied by sqrt(d_model) too: only the token vectors are "
             "scaled, before anything is added to them.", "scale_all"),
        ]
    else:
        listed.append((f"the token vectors are multiplied by sqrt(d_model) = {s:g}, but this config has "
                       "scale_embeddings=False: scale only when self.config.scale_embeddings is True.",
                       functools.partial(_embed, factor=s)))
    if cfg.type_vocab_size:
        listed += [
            ("the token-type vectors are not added: add self.token_type(token_type_ids) to every token (type 0's "
             "vector when no token_type_ids are given).", "no_types"),
            ("when no token_type_ids are given, no token-type vector is added. Every token is then in segment 0, "
             "as in BERT: add self.token_type(torch.zeros_like(token_ids)), type 0's vector.", "types_only_given"),
            ("the token types are looked up in the token table, self.token(token_type_ids); they have a table of "
             "their own, self.token_type(token_type_ids).", "types_from_token_table"),
        ]
    if cfg.embedding_norm:
        listed += [
            ("the LayerNorm is missing: this config has embedding_norm=True, so normalise the sum, "
             "x = self.norm(x), before the dropout.", "no_norm"),
            ("the LayerNorm is applied to the token vectors before the positions (and token types) are added: "
             "add everything first, then normalise the sum.", "norm_before_positions"),
            ("the LayerNorm is applied before the token-type vectors are added: add the token types too, then "
             "normalise the sum.", "norm_before_types"),
        ]
    listed += [
        (f"the padding tokens (id pad_id = {cfg.pad_id}) come out as zeros. Embeddings gives every token its vectors, "
         "padding included: the padding is kept out later, by the attention mask (and the pooling), not here.",
         "pad_output_zero"),
        (f"the padding tokens (id pad_id = {cfg.pad_id}) get no token vector (zeroed, as with a padding_idx row of "
         "zeros). Here they take their row of the token table like every other token: self.token(token_ids) as "
         "it is; the attention mask keeps the padding out later.", "pad_token_zero"),
    ]
    if mode == "train":
        listed.append((
            "in train() mode with dropout=0.0 every value is dropped, as if p were 1: the dropout rate is the "
            "probability to drop, so build nn.Dropout(config.dropout) (or pass p itself to F.dropout), not 1 - p.",
            lambda ids, types, r, cfg: {"out": torch.zeros_like(_embed(ids, types, r, cfg)["out"])}))
    return [(m, functools.partial(_embed, kind=k) if isinstance(k, str) else k) for m, k in listed]


# ----------------------------------------------------------------------------------------------
# Calling the learner's module


def _hint(exc: ExerciseError, cfg, ids) -> ExerciseError:
    """The learner's error with a hint of this exercise where its text points to a known cause."""
    text = str(exc.__cause__ or "")
    length, batch = ids.shape[1], ids.shape[0]
    sizes = re.search(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)", text)
    pair = {int(sizes.group(1)), int(sizes.group(2))} if sizes else set()
    hint = ""
    if "index out of range in self" in text:
        hint = ("an nn.Embedding was given an index beyond its table. Positions are not looked up by token id: a "
                "sequence's positions are 0, 1, ..., L - 1, the first L rows of the table, "
                "self.position.weight[:L]; and token types come from token_type_ids (zeros when none are given).")
    elif pair == {length, cfg.max_len}:
        hint = (f"the whole position table (max_len = {cfg.max_len} rows) was added to a sequence of "
                f"L = {length} tokens: take its first L rows, table[:L] with L = token_ids.shape[1].")
    elif pair == {length, batch} and "non-singleton dimension 1" in text:  # (B, d_model) met (B, L, d_model)
        hint = ("the position table was sliced with the batch size: token_ids is (B, L), so the length is "
                "token_ids.shape[1], and table[:L] is (L, d_model).")
    elif pair == {length, batch}:
        hint = ("a size of B met a size of L: token_ids is (B, L), so the length is token_ids.shape[1], and the "
                "positions added are table[:L], shaped (L, d_model) as they are (they broadcast over the batch; "
                "no slice by the batch size, no unsqueeze in the middle).")
    elif "has no attribute 'position'" in text:
        hint = ("this config has sinusoidal positions: their table is the buffer self.sinusoids; self.position "
                "exists only for learned positions. Branch on self.config.positions.")
    elif "has no attribute 'sinusoids'" in text:
        hint = ("this config has learned positions: their table is self.position.weight; self.sinusoids exists "
                "only for sinusoidal positions. Branch on self.config.positions.")
    if not hint:
        return exc
    return ExerciseError(str(exc).split("\nHint:")[0] + f"\nHint: {hint}")


# ----------------------------------------------------------------------------------------------
# Probes: one table at a time


def _settings(cfg):
    """One table at a time set to zero, in both modules: right then says where the mistake is."""
    tables = [
        ("position.weight", "position", "positions", cfg.positions == "learned",
         "the first L rows of the table, row p for the token at position p, added to every sequence of the batch."),
        ("token_type.weight", "token-type", "token types", cfg.type_vocab_size,
         "self.token_type(token_type_ids), type 0 for every token when none are given, added once."),
        ("token.weight", "token", "token vectors", True,
         "self.token(token_ids), times math.sqrt(d_model) only when config.scale_embeddings."),
    ]
    return [({path: 0.0}, f"with the {table} table set to zero (in yours and in the reference) your output is right, "
                          f"so the mistake is in the {what}: {fix}") for path, table, what, used, fix in tables if used]


def _tokens_zero(pair, label, ids, tables=("token.weight",)):
    """The learner's output on ``ids`` (no token types) with ``tables`` set to zero in their module alone."""
    with pair.setting(dict.fromkeys(tables, 0.0), both=False), torch.no_grad():
        return pair.call(f"{label}, with every token vector zero", ids)


_ZEROED = "with every token vector zero (in yours and in the reference)"


def _rows_found(got, rows) -> list:
    """For each position of one sequence's output (L, d_model), the first row of ``rows`` it equals (or None)."""
    return [next((j for j in range(rows.shape[0]) if _close(got[p], rows[j], 2.0)), None) for p in range(len(got))]


def _padding_skipped(pair, cfg, label, ids, got, rows) -> str:
    """Positions counted over the real tokens alone (RoBERTa's cumsum(token_ids != pad_id) - 1): each real token
    takes the row of the number of real tokens before it, and with the padding replaced the positions are right."""
    real = ids != cfg.pad_id
    if real.all():
        return ""
    count = real.long().cumsum(dim=1) - 1  # (B, L)
    moved = {}  # sequence: [(position, row)] of the real tokens in another row than their position's
    for b in range(ids.shape[0]):
        found = _rows_found(got[b], rows)
        for p in range(ids.shape[1]):
            if real[b, p] and found[p] != int(count[b, p]):
                return ""  # a real token whose row is not its count of real tokens
            if real[b, p] and found[p] != p:
                moved.setdefault(b, []).append((p, found[p]))
    if not moved:
        return ""
    other = 1 if cfg.pad_id != 1 else 2
    try:
        plain = _tokens_zero(pair, f"{label}, with the padding tokens replaced", ids.masked_fill(~real, other),
                             ["token.weight"] + (["token_type.weight"] if cfg.type_vocab_size else [])).double()
    except ExerciseError:
        return ""
    if not all(_close(plain[b], rows[:ids.shape[1]], 2.0) for b in range(ids.shape[0])):
        return ""
    b, shown = next(iter(moved.items()))
    pads = (~real[b]).nonzero()[:, 0].tolist()
    many = len(shown) > 1
    return (f"{_ZEROED}, your positions count only the tokens that are not padding (pad_id = {cfg.pad_id}): in "
            f"sequence {b}, with padding at position{'s' if len(pads) > 1 else ''} {_spans(pads)}, the token"
            f"{'s' if many else ''} at position{'s' if many else ''} {', '.join(str(p) for p, _ in shown[:4])}"
            f"{', ...' if len(shown) > 4 else ''} get{'' if many else 's'} row{'s' if many else ''} "
            f"{', '.join(str(j) for _, j in shown[:4])}{', ...' if len(shown) > 4 else ''}, the "
            "number of real tokens before each, as torch.cumsum(token_ids != pad_id, dim=1) - 1 (RoBERTa's count) "
            "gives; with the padding replaced by other tokens your positions are right. Here every position counts, "
            "padding included: the token at position p takes row p, table[:L] (torch.arange(L)).")


def _later_sequences(got, rows) -> str:
    """The first sequence right, a later one given other rows of the table: which, and whether they go on counting."""
    length = got.shape[1]
    b = next((b for b in range(1, got.shape[0]) if not _close(got[b], rows[:length], 2.0)), None)
    found = None if b is None else _rows_found(got[b], rows)
    if found is None or None in found:
        return ""
    on = found == [(b * length + p) % rows.shape[0] for p in range(length)]
    return (f"{_ZEROED}, the first sequence gets the right rows, but sequence {b} gets rows "
            f"{', '.join(map(str, found[:6]))}{', ...' if length > 6 else ''}"
            + (f": the positions go on counting from one sequence to the next ({b} * L = {b * length} onwards)"
               if on else "") + ". Each sequence counts its positions from 0 again: the same rows, table[:L], for "
            "every sequence of the batch (they broadcast over it).")


@probe
def _position_probe(pair, cfg, label, ids) -> str:
    """With every token (and type) vector zero, the output is the positions alone: which row went where?"""
    tables = ["token.weight"] + (["token_type.weight"] if cfg.type_vocab_size else [])
    try:
        got = _tokens_zero(pair, label, ids, tables).double()
    except ExerciseError:
        return ""
    table, norm = _table(pair.ref, cfg), pair.ref.norm if pair.ref.norm is not None else (lambda t: t)
    with torch.no_grad():
        rows = norm(table).double()  # what position j alone gives
        zero = norm(torch.zeros_like(table[:1])).double()
    length = ids.shape[1]
    if got.shape != (ids.shape[0], length, table.shape[1]):
        return ""
    skipped = _padding_skipped(pair, cfg, label, ids, got, rows)
    if skipped or _close(got[0], rows[:length], 2.0):
        return skipped or _later_sequences(got, rows)
    if not all(_close(got[b], got[0], 2.0) for b in range(1, got.shape[0])):
        return (f"{_ZEROED} your outputs still differ from one sequence to another, but the same positions must get "
                "the same vectors in every sequence, whatever its token ids: the first L rows of the table, broadcast "
                "over the batch.")
    if _close(got[0], zero.expand(length, -1), 2.0):
        return (f"{_ZEROED} your Embeddings gives nothing (or the LayerNorm of zeros), so no position vectors reach "
                "the output: add table[:L].")
    found = _rows_found(got[0], rows)
    if None not in found:
        shown = ", ".join(f"position {p} gets row {j}" for p, j in [(p, j) for p, j in enumerate(found) if p != j][:4])
        return (f"{_ZEROED}, your Embeddings adds the wrong rows of the position table: {shown} (the vector of row j "
                "where row p belongs). The token at position p takes row p: table[:L].")
    plain = table[:length].double()
    if pair.ref.norm is not None:
        with torch.no_grad():
            twice = norm(norm(table[:length])).double()
        if _close(got[0], twice, 2.0):
            return (f"{_ZEROED} your output is the LayerNorm of the position rows applied twice: normalise the sum "
                    "once, x = self.norm(x), then the dropout.")
        if _close(got[0], plain, 2.0):
            return (f"{_ZEROED} and no token_type_ids given, your output is the position rows without the LayerNorm: "
                    "the norm (and type 0's vector, when there are token types) must be applied whether or not "
                    "token_type_ids is given.")
    worst = float((got[0] - rows[:length]).abs().max())
    return (f"{_ZEROED} your output at each position is not the row of the position table it should be, nor any "
            f"other row (up to {worst:.4g} away): the position vectors are changed before they are added, or what "
            "follows them (the LayerNorm) changes them. Add table[:L] as it is and normalise the sum once.")


@probe
def _token_probe(pair, cfg, label, ids, types) -> str:
    """Without a LayerNorm the embeddings are linear in the token table: by what factor does yours scale it?"""
    if cfg.embedding_norm:
        return ""
    try:
        got, without = pair.call(label, ids, types), _tokens_zero(pair, label, ids)
    except ExerciseError:
        return ""
    tok = pair.ref.token.weight.detach()[ids].double()
    part = got.double() - without.double()
    if part.shape != tok.shape:
        return ""
    factor = float((part * tok).sum() / (tok * tok).sum())
    want = math.sqrt(cfg.d_model) if cfg.scale_embeddings else 1.0
    if abs(factor - want) < 1e-3 * want or not _close(part, factor * tok, 4.0):
        return ""
    return (f"your token vectors are multiplied by {factor:.4g}, and this config asks for "
            + (f"sqrt(d_model) = {want:g} (scale_embeddings=True): self.token(token_ids) * math.sqrt(d_model)."
               if cfg.scale_embeddings else "no factor (scale_embeddings=False): self.token(token_ids) as it is."))


# ----------------------------------------------------------------------------------------------
# The check


def _keys(name, cand, ref) -> None:
    """The learner's state-dict keys are the package's (a checkpoint loads by them)."""
    mine, theirs = set(cand.state_dict()), set(ref.state_dict())
    missing = sorted(theirs - mine)
    extra = sorted(k for k in mine - theirs if not k.startswith("norm."))
    if missing:
        raise ExerciseError(
            f"Your {name} has no {', '.join(f'`{k}`' for k in missing)} in its state dict, which the course's "
            f"Embeddings has; a checkpoint's weights load by these names.\nHint: keep the __init__ the exercise "
            "gives (self.token, self.position for learned positions, self.token_type, self.norm).")
    if extra:
        raise ExerciseError(
            f"Your {name} saves {', '.join(f'`{k}`' for k in extra)} in its state dict, which the course's "
            "Embeddings does not: a checkpoint would not load into it.\nHint: a fixed table such as the sinusoids "
            "is not a weight: register_buffer(..., persistent=False), as the exercise's __init__ does.")


def _pair(name, cls, cfg, seed) -> Pair:
    """The learner's module built from ``cfg``, its tables random, and the reference with the same values."""
    from ..encoder import Embeddings as Reference

    return Pair(name, cls, (cfg,), Reference(cfg.replace(implementation="eager")), seed=seed,
                norms=("norm",) if cfg.embedding_norm else (), inputs=("token_ids", "token_type_ids"),
                what="the embeddings (B, L, d_model)", rehint=lambda exc, ids, *_: _hint(exc, cfg, ids),
                before=functools.partial(_keys, name))


def _cases(cfg, g):
    n = cfg.type_vocab_size
    ids, long_ids, short = (torch.randint(0, cfg.vocab_size, shape, generator=g)
                            for shape in ((3, 7), (1, cfg.max_len), (2, 3)))

    def typed(*shape):  # token types of this shape, when the config has them
        return torch.randint(0, n, shape, generator=g) if n else None

    out = [("token_ids (3, 7), no token_type_ids", ids, None)]
    if n:  # given first: then without them
        out.insert(0, ("token_ids (3, 7) and token_type_ids (3, 7)", ids, typed(3, 7)))
    return out + [(f"a batch of one as long as max_len, token_ids (1, {cfg.max_len})", long_ids, typed(1, cfg.max_len)),
                  ("token_ids (2, 3)" + (" and token_type_ids (2, 3)" if n else ""), short, typed(2, 3))]


_HINT = ("x = self.token(token_ids), times math.sqrt(d_model) if config.scale_embeddings; + the first L position "
         "vectors; + self.token_type(token_type_ids) (zeros when none are given) if there are token types; "
         "self.norm(x) if there is a norm; self.dropout(x) last.")
_DROPOUT_HINT = ("\nHint: use self.dropout (an nn.Dropout, which switches off in eval()); F.dropout(x, p) needs "
                 "training=self.training.")


@_checker("embeddings")
def check_embeddings(cls):
    """Check an ``Embeddings(config)`` class: ``forward(token_ids, token_type_ids=None) -> (B, L, d_model)``."""
    name = exercise("embeddings").name
    g = _gen(8)
    for index, (desc, cfg) in enumerate(_configs()):
        pair = _pair(name, cls, cfg, 60 + index)
        cases = _cases(cfg, g)
        for mode in pair.modes("eval", "train"):
            for case, ids, types in cases:
                label = f"{desc}, {case}, in {mode}() mode"
                pair.check(
                    label, (ids, types), _mistakes(cfg, mode), (ids, types, pair.ref, cfg), _HINT, factor=2.0,
                    unrepeatable="dropout is active in eval mode, or something is kept from one call to the next."
                                 f"{_DROPOUT_HINT}",
                    random_hint="this config has dropout=0.0, so nothing in your Embeddings may be random: build "
                                "the dropout from the config, nn.Dropout(config.dropout), not from a fixed rate.",
                    probes=[functools.partial(_token_probe, pair, cfg, label, ids, types),
                            functools.partial(_position_probe, pair, cfg, label, ids),
                            pair.settings_probe(label, (ids, types), _settings(cfg), 2.0)],
                    axes=("sequence", "position", "feature"))
        case, ids, types = cases[-1]
        pair.gradients(f"{desc}, {case}, in eval() mode", ids, types)
        if index < 2:
            _check_dropout(name, cls, cfg, desc, cases[0][1], 70 + index)


def _check_dropout(name, cls, cfg, desc, ids, seed) -> None:
    """With dropout p, train() mode zeroes some values and scales the rest by 1 / (1 - p): dropout is the last step."""
    pair = _pair(name, cls, cfg.replace(dropout=_P), seed)
    label = f"{desc}, dropout={_P}, token_ids (3, 7)"
    pair.cand.eval()
    settled = pair.call(f"{label}, in eval() mode", ids)
    if not _identical(pair.call(f"{label}, in eval() mode", ids), settled) or not _close(settled, pair.want(ids), 2.0):
        raise ExerciseError(f"Your {name} is right with dropout=0.0 but not with dropout={_P} {desc}, in eval() mode: "
                            f"dropout is active in eval mode.{_DROPOUT_HINT}")
    pair.cand.train()
    label = f"{label}, in train() mode"
    first, second = pair.call(label, ids), pair.call(label, ids)
    if _identical(first, second):
        raise ExerciseError(
            f"Your {name} gives exactly the same output twice {label}, so no dropout is happening during "
            "training.\nHint: end forward with self.dropout(x).")
    y, e = first.detach().double(), settled.detach().double()
    alive = (y != 0) & (e.abs() > 1e-6)
    ratio = y[alive] / e[alive]
    scale = 1.0 / (1.0 - _P)
    if ratio.numel() and torch.allclose(ratio, ratio.median().expand_as(ratio), rtol=1e-3, atol=0.0):
        if abs(float(ratio.median()) - scale) > 1e-3 * scale:
            raise ExerciseError(
                f"The dropout of your {name} scales the values it keeps by {float(ratio.median()):.3g} {label}, but "
                f"dropout={_P} keeps each value with probability 1 - p and scales it by 1 / (1 - p) = {scale:.3g}."
                "\nHint: apply self.dropout once, built from config.dropout; p is the probability to drop.")
        return
    raise ExerciseError(
        f"In train() mode the output of your {name} is not the eval() output with some values zeroed and the rest "
        f"scaled by 1 / (1 - p) {label}: dropout is not the last step. Dropout goes on the finished embeddings, "
        "x = self.dropout(x) after the sum (and after the LayerNorm when there is one), not on one part of the "
        "sum or before the norm.")
