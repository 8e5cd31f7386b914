"""Checker of ``parameter_count(config) -> int`` (notebook 08): an encoder's size from its config alone.

The learner's count is compared with ``count_parameters(Encoder(config))["total"]`` on hidden
configurations chosen so that every component matters somewhere: BERT-base and all-MiniLM-L6-v2
(learned positions, two token types, an embedding LayerNorm, post-LN), the 2017 encoder (sinusoidal
positions, no token types, no embedding norm, ReLU), small pre-LN encoders with a final LayerNorm,
a SwiGLU one, and ``d_ff`` that is not ``4 * d_model``. (The checker reads those totals from
``analytic_parameter_counts``, which the tests prove equal to ``count_parameters`` on the built model for
every one of these configurations: building BERT-base, even on the meta device, costs a grading process
about two seconds.)

Where a count is wrong, the checker looks for the usual slips that explain the difference on every
configuration at once (one slip, or two together): a forgotten bias, a LayerNorm counted with one
vector, the token-type table forgotten or counted when there is none, the final LayerNorm of pre-LN
forgotten or counted for post-LN, a position table counted for sinusoidal positions, the embedding
LayerNorm, SwiGLU's third matrix, the layers counted once, ``d_ff`` taken as ``4 * d_model``, ...
Building the model (``Encoder``, ``count_parameters``) inside the answer is out of reach, as the
reference is: the exercise is the closed form.
"""

from __future__ import annotations

import dataclasses
import itertools
import numbers

import torch

from ._compare import probe
from ._run import ExerciseError, _checker, _invoke
from .registry import exercise


def _configs():
    """(label, config) pairs: the hidden configurations, each labelled as the learner will read it."""
    from ..encoder import EncoderConfig

    small = dict(vocab_size=1000, max_len=128, dropout=0.0)
    return [
        ("for EncoderConfig.bert_base()", EncoderConfig.bert_base()),
        ("for EncoderConfig.minilm_l6()", EncoderConfig.minilm_l6()),
        ("for EncoderConfig.original() (the 2017 encoder: sinusoidal positions, no token types, no embedding "
         "LayerNorm)", EncoderConfig.original()),
        ("for a small pre-LN encoder (norm_first=True, d_model=64, d_ff=200, 3 layers, learned positions, "
         "no token types)",
         EncoderConfig(d_model=64, n_heads=4, d_ff=200, n_layers=3, norm_first=True, positions="learned", **small)),
        ("for a SwiGLU encoder (activation='swiglu', pre-LN, d_model=48, d_ff=128, 2 layers, 3 token types, "
         "an embedding LayerNorm)",
         EncoderConfig(d_model=48, n_heads=4, d_ff=128, n_layers=2, activation="swiglu", norm_first=True,
                       type_vocab_size=3, embedding_norm=True, **small)),
        ("for a post-LN encoder with learned positions and an embedding LayerNorm but no token types "
         "(d_model=96, d_ff=192, 5 layers)",
         EncoderConfig(d_model=96, n_heads=3, d_ff=192, n_layers=5, positions="learned", embedding_norm=True,
                       **small)),
        ("for a one-layer pre-LN encoder (d_model=32, d_ff=128)",
         EncoderConfig(d_model=32, n_heads=2, d_ff=128, n_layers=1, norm_first=True, **small)),
        ("for a post-LN encoder with 2 token types and no embedding LayerNorm (d_model=40, d_ff=100, 2 layers, "
         "sinusoidal positions)",
         EncoderConfig(d_model=40, n_heads=4, d_ff=100, n_layers=2, type_vocab_size=2, embedding_norm=False,
                       **small)),
    ]


def _per_layer(c, d_ff=None) -> int:
    d, f = c.d_model, c.d_ff if d_ff is None else d_ff
    ffn = 2 * d * f + f + d + ((d * f + f) if c.activation == "swiglu" else 0)
    return 4 * (d * d + d) + ffn + 2 * 2 * d


def _n_norms(c) -> int:
    return 2 * c.n_layers + int(c.norm_first) + int(c.embedding_norm)


# Each slip: what it is called, and how much it adds to (or takes from) the right count of config c.
_SLIPS = {
    "attn_bias": ("the biases of the four attention projections are missing (4 x d_model per layer)",
                  lambda c: -c.n_layers * 4 * c.d_model),
    "ffn_bias": ("the feed-forward biases are missing (d_ff for w1, d_model for w2"
                 " and d_ff for SwiGLU's gate, per layer)",
                 lambda c: -c.n_layers * (c.d_ff + c.d_model + (c.d_ff if c.activation == "swiglu" else 0))),
    "ln_one": ("each LayerNorm is counted with one vector of d_model; it has two, gamma (weight) and beta "
               "(bias): 2 x d_model each",
               lambda c: -_n_norms(c) * c.d_model),
    "ln_block_half": ("the blocks' LayerNorms are counted short by 2 x d_model per layer: each block has two "
                      "LayerNorms (norm1 and norm2), each with two vectors of d_model (gamma and beta), "
                      "4 x d_model per layer",
                      lambda c: -c.n_layers * 2 * c.d_model),
    "type_forgotten": ("the token-type table is missing: type_vocab_size x d_model (BERT's segment embeddings)",
                       lambda c: -c.type_vocab_size * c.d_model),
    "type_fixed": ("a token-type table of 2 rows is counted whatever type_vocab_size says: it has "
                   "type_vocab_size rows, and none when type_vocab_size is 0",
                   lambda c: (2 - c.type_vocab_size) * c.d_model),
    "final_forgotten": ("the final LayerNorm of pre-LN is missing: with norm_first=True the encoder ends with "
                        "one more LayerNorm (2 x d_model)",
                        lambda c: -2 * c.d_model if c.norm_first else 0),
    "final_post": ("a final LayerNorm is counted for post-LN: only pre-LN (norm_first=True) ends with one; "
                   "post-LN blocks already end with their norm2",
                   lambda c: 0 if c.norm_first else 2 * c.d_model),
    "pos_sinusoidal": ("a position table is counted for sinusoidal positions: sinusoids are computed, not "
                       "learned, so they have no parameters (only positions='learned' has a max_len x d_model "
                       "table)",
                       lambda c: c.max_len * c.d_model if c.positions == "sinusoidal" else 0),
    "pos_forgotten": ("the learned position table is missing: positions='learned' adds max_len x d_model",
                      lambda c: -c.max_len * c.d_model if c.positions == "learned" else 0),
    "emb_norm_forgotten": ("the embedding LayerNorm is missing: embedding_norm=True adds 2 x d_model",
                           lambda c: -2 * c.d_model if c.embedding_norm else 0),
    "emb_norm_counted": ("an embedding LayerNorm is counted where there is none: only embedding_norm=True "
                         "adds one",
                         lambda c: 0 if c.embedding_norm else 2 * c.d_model),
    "swiglu_third": ("SwiGLU's third matrix is missing: activation='swiglu' has a gate w3 (d_model x d_ff, "
                     "with its bias) beside w1 and w2",
                     lambda c: -c.n_layers * (c.d_model * c.d_ff + c.d_ff) if c.activation == "swiglu" else 0),
    "layers_once": ("the blocks are counted once: each of the n_layers blocks has its own weights, so the "
                    "per-layer count is multiplied by n_layers",
                    lambda c: -(c.n_layers - 1) * _per_layer(c)),
    "d_ff_4x": ("d_ff is taken as 4 x d_model: use config.d_ff (4 x d_model is a convention, and not this "
                "config's)",
                lambda c: c.n_layers * (_per_layer(c, 4 * c.d_model) - _per_layer(c))),
    "no_w_o": ("the output projection w_o is missing: attention has four d_model x d_model projections with "
               "biases (w_q, w_k, w_v, w_o)",
               lambda c: -c.n_layers * (c.d_model * c.d_model + c.d_model)),
    "heads_times": ("the attention's parameters are multiplied by n_heads: the heads share the four "
                    "d_model x d_model projections (each head uses a d_head slice of them)",
                    lambda c: c.n_layers * (c.n_heads - 1) * 4 * (c.d_model * c.d_model + c.d_model)),
    "d_head_proj": ("each projection is counted as d_model x d_head: one projection serves all heads, "
                    "d_model x d_model",
                    lambda c: c.n_layers * 4 * (c.d_model * (c.d_model // c.n_heads) + c.d_model // c.n_heads
                                               - c.d_model * c.d_model - c.d_model)),
    "attn_bias_heads": ("each attention projection's bias is counted with one number per head (n_heads); a "
                        "bias has one number per output feature: d_model each, 4 x d_model per layer",
                        lambda c: c.n_layers * 4 * (c.n_heads - c.d_model)),
    "attn_bias_d_head": ("each attention projection's bias is counted as d_head = d_model // n_heads numbers; one "
                         "projection serves all heads, and its bias has d_model numbers: 4 x d_model per layer",
                         lambda c: c.n_layers * 4 * (c.d_model // c.n_heads - c.d_model)),
    "pos_offset": ("the position table is counted with 2 rows more than max_len (RoBERTa's has max_len + 2, for "
                   "its padding offset): this encoder's table has max_len rows, positions 0 to max_len - 1",
                   lambda c: 2 * c.d_model if c.positions == "learned" else 0),
    "output_head": ("an output layer (vocab_size x d_model) is counted that the encoder does not have: only the "
                    "token table has vocab_size rows",
                    lambda c: c.vocab_size * c.d_model),
    "vocab_forgotten": ("the token embedding table is missing: vocab_size x d_model",
                        lambda c: -c.vocab_size * c.d_model),
}


def _explain(diff: list[int], configs) -> str:
    """The slip (or pair of slips) whose changes explain every difference (``diff``), if there is one."""
    deltas = {text: [fn(c) for c in configs] for text, fn in _SLIPS.values()}
    for text, delta in deltas.items():
        if delta == diff:
            return text + "."
    live = [text for text, delta in deltas.items() if any(delta)]
    for a, b in itertools.combinations(live, 2):
        if [x + y for x, y in zip(deltas[a], deltas[b])] == diff:
            return f"two slips: {a}; and {b}."
    return ""


def _variations(c):
    """(what changes, the config with that one change, how much the field changes, the unit a difference is given
    per: "per layer", whether it changes every layer alike) for the probe, each a valid config."""
    swap = dataclasses.replace
    return [("one more layer", swap(c, n_layers=c.n_layers + 1), 1, "layer", False),
            ("a vocabulary 1,000 tokens larger", swap(c, vocab_size=c.vocab_size + 1000), 1000, "vocabulary entry",
             False),
            ("d_ff 64 larger", swap(c, d_ff=c.d_ff + 64), 64, "unit of d_ff", True),
            ("max_len 64 longer", swap(c, max_len=c.max_len + 64), 64, "position", False),
            ("no token types" if c.type_vocab_size else "two token types",
             swap(c, type_vocab_size=0 if c.type_vocab_size else 2), 1, "", False),
            ("pre-LN instead of post-LN" if not c.norm_first else "post-LN instead of pre-LN",
             swap(c, norm_first=not c.norm_first), 1, "", False),
            ("no embedding LayerNorm" if c.embedding_norm else "an embedding LayerNorm",
             swap(c, embedding_norm=not c.embedding_norm), 1, "", False),
            ("sinusoidal positions instead of learned" if c.positions == "learned" else
             "learned positions instead of sinusoidal",
             swap(c, positions="sinusoidal" if c.positions == "learned" else "learned"), 1, "", False),
            ("SwiGLU instead of " + {"gelu": "GELU", "relu": "ReLU"}.get(c.activation, c.activation)
             if c.activation != "swiglu" else "GELU instead of SwiGLU",
             swap(c, activation="gelu" if c.activation == "swiglu" else "swiglu"), 1, "", True)]


def _in_units(amount: int, c) -> str:
    """``amount`` written with the config's sizes ("1,536 = 2 x d_model"), when a short formula fits."""
    d, f = c.d_model, c.d_ff
    terms = {"d_model x d_model": d * d, "d_model x d_ff": d * f, "d_ff x d_ff": f * f, "d_model": d, "d_ff": f}
    fits = [coefs for coefs in itertools.product(range(-3, 4), range(-3, 4), range(-2, 3), range(-4, 5), range(-3, 4))
            if any(coefs) and sum(k * v for k, v in zip(coefs, terms.values())) == amount]
    if not fits:
        return f"{amount:,}"
    best = min(fits, key=lambda coefs: sum(1 for k in coefs if k) * 10 + sum(abs(k) for k in coefs))  # the shortest
    used = sorted(((k, name) for k, name in zip(best, terms) if k), key=lambda term: term[0] < 0)  # + terms first
    formula = " ".join(("- " if k < 0 else "+ ") + ("" if abs(k) == 1 else f"{abs(k)} x ") + name for k, name in used)
    return f"{amount:,} = {formula.removeprefix('+ ')}"


@probe
def _probe(name: str, fn, config, label: str) -> str:
    """Vary one field of ``config`` at a time and name the change the learner's count responds to wrongly."""
    from ..measure.counting import analytic_parameter_counts

    def count(c, what=""):
        value = _invoke(name, f"for the same config with {what}" if what else "", fn, c)
        return int(value) if isinstance(value, numbers.Integral) and not isinstance(value, bool) else None

    base, right = count(config), analytic_parameter_counts(config)["total"]
    if base is None:
        return ""
    responses = []
    for what, varied, step, unit, per_layer in _variations(config):
        try:
            mine = count(varied, what)
            want = analytic_parameter_counts(varied)["total"] - right
        except (ExerciseError, ValueError, TypeError):
            continue  # this change is one the answer does not handle at all; the others say more
        if mine is None:
            continue
        responses.append(what)
        if mine == base and want:
            return (f"Varying one thing at a time {label}: {what} leaves your count where it was, {base:,}, but "
                    f"changes Encoder(config)'s by {want:+,}: your formula does not read the field that {what} changes "
                    "(a fixed number where a config field belongs?).\nHint: take every size from the config "
                    "(config.n_layers, config.vocab_size, config.d_ff, ...), never from one model's numbers.")
        if mine - base != want:
            off = (mine - base) - want
            # A change that adds parameters: the count gained too little (short) or too much; one that removes
            # some: the count lost too much (what it counted where it should not) or too little.
            sign = ("short" if off < 0 else "too many") if want >= 0 else (
                "more than it should" if off < 0 else "less than it should")
            size = (f"{_in_units(abs(off) // step, config)} {sign} per {unit}" if unit and off % step == 0
                    else f"{_in_units(abs(off), config)} {sign}")
            size = f"is {size}" if want >= 0 else f"falls by {size}"
            layers = config.n_layers * (mine - base) / want if want else None
            if per_layer and layers is not None and layers.is_integer() and 0 <= layers <= 2 * config.n_layers \
                    and layers != config.n_layers:
                size += f": it grows as if there were {int(layers)} layers, not {config.n_layers}"
            return (f"Varying one thing at a time {label}: {what} changes your count by {mine - base:+,}, but changes "
                    f"Encoder(config)'s by {want:+,}; your count {size}.\nHint: find the part of your "
                    f"formula that {what} touches, and count it again from the model's parameters.")
    if not responses:
        return ""
    off = base - right
    layer = analytic_parameter_counts(dataclasses.replace(config, n_layers=config.n_layers + 1))["total"] - right
    if off % layer == 0 and abs(off // layer) <= config.n_layers:
        cause = (f"exactly {abs(off // layer)} block{'s' if abs(off) > layer else ''} of {layer:,} "
                 f"{'too few' if off < 0 else 'too many'}: count all n_layers blocks (range(n_layers), from 0)")
    else:
        cause = (f"{_in_units(abs(off), config)} {'short' if off < 0 else 'too many'}, whatever the layers, "
                 "vocabulary, d_ff or norms: a part counted (or left out) that none of them changes"
                 + (", the size of one d_model x d_model layer with its bias (BERT's pooler? Encoder has none)"
                    if off == config.d_model ** 2 + config.d_model else ""))
    return (f"Varying one thing at a time {label}, your count changes rightly with every change tried "
            f"({', '.join(responses)}); the difference is {cause}.")


def _check_number(name: str, value, label: str, want: int) -> int:
    if isinstance(value, bool) or value is None:
        forgot = "\nHint: did you forget the `return` line?" if value is None else ""
        raise ExerciseError(f"Your {name} returned {value!r} {label}; it should return the number of "
                            f"parameters, an int.{forgot}")
    if isinstance(value, torch.Tensor):
        raise ExerciseError(
            f"Your {name} returned a tensor {label}"
            + (" (with the right number in it)" if value.numel() == 1 and float(value) == want else "")
            + "; it should return a Python int.\nHint: count with plain Python ints from the config's fields "
              "(no torch.tensor), or convert at the end with int(...)."
        )
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        raise ExerciseError(
            f"Your {name} returned the float {value!r} {label}; it should return an int"
            + (" (the number itself is right)." if float(value) == want else ".")
            + "\nHint: a count has no fractions: use // where you divide (d_head = d_model // n_heads), or "
              "int(...), and no float factors such as 4.0."
        )
    if not isinstance(value, numbers.Integral):
        raise ExerciseError(f"Your {name} returned a {type(value).__name__} {label}; it should return the "
                            "number of parameters, an int.")
    return int(value)


@_checker("parameter_count")
def check_parameter_count(fn):
    """Check ``parameter_count(config) -> int`` against ``count_parameters(Encoder(config))["total"]``."""
    from ..measure.counting import analytic_parameter_counts

    name = exercise("parameter_count").name
    configs = _configs()
    got, want = [], []
    for label, config in configs:
        before = dataclasses.asdict(config)
        value = _invoke(name, label, fn, config)
        if dataclasses.asdict(config) != before:
            raise ExerciseError(f"Your {name} changed the config it was given {label}; count from its fields "
                                "without changing them.")
        right = analytic_parameter_counts(config)["total"]  # = count_parameters(Encoder(config))["total"]
        got.append(_check_number(name, value, label, right))
        want.append(right)
    diff = [g - w for g, w in zip(got, want)]
    if not any(diff):
        return
    first = next(i for i, d in enumerate(diff) if d)
    label, config = configs[first]
    head = (f"Your {name} gives {got[first]:,} {label}, but Encoder(config) has {want[first]:,} parameters "
            f"({diff[first]:+,})")
    slip = _explain(diff, [c for _, c in configs])
    if slip:
        raise ExerciseError(f"{head}: {slip}")
    fits = [text for text, delta in _SLIPS.values() if delta(config) == diff[first]]  # on this one config
    slip = fits[0] if len(fits) == 1 else ""  # (two slips that make the same difference here: the probe decides)
    if slip:
        raise ExerciseError(f"{head}; here the difference is exactly what this slip makes: {slip}")
    # The probe on the first wrong config whose d_ff is no multiple of d_model, where d_ff - d_model and
    # 3 x d_model are different numbers.
    probe = _probe(name, fn, *next(((c, lab) for (lab, c), d in zip(configs, diff) if d and c.d_ff % c.d_model),
                                    (config, label)))
    if probe:
        raise ExerciseError(f"{head}. {probe}")
    parts = analytic_parameter_counts(config)
    shown = ", ".join(f"{key} {parts[key]:,}" for key in ("embeddings", "attention", "feed_forward", "norms"))
    raise ExerciseError(
        f"{head}.\nHint: compare your count part by part with this config's: {shown}. Embeddings: the token "
        "table, a learned position table, token types, the embedding LayerNorm; per layer: four d_model x "
        "d_model projections with biases, the feed-forward matrices with biases, two LayerNorms of 2 x d_model; "
        "and a final LayerNorm for pre-LN."
    )
