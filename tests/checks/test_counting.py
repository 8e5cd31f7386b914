"""The checker of ``parameter_count`` (notebook 08): every wrong answer named, every right one passing."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

import encoder_course as ec
from encoder_course import checks
from encoder_course.measure import counting

from .catalogue import Catalogue

C_PC = checks.check_parameter_count

CATALOGUE = Catalogue(C_PC)
wrong, right = CATALOGUE.add_wrong, CATALOGUE.add_right


def count_with(c, *, attn_bias=True, ffn_bias=True, ln_vectors=2, norms_per_layer=2, types="field",
               final="pre", positions="field", emb_norm="field", gate=True, layers="all", d_ff=None,
               w_o=True, heads_times=False, head=False):
    """A learner's count, written out, with one slip chosen by keyword (the defaults give the right answer)."""
    d = c.d_model
    f = c.d_ff if d_ff is None else d_ff
    emb = c.vocab_size * d
    if positions == "field" and c.positions == "learned" or positions == "always":
        emb += c.max_len * d
    emb += {"field": c.type_vocab_size, "two": 2, "none": 0}[types] * d
    if emb_norm == "field" and c.embedding_norm or emb_norm == "always":
        emb += ln_vectors * d
    attn = (4 if w_o else 3) * (d * d + (d if attn_bias else 0))
    if heads_times:
        attn *= c.n_heads
    ffn = d * f + f * d + ((f + d) if ffn_bias else 0)
    if c.activation == "swiglu" and gate:
        ffn += d * f + (f if ffn_bias else 0)
    norms = norms_per_layer * ln_vectors * d
    per_layer = attn + ffn + norms
    total = emb + per_layer * (c.n_layers if layers == "all" else 1)
    if final == "pre" and c.norm_first or final == "always":
        total += ln_vectors * d
    if head:
        total += c.vocab_size * d
    return total


# ----------------------------------------------------------------------------------------------
# Wrong answers, each to be named


wrong("pc-package", C_PC, "the package's own parameter_count, passed as the answer",
      "calls the course's own parameter_count")(counting.parameter_count)
wrong("pc-analytic", C_PC, "counting.analytic_parameter_counts(config)['total']",
      "uses the course's own analytic_parameter_counts")(
    lambda c: counting.analytic_parameter_counts(c)["total"])
wrong("pc-build-and-count", C_PC, "ec.count_parameters(ec.Encoder(config))['total']: builds the model",
      "uses the course's own Encoder")(lambda c: ec.count_parameters(ec.Encoder(c))["total"])
wrong("pc-no-attention-bias", C_PC, "the attention projections counted as d_model x d_model, no bias",
      "the biases of the four attention projections are missing")(lambda c: count_with(c, attn_bias=False))
wrong("pc-no-ffn-bias", C_PC, "w1 and w2 counted without their biases",
      "the feed-forward biases are missing")(lambda c: count_with(c, ffn_bias=False))
wrong("pc-no-bias-at-all", C_PC, "every linear layer counted as a matrix only",
      "two slips: the biases of the four attention projections are missing")(
    lambda c: count_with(c, attn_bias=False, ffn_bias=False))
wrong("pc-layernorm-one-vector", C_PC, "a LayerNorm counted as d_model (gamma only)",
      "each LayerNorm is counted with one vector")(lambda c: count_with(c, ln_vectors=1))
wrong("pc-one-norm-per-layer", C_PC, "one LayerNorm per block",
      "each block has two LayerNorms")(lambda c: count_with(c, norms_per_layer=1))
wrong("pc-no-token-types", C_PC, "the token-type (segment) table forgotten",
      "the token-type table is missing")(lambda c: count_with(c, types="none"))
wrong("pc-two-token-types-always", C_PC, "BERT's 2 token types counted for every config",
      "whatever type_vocab_size says")(lambda c: count_with(c, types="two"))
wrong("pc-no-final-norm", C_PC, "pre-LN's final LayerNorm forgotten",
      "the final LayerNorm of pre-LN is missing")(lambda c: count_with(c, final="never"))
wrong("pc-final-norm-always", C_PC, "a final LayerNorm counted for post-LN too",
      "a final LayerNorm is counted for post-LN")(lambda c: count_with(c, final="always"))
wrong("pc-position-table-always", C_PC, "max_len x d_model counted for sinusoidal positions too",
      "a position table is counted for sinusoidal positions")(lambda c: count_with(c, positions="always"))
wrong("pc-no-position-table", C_PC, "the learned position table forgotten",
      "the learned position table is missing")(lambda c: count_with(c, positions="never"))
wrong("pc-no-embedding-norm", C_PC, "BERT's embedding LayerNorm forgotten",
      "the embedding LayerNorm is missing")(lambda c: count_with(c, emb_norm="never"))
wrong("pc-embedding-norm-always", C_PC, "an embedding LayerNorm counted for every config",
      "an embedding LayerNorm is counted where there is none")(lambda c: count_with(c, emb_norm="always"))
wrong("pc-swiglu-two-matrices", C_PC, "SwiGLU counted like GELU: w1 and w2 only",
      "SwiGLU's third matrix is missing")(lambda c: count_with(c, gate=False))
wrong("pc-layers-once", C_PC, "the per-layer count added once, not n_layers times",
      "the blocks are counted once")(lambda c: count_with(c, layers="once"))
wrong("pc-d-ff-4x", C_PC, "d_ff = 4 * d_model assumed",
      "d_ff is taken as 4 x d_model")(lambda c: count_with(c, d_ff=4 * c.d_model))
wrong("pc-no-w-o", C_PC, "three attention projections (w_o forgotten)",
      "the output projection w_o is missing")(lambda c: count_with(c, w_o=False))
wrong("pc-per-head", C_PC, "the attention counted once per head",
      "multiplied by n_heads")(lambda c: count_with(c, heads_times=True))
wrong("pc-output-head", C_PC, "a language-model head (vocab_size x d_model) counted too",
      "an output layer (vocab_size x d_model) is counted")(lambda c: count_with(c, head=True))
wrong("pc-float", C_PC, "d_head = d_model / n_heads, and a float count",
      "returned the float")(lambda c: float(count_with(c)) + 0.0 * (c.d_model / c.n_heads))
wrong("pc-tensor", C_PC, "counts with torch tensors and returns a 0-d tensor",
      "returned a tensor")(lambda c: torch.tensor(count_with(c)))
wrong("pc-none", C_PC, "prints the count instead of returning it", "forget the `return` line")(
    lambda c: None)
wrong("pc-no-types-no-final", C_PC, "two slips at once: token types and pre-LN's final LayerNorm forgotten",
      "two slips: the token-type table is missing")(lambda c: count_with(c, types="none", final="never"))


# Mistakes unlike the listed slips: the probe (one field varied at a time) must name them.
wrong("pc-probe-pooler", C_PC, "BERT's pooler counted (d_model x d_model + d_model), which Encoder has not",
      "d_model x d_model + d_model too many, whatever the layers")(
    lambda c: count_with(c) + c.d_model * c.d_model + c.d_model)
wrong("pc-probe-one-block-short", C_PC, "range(1, n_layers): one block too few",
      "it grows as if there were")(
    lambda c: 2 * count_with(c) - count_with(dataclasses.replace(c, n_layers=c.n_layers + 1)))  # one layer less
wrong("pc-probe-gate-bias", C_PC, "SwiGLU's gate counted without its bias", "128 = d_ff short per layer")(
    lambda c: count_with(c) - (c.n_layers * c.d_ff if c.activation == "swiglu" else 0))
wrong("pc-probe-gate-squared", C_PC, "SwiGLU's gate counted as d_ff x d_ff, where it maps d_model to d_ff",
      "d_ff x d_ff - d_model x d_ff too many per layer")(
    lambda c: count_with(c) + (c.n_layers * (c.d_ff - c.d_model) * c.d_ff if c.activation == "swiglu" else 0))
wrong("pc-probe-output-bias", C_PC, "an output layer's bias (vocab_size) counted", "1 too many per vocabulary entry")(
    lambda c: count_with(c) + c.vocab_size)

wrong("pc-types-inside-emb-norm", C_PC, "the token-type table counted inside `if config.embedding_norm:`",
      "the token-type table is missing")(
    lambda c: count_with(c) - (0 if c.embedding_norm else c.type_vocab_size * c.d_model))
wrong("pc-probe-w2-bias-d-ff", C_PC, "w2's bias counted as d_ff wide, like w1's", "d_ff - d_model too many per layer")(
    lambda c: count_with(c) + c.n_layers * (c.d_ff - c.d_model))
wrong("pc-probe-12-layers", C_PC, "12 layers hard-coded (BERT-base's) where config.n_layers belongs",
      "your formula does not read the field")(
    lambda c: count_with(dataclasses.replace(c, n_layers=12)))
wrong("pc-probe-pooler-with-types", C_PC, "BERT's pooler counted whenever there are token types",
      "d_model x d_model + d_model more than it should")(
    lambda c: count_with(c) + (c.d_model * c.d_model + c.d_model if c.type_vocab_size else 0))
wrong("pc-roberta-offset", C_PC, "the position table counted as (max_len + 2) rows, as RoBERTa's is",
      "counted with 2 rows more than max_len")(
    lambda c: count_with(c) + (2 * c.d_model if c.positions == "learned" else 0))
wrong("pc-bias-per-head", C_PC, "each attention bias counted as n_heads numbers, one per head",
      "counted with one number per head")(
    lambda c: count_with(c, attn_bias=False) + c.n_layers * 4 * c.n_heads)
wrong("pc-bias-d-head", C_PC, "each attention bias counted as d_head numbers",
      "counted as d_head = d_model // n_heads numbers")(
    lambda c: count_with(c, attn_bias=False) + c.n_layers * 4 * (c.d_model // c.n_heads))


# ----------------------------------------------------------------------------------------------
# Right answers, in many styles, each to pass


right("pc-formulas", C_PC, "the formulas written out, component by component")(count_with)


@right("pc-helpers", C_PC, "helpers linear(i, o) and layer_norm(d), a sum of the parts")
def pc_helpers(config):
    def linear(i, o):
        return i * o + o

    def layer_norm(d):
        return 2 * d

    d = config.d_model
    embeddings = config.vocab_size * d + config.type_vocab_size * d
    if config.positions == "learned":
        embeddings += config.max_len * d
    if config.embedding_norm:
        embeddings += layer_norm(d)
    ffn = linear(d, config.d_ff) + linear(config.d_ff, d)
    if config.activation == "swiglu":
        ffn += linear(d, config.d_ff)
    block = 4 * linear(d, d) + ffn + 2 * layer_norm(d)
    return embeddings + config.n_layers * block + (layer_norm(d) if config.norm_first else 0)


@right("pc-shape-table", C_PC, "a table of every parameter's shape, like a state_dict, summed with math.prod")
def pc_shapes(config):
    d, f = config.d_model, config.d_ff
    shapes = [(config.vocab_size, d)]
    shapes += [(config.max_len, d)] if config.positions == "learned" else []
    shapes += [(config.type_vocab_size, d)] if config.type_vocab_size else []
    shapes += [(d,), (d,)] if config.embedding_norm else []
    for _ in range(config.n_layers):
        shapes += [(d, d), (d,)] * 4
        shapes += [(f, d), (f,), (d, f), (d,)] + ([(f, d), (f,)] if config.activation == "swiglu" else [])
        shapes += [(d,)] * 4
    shapes += [(d,), (d,)] if config.norm_first else []
    return sum(math.prod(s) for s in shapes)


@right("pc-numpy-int", C_PC, "np.sum of the parts: a NumPy integer")
def pc_numpy(config):
    return np.sum([count_with(config)], dtype=np.int64)


@right("pc-per-layer-closed-form", C_PC, "4d^2 + 4d + 2 d d_ff + d_ff + d (+ gate) + 4d per layer, one expression")
def pc_closed(config):
    d, f, n = config.d_model, config.d_ff, config.n_layers
    gate = (d * f + f) if config.activation == "swiglu" else 0
    per_layer = 4 * d * d + 4 * d + 2 * d * f + f + d + gate + 4 * d
    tables = config.vocab_size + config.type_vocab_size + (config.max_len if config.positions == "learned" else 0)
    norms = 2 * d * (int(config.embedding_norm) + int(config.norm_first))
    return tables * d + n * per_layer + norms


@right("pc-fields-by-name", C_PC, "reads the fields through dataclasses.asdict, a dict of parts")
def pc_asdict(config):
    import dataclasses

    cfg = dataclasses.asdict(config)
    d = cfg["d_model"]
    parts = {
        "token": cfg["vocab_size"] * d,
        "position": cfg["max_len"] * d * (cfg["positions"] == "learned"),
        "type": cfg["type_vocab_size"] * d,
        "embedding_norm": 2 * d * cfg["embedding_norm"],
        "layers": cfg["n_layers"] * _layer(d, cfg["d_ff"], cfg["activation"]),
        "final_norm": 2 * d * cfg["norm_first"],
    }
    return int(sum(parts.values()))


def _layer(d, f, activation):
    matrices = 3 if activation == "swiglu" else 2
    return 4 * (d * d + d) + matrices * d * f + (matrices - 1) * f + d + 4 * d


test_catalogue_cases, test_wrong_answer_is_named, test_right_answer_passes = CATALOGUE.tests()


def test_the_checker_counts_what_count_parameters_finds_on_the_built_models():
    """The checker reads its totals from the formulas: they equal count_parameters on every hidden config."""
    from encoder_course.checks.counting import _configs

    for label, config in _configs():
        with torch.device("meta"):  # the shapes without the memory
            built = ec.count_parameters(ec.Encoder(config))
        assert counting.analytic_parameter_counts(config) == built, label


def test_the_reference_needs_a_config():
    import pytest

    assert counting.parameter_count(ec.EncoderConfig.bert_base()) == 108_891_648
    with pytest.raises(TypeError, match="config must be an EncoderConfig"):
        counting.parameter_count({"d_model": 768})
