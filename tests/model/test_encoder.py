"""encoder_course.encoder: EncoderConfig checks its values; Encoder equals nn.TransformerEncoder, checks its inputs."""

import pytest
import torch
from parity_helpers import ATOL, randomise
from torch import nn

import encoder_course as ec
from encoder_course import interop


def _tiny(**changes):
    return ec.EncoderConfig(vocab_size=10, max_len=8, d_model=16, n_heads=2, d_ff=32, n_layers=1).replace(**changes)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_stack_matches_nn_transformer_encoder(norm_first):
    torch.manual_seed(0)
    cfg = ec.EncoderConfig(vocab_size=50, max_len=16, d_model=32, n_heads=4, d_ff=64, n_layers=3,
                           dropout=0.1, norm_first=norm_first, activation="gelu")
    ours = randomise(ec.Encoder(cfg)).eval()
    theirs = interop.to_torch_encoder(ours.layers, ours.final_norm).eval()
    assert isinstance(theirs, nn.TransformerEncoder) and len(theirs.layers) == 3
    assert (ours.final_norm is not None) == norm_first == (theirs.norm is not None)
    ids = torch.randint(1, 50, (2, 9))
    ids[1, 6:] = 0
    mask = ec.padding_mask(ids, 0)
    x = ours.embeddings(ids)
    ref = theirs(x, src_key_padding_mask=interop.to_torch_padding_mask(mask))
    out = ours(ids, mask)
    real = mask[:, 0, 0, :]
    torch.testing.assert_close(out[real], ref[real], atol=ATOL, rtol=0)


def test_fused_and_eager_implementations_agree_in_a_whole_encoder():
    torch.manual_seed(0)
    cfg = ec.EncoderConfig(vocab_size=100, max_len=32, d_model=48, n_heads=6, d_ff=96, n_layers=2)
    fused = randomise(ec.Encoder(cfg)).eval()
    assert cfg.implementation == "fused"  # the default
    eager = ec.Encoder(cfg.replace(implementation="eager")).eval()
    eager.load_state_dict(fused.state_dict())
    ids = torch.randint(1, 100, (3, 20))
    ids[0, 12:] = 0
    mask = ec.padding_mask(ids, 0)
    torch.testing.assert_close(fused(ids, mask), eager(ids, mask), atol=ATOL, rtol=0)
    weights = fused.attention_maps(ids, mask)
    assert len(weights) == 2 and weights[0].shape == (3, 6, 20, 20)
    torch.testing.assert_close(weights[0].sum(-1), torch.ones(3, 6, 20), atol=1e-6, rtol=0)
    assert (weights[0][0, :, :, 12:] == 0).all()  # padding keys get no weight


def test_blocks_have_their_own_weights():
    enc = ec.Encoder(ec.EncoderConfig(n_layers=3))
    ptrs = [p.data_ptr() for p in enc.parameters()]
    assert len(ptrs) == len(set(ptrs))
    assert not torch.equal(enc.layers[0].attn.w_q.weight, enc.layers[1].attn.w_q.weight)


@pytest.mark.parametrize("norm_first", [False, True])
def test_a_block_and_an_encoder_return_the_weights_of_their_own_pass(norm_first):
    torch.manual_seed(0)
    cfg = ec.EncoderConfig(vocab_size=30, max_len=8, d_model=16, n_heads=2, d_ff=32, n_layers=2, dropout=0.3,
                           norm_first=norm_first)
    enc = ec.Encoder(cfg).train()
    ids = torch.randint(1, 30, (3, 6))
    torch.manual_seed(1)
    out, maps = enc.forward_with_weights(ids)
    assert len(maps) == 2 and all(m.shape == (3, 2, 6, 6) for m in maps)
    # Replay the same pass by hand, layer by layer, with the same random draws: the weights each layer
    # returns are those its attention used, and the outputs agree.
    torch.manual_seed(1)
    x = enc.embeddings(ids)
    for layer, weights in zip(enc.layers, maps):
        x, own = layer.forward_with_weights(x)
        torch.testing.assert_close(own, weights)
    torch.testing.assert_close(x if enc.final_norm is None else enc.final_norm(x), out)
    # attention_maps: one eval-mode pass (no dropout), the mode given back; equal to the eval forward's weights
    maps = enc.attention_maps(ids)
    assert enc.training
    enc.eval()
    out, eval_maps = enc.forward_with_weights(ids)
    torch.testing.assert_close(enc(ids), out)
    for got, want in zip(maps, eval_maps):
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(got.sum(-1), torch.ones(3, 2, 6))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16, torch.int32])
def test_encoder_takes_any_integer_ids(dtype):
    torch.manual_seed(0)
    enc = ec.Encoder(_tiny()).eval()
    ids = torch.tensor([[1, 2, 3, 0]])
    torch.testing.assert_close(enc(ids.to(dtype)), enc(ids), rtol=0, atol=0)


# ---- bad input: each error says what was expected and what came ----

def test_config_d_model_not_divisible_by_n_heads():
    with pytest.raises(ValueError, match=r"d_model \(510\) must be divisible by n_heads \(8\)"):
        ec.EncoderConfig(d_model=510, n_heads=8)


@pytest.mark.parametrize("changes, error, pattern", [
    ({"n_layers": 0}, ValueError, "n_layers must be a positive int, got 0"),
    ({"dropout": -0.1}, ValueError, r"dropout must be in \[0, 1\), got -0.1"),
    ({"activation": "tanh"}, ValueError, "activation must be one of .*'tanh'"),
    ({"positions": "alibi"}, ValueError, "positions must be one of"),
    ({"window": -1}, ValueError, "window"),
    ({"global_every": 0}, ValueError, "global_every must be a positive int"),
    ({"bias": 1}, TypeError, "bias must be True or False"),
    ({"unpad": "yes"}, TypeError, "unpad must be True or False"),
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


def test_encoder_wants_an_encoder_config():
    with pytest.raises(TypeError, match="EncoderConfig"):
        ec.Encoder({"d_model": 8})


def test_encoder_input_errors():
    enc = ec.Encoder(_tiny())
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


def test_token_type_ids_are_checked():
    torch.manual_seed(0)
    enc = ec.Encoder(_tiny(type_vocab_size=2)).eval()
    ids = torch.tensor([[1, 2, 3]])
    # Good token types are used: another type gives other vectors.
    first = enc(ids, token_type_ids=torch.tensor([[0, 0, 0]]))
    second = enc(ids, token_type_ids=torch.tensor([[0, 1, 1]]))
    assert first.shape == second.shape == (1, 3, 16) and not torch.allclose(first, second)
    with pytest.raises(ValueError, match=r"token_type_ids must be in \[0, 2\), got values from 0 to 2"):
        enc(ids, token_type_ids=torch.tensor([[0, 1, 2]]))
    with pytest.raises(ValueError, match=r"shape of token_ids \(1, 3\), got \(1, 2\)"):
        enc(ids, token_type_ids=torch.tensor([[0, 1]]))
    with pytest.raises(TypeError, match="token_type_ids must be an integer tensor"):
        enc(ids, token_type_ids=torch.zeros(1, 3))
    no_types = ec.Encoder(_tiny())
    with pytest.raises(ValueError, match="no token types"):
        no_types(ids, token_type_ids=torch.zeros_like(ids))


def test_encoder_mask_error_points_to_the_right_form():
    enc = ec.Encoder(_tiny())
    with pytest.raises(ValueError, match=r"\(B, L\) padding mask.*causal_mask\(L\) as mask\[None, None\]"):
        enc(torch.ones(3, 6, dtype=torch.long), ec.causal_mask(6))


# ----------------------------------------------------------------------------------------------
# The switches of a modern encoder (notebook 13)

MODERN = dict(vocab_size=60, max_len=32, d_model=32, n_heads=4, d_ff=48, dropout=0.0, norm_first=True)


@pytest.mark.parametrize("switches", [dict(positions="rotary"), dict(activation="geglu"), dict(bias=False),
                                      dict(window=4, global_every=2, n_layers=3),
                                      dict(positions="rotary", activation="geglu", bias=False, window=4,
                                           global_every=3, n_layers=4)])
def test_each_modern_switch_gives_the_same_numbers_fused_and_eager(switches):
    config = ec.EncoderConfig(**{**MODERN, **switches})
    torch.manual_seed(0)
    fused = ec.Encoder(config).eval()
    eager = ec.Encoder(config.replace(implementation="eager")).eval()
    eager.load_state_dict(fused.state_dict())
    ids = torch.randint(1, 60, (3, 20))
    ids[0, 12:] = 0
    real = ids != 0
    torch.testing.assert_close(fused(ids, real)[real], eager(ids, real)[real], atol=2e-6, rtol=0)


def test_rotary_positions_make_the_encoder_see_order_without_a_position_table():
    config = ec.EncoderConfig(**MODERN, positions="rotary")
    model = ec.Encoder(config).eval()
    assert model.embeddings.position is None
    assert not any("position" in name for name in model.state_dict())
    ids = torch.randint(1, 60, (1, 10))
    swapped = ids[:, torch.tensor([1, 0, *range(2, 10)])]
    with torch.no_grad():  # without positions, swapping two tokens would only swap their outputs
        out, out_swapped = model(ids), model(swapped)
    assert (out[0, 2:] - out_swapped[0, 2:]).abs().max() > 1e-3


def test_rotary_encoders_are_shift_invariant_where_learned_ones_are_not():
    """Every token's output depends on the offsets only: the same sentence after two padding tokens on the left
    (masked out) gives the same outputs with rotary positions."""
    ids = torch.randint(1, 60, (1, 8))
    shifted = torch.cat([torch.zeros(1, 2, dtype=torch.long), ids], dim=1)
    for positions, invariant in (("rotary", True), ("learned", False)):
        model = ec.Encoder(ec.EncoderConfig(**MODERN, positions=positions)).eval()
        with torch.no_grad():
            a, b = model(ids), model(shifted, shifted != 0)[:, 2:]
        assert torch.allclose(a, b, atol=1e-5) == invariant, positions


def test_local_layers_see_only_their_window_and_global_layers_everything():
    config = ec.EncoderConfig(**{**MODERN, "n_layers": 1}, window=4)  # layer 0 is global (0 % 1 == 0)
    assert [config.replace(n_layers=6, global_every=3).is_local(i) for i in range(6)] == [
        False, True, True, False, True, True]
    model = ec.Encoder(config.replace(global_every=2, n_layers=2)).eval()
    ids = torch.randint(1, 60, (1, 16))
    with torch.no_grad():
        maps = model.attention_maps(ids)
    assert maps[0][0, :, 0, 15].gt(0).all()  # layer 0 global: token 0 attends to token 15
    assert maps[1][0, :, 0, 3:].eq(0).all() and maps[1][0, :, 0, :3].gt(0).all()  # layer 1 local: 2 on each side


def test_modern_parameter_counts_are_counted_exactly():
    from encoder_course.measure.counting import analytic_parameter_counts

    for switches in (dict(positions="rotary"), dict(activation="geglu"), dict(bias=False),
                     dict(positions="rotary", activation="geglu", bias=False, embedding_norm=True)):
        config = ec.EncoderConfig(**MODERN, **switches)
        assert ec.count_parameters(ec.Encoder(config)) == analytic_parameter_counts(config), switches
    config = ec.EncoderConfig.modernbert_base()
    with torch.device("meta"):
        assert ec.count_parameters(ec.Encoder(config))["total"] == analytic_parameter_counts(config)["total"] \
            == 149_015_040


def test_rotary_needs_an_even_head_width():
    with pytest.raises(ValueError, match="rotary"):
        ec.EncoderConfig(**{**MODERN, "d_model": 36, "n_heads": 4}, positions="rotary")  # d_head 9


def test_rotary_positions_refuse_an_attention_class_that_takes_no_rotation():
    class OwnAttention(torch.nn.Module):  # a learner's MultiHeadAttention: (d_model, n_heads) only
        def __init__(self, d_model, n_heads):
            super().__init__()

    with pytest.raises(ValueError, match="rotary positions turn queries and keys"):
        ec.Encoder(ec.EncoderConfig(**MODERN, positions="rotary"), ec.EncoderParts(multi_head_attention=OwnAttention))
