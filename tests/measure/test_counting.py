"""encoder_course.measure.counting: exact parameter counts of built models (count_parameters) and from a
configuration alone (analytic_parameter_counts, notebook 08)."""

import pytest
import torch

import encoder_course as ec
from encoder_course.measure.counting import analytic_parameter_counts


def test_bert_base_counts_exactly():
    with torch.device("meta"):
        model = ec.Encoder(ec.EncoderConfig.bert_base())
    counts = ec.count_parameters(model)
    assert counts["total"] == 108_891_648
    assert counts["embeddings"] == 23_837_184
    per_layer = sum(p.numel() for p in model.layers[0].parameters())
    assert per_layer == 7_087_872
    assert counts["attention"] + counts["feed_forward"] + counts["norms"] == 12 * 7_087_872 == 85_054_464
    assert counts["other"] == 0
    pooler = torch.nn.Linear(768, 768, device="meta")
    assert counts["total"] + sum(p.numel() for p in pooler.parameters()) == 109_482_240


def test_minilm_and_original_counts():
    with torch.device("meta"):
        minilm = ec.Encoder(ec.EncoderConfig.minilm_l6())
        original = ec.Encoder(ec.EncoderConfig.original())
    assert ec.count_parameters(minilm)["total"] == 22_565_376
    # The original base encoder: 37000 x 512 embedding, 6 x (4 x 512^2 + 2 x 512 x 2048 + biases + norms).
    per_layer = 4 * (512 * 512 + 512) + (512 * 2048 + 2048) + (2048 * 512 + 512) + 2 * 2 * 512
    assert ec.count_parameters(original)["total"] == 37000 * 512 + 6 * per_layer
    assert ec.count_parameters(original)["embeddings"] == 37000 * 512


def test_ffn_vs_attention_weights_at_512():
    ffn = ec.FeedForward(512, 2048)
    mha = ec.MultiHeadAttention(512, 8)
    assert ffn.w1.weight.numel() + ffn.w2.weight.numel() == 2_097_152
    assert sum(m.weight.numel() for m in (mha.w_q, mha.w_k, mha.w_v, mha.w_o)) == 1_048_576


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
