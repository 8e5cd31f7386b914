"""Parameter counts from a configuration alone (measure.counting.analytic_parameter_counts, notebook 08)."""

import pytest

import encoder_course as ec
from encoder_course.measure.counting import analytic_parameter_counts


@pytest.mark.parametrize("changes", [
    {},
    {"norm_first": True},
    {"positions": "learned", "type_vocab_size": 2, "embedding_norm": True},
    {"activation": "swiglu", "norm_first": True, "positions": "learned"},
    {"n_layers": 3, "d_model": 48, "n_heads": 6, "d_ff": 100, "vocab_size": 77, "max_len": 33},
])
def test_analytic_count_equals_count_parameters(changes):
    config = ec.EncoderConfig(vocab_size=100, max_len=40, d_model=32, n_heads=4, d_ff=64, n_layers=2)
    config = config.replace(**changes)
    assert analytic_parameter_counts(config) == ec.count_parameters(ec.Encoder(config))


def test_analytic_count_bert_base():
    counts = analytic_parameter_counts(ec.EncoderConfig.bert_base())
    assert counts["total"] == 108_891_648
    assert counts["embeddings"] == 23_837_184
