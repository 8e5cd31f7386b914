"""Exact parameter and FLOP counts, and clear errors for bad input."""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

import encoder_course as ec
from encoder_course.measure import cost


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


def test_layer_flops_equal_torch_flop_counter():
    torch.manual_seed(0)
    block = ec.EncoderBlock(768, 12, 3072, implementation="eager").eval()
    x = torch.randn(1, 512, 768)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        block(x)
    assert counter.get_total_flops() == cost.layer_flops(512, 768, 3072)["total"] == 8_053_063_680


def test_score_bytes_equal_materialised_scores():
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        scores = torch.empty(2, 3, 64, 64, dtype=dtype)
        assert cost.score_bytes(64, n_heads=3, batch=2, dtype=dtype) == scores.nbytes
    assert cost.score_bytes(4096, dtype=torch.float16) == 32 * 2**20
    assert cost.score_bytes(4096, n_heads=16, dtype=torch.float16) == 512 * 2**20
    assert cost.crossover_length(768, 3072) == 6 * 768


# ---- bad input: each error says what was expected and what came ----

def test_d_model_not_divisible():
    with pytest.raises(ValueError, match=r"d_model \(510\) must be divisible by n_heads \(8\)"):
        ec.MultiHeadAttention(510, 8)
    with pytest.raises(ValueError, match="divisible"):
        ec.EncoderConfig(d_model=510, n_heads=8)


def test_input_width_and_rank():
    mha = ec.MultiHeadAttention(16, 2)
    with pytest.raises(ValueError, match=r"d_model \(16\).*\(2, 3, 12\)"):
        mha(torch.randn(2, 3, 12))
    with pytest.raises(ValueError, match=r"3 dimensions.*\(3, 16\)"):
        mha(torch.randn(3, 16))
    with pytest.raises(TypeError, match="torch.Tensor"):
        mha([[1.0]])
    with pytest.raises(ValueError, match="d_model"):
        ec.LayerNorm(16)(torch.randn(2, 8))
    with pytest.raises(ValueError, match="d_model"):
        ec.FeedForward(16, 32)(torch.randn(2, 3, 8))
    with pytest.raises(ValueError, match="share their last dimension"):
        ec.scaled_dot_product_attention(torch.randn(2, 4), torch.randn(2, 5), torch.randn(2, 5))


def test_mask_errors_name_the_shapes():
    q = torch.randn(2, 4, 8)
    with pytest.raises(TypeError, match="torch.bool"):
        ec.scaled_dot_product_attention(q, q, q, torch.ones(2, 4, 4))
    with pytest.raises(ValueError, match=r"\(2, 3, 4\).*\(2, 4, 4\)"):
        ec.scaled_dot_product_attention(q, q, q, torch.ones(2, 3, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"\(3, 1, 1, 4\).*\(2, 2, 4, 4\)"):
        ec.MultiHeadAttention(16, 2)(torch.randn(2, 4, 16), torch.ones(3, 1, 1, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match="integer"):
        ec.padding_mask(torch.randn(2, 3), 0)


def test_encoder_input_errors():
    enc = ec.Encoder(ec.EncoderConfig(vocab_size=10, max_len=8, d_model=16, n_heads=2, d_ff=32, n_layers=1))
    with pytest.raises(ValueError, match=r"sequence length 9 .*max_len 8"):
        enc(torch.ones(1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match=r"\[0, 10\).*12"):
        enc(torch.tensor([[1, 2, 12]]))
    with pytest.raises(ValueError, match=r"\[0, 10\).*-1"):
        enc(torch.tensor([[-1, 2]]))
    with pytest.raises(ValueError, match=r"shape \(B, L\)"):
        enc(torch.ones(4, dtype=torch.long))
    with pytest.raises(TypeError, match="integer"):
        enc(torch.ones(1, 4))


@pytest.mark.parametrize("changes, error, pattern", [
    ({"n_layers": 0}, ValueError, "n_layers must be a positive int, got 0"),
    ({"dropout": -0.1}, ValueError, r"dropout must be in \[0, 1\), got -0.1"),
    ({"activation": "tanh"}, ValueError, "activation must be one of .*'tanh'"),
    ({"positions": "rotary"}, ValueError, "positions must be one of"),
    ({"d_model": 12.0}, TypeError, "d_model must be an int"),
    ({"eps": 0.0}, ValueError, "eps must be a positive finite number"),
    ({"eps": float("inf")}, ValueError, "eps must be a positive finite number"),
    ({"dropout": "0.1"}, TypeError, "dropout must be a number"),
    ({"norm_first": "yes"}, TypeError, "norm_first must be True or False"),
    ({"norm_first": 0}, TypeError, "norm_first must be True or False"),
    ({"type_vocab_size": 1.5}, TypeError, "type_vocab_size must be an int"),
    ({"pad_id": 0.5}, TypeError, "pad_id must be an int"),
])
def test_bad_config_values(changes, error, pattern):
    with pytest.raises(error, match=pattern):
        ec.EncoderConfig(**changes)


def test_bad_module_arguments():
    with pytest.raises(ValueError, match="activation must be one of"):
        ec.FeedForward(8, 16, activation="swish")
    with pytest.raises(ValueError, match="n_heads must be a positive int"):
        ec.MultiHeadAttention(8, 0)
    with pytest.raises(ValueError, match="even"):
        ec.sinusoidal_positions(4, 7)
    with pytest.raises(TypeError, match="EncoderConfig"):
        ec.Encoder({"d_model": 8})


def test_token_type_ids_are_checked():
    enc = ec.Encoder(ec.EncoderConfig(vocab_size=10, max_len=8, d_model=16, n_heads=2, d_ff=32, n_layers=1,
                                      type_vocab_size=2))
    ids = torch.tensor([[1, 2, 3]])
    enc(ids, token_type_ids=torch.tensor([[0, 1, 1]]))  # fine
    with pytest.raises(ValueError, match=r"token_type_ids must be in \[0, 2\), got values from 0 to 2"):
        enc(ids, token_type_ids=torch.tensor([[0, 1, 2]]))
    with pytest.raises(ValueError, match=r"shape of token_ids \(1, 3\), got \(1, 2\)"):
        enc(ids, token_type_ids=torch.tensor([[0, 1]]))
    with pytest.raises(TypeError, match="token_type_ids must be an integer tensor"):
        enc(ids, token_type_ids=torch.zeros(1, 3))
    no_types = ec.Encoder(ec.EncoderConfig(vocab_size=10, max_len=8, d_model=16, n_heads=2, d_ff=32, n_layers=1))
    with pytest.raises(ValueError, match="no token types"):
        no_types(ids, token_type_ids=torch.zeros_like(ids))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16, torch.int32])
def test_encoder_takes_any_integer_ids(dtype):
    torch.manual_seed(0)
    enc = ec.Encoder(ec.EncoderConfig(vocab_size=10, max_len=8, d_model=16, n_heads=2, d_ff=32, n_layers=1)).eval()
    ids = torch.tensor([[1, 2, 3, 0]])
    torch.testing.assert_close(enc(ids.to(dtype)), enc(ids), rtol=0, atol=0)


def test_mask_errors_point_to_the_right_form():
    enc = ec.Encoder(ec.EncoderConfig(vocab_size=10, max_len=8, d_model=16, n_heads=2, d_ff=32, n_layers=1))
    with pytest.raises(ValueError, match=r"\(B, L\) padding mask.*causal_mask\(L\) as mask\[None, None\]"):
        enc(torch.ones(3, 6, dtype=torch.long), ec.causal_mask(6))
    mha = ec.MultiHeadAttention(16, 2)
    with pytest.raises(ValueError, match=r"looks like a \(B, L\) padding mask: give it as \(B, 1, 1, L\)"):
        mha(torch.randn(3, 5, 16), torch.ones(3, 5, dtype=torch.bool))


def test_attention_rejects_mixed_dtypes():
    q = torch.randn(2, 4, 8)
    with pytest.raises(TypeError, match="q, k and v must share one dtype.*float64"):
        ec.scaled_dot_product_attention(q, q.double(), q)
