"""encoder_course._validate, the validation property suite: bad calls get a clear error, from a check written
once in _validate.py (the cases a probe of 168 bad calls found silently wrong or confusing), and the torch weight
copy is written once too. The model modules' own error tests are in tests/test_<module>.py."""

from pathlib import Path

import pytest
import torch

import encoder_course as ec
from encoder_course import tools

PACKAGE = Path(ec.__file__).parent


def _config(**changes):
    return ec.EncoderConfig(vocab_size=20, max_len=16, d_model=16, n_heads=2, d_ff=32, n_layers=1,
                            dropout=0.0).replace(**changes)


def test_a_2d_mask_is_always_a_padding_mask_also_when_the_batch_size_equals_the_length():
    enc = ec.Encoder(_config()).eval()
    ids = torch.randint(1, 20, (5, 5))
    pad = torch.ones(5, 5, dtype=torch.bool).tril()  # as (B, L): sequence b has b + 1 real tokens
    torch.testing.assert_close(enc(ids, pad), enc(ids, pad[:, None, None, :]))
    # Given with its batch and head axes, the causal mask is a causal mask: position 0 ignores the rest.
    out = enc(ids, ec.causal_mask(5)[None, None])
    changed = ids.clone()
    changed[:, 1:] = (changed[:, 1:] % 19) + 1
    torch.testing.assert_close(enc(changed, ec.causal_mask(5)[None, None])[:, 0], out[:, 0])
    # A (B, L) padding mask with B != L is read the same way.
    ids = torch.randint(1, 20, (2, 5))
    pad = torch.tensor([[True] * 5, [True, True, False, False, False]])
    torch.testing.assert_close(enc(ids, pad), enc(ids, ec.padding_mask(ids.masked_fill(~pad, 0), 0)))
    with pytest.raises(ValueError, match="a 2-D mask must be a .B, L. padding mask"):
        enc(ids, torch.ones(5, 5, dtype=torch.bool))


def test_mean_pool_checks_its_inputs_and_pools_a_4d_padding_mask_over_every_real_token():
    hidden = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
    mask = torch.tensor([[True, True, False], [True, True, True]])
    want = torch.stack([hidden[0, :2].mean(0), hidden[1].mean(0)])
    torch.testing.assert_close(ec.mean_pool(hidden, mask), want)
    torch.testing.assert_close(ec.mean_pool(hidden, mask[:, None, None, :]), want)
    with pytest.raises(ValueError, match=r"\(B, 1, 1, L\)"):
        ec.mean_pool(hidden, mask[:, None, :, None].expand(2, 1, 3, 3))
    with pytest.raises(ValueError, match=r"3 dimensions \(B, L, d\)"):
        ec.mean_pool(hidden[0], mask[0])
    with pytest.raises(TypeError, match="torch.bool"):
        ec.mean_pool(hidden, mask.float())
    assert (ec.mean_pool(hidden, torch.zeros(2, 3, dtype=torch.bool)) == 0).all()  # no real token


def test_rotate_pairs_refuses_integer_input():
    with pytest.raises(TypeError, match="floating-point"):
        ec.rotate_pairs(torch.ones(4, 6, dtype=torch.long))
    with pytest.raises(ValueError, match="even d"):
        ec.rotate_pairs(torch.ones(4, 5))
    with pytest.raises(ValueError, match=r"positions must have shape \(L,\)"):
        ec.rotate_pairs(torch.ones(4, 6), positions=torch.arange(3))


@pytest.mark.parametrize("pad_id", [0.5, None, True, "0"])
def test_padding_mask_refuses_a_pad_id_that_is_not_an_int(pad_id):
    with pytest.raises(TypeError, match="pad_id must be an int"):
        ec.padding_mask(torch.tensor([[1, 0]]), pad_id)


def test_split_and_merge_heads_say_what_they_expect():
    with pytest.raises(ValueError, match=r"3 dimensions \(B, L, d_model\)"):
        ec.split_heads(torch.randn(4, 8), 2)
    with pytest.raises(ValueError, match=r"d_model \(10\) must be divisible by n_heads \(4\)"):
        ec.split_heads(torch.randn(1, 4, 10), 4)
    with pytest.raises(ValueError, match=r"4 dimensions \(B, H, L, d_head\)"):
        ec.merge_heads(torch.randn(1, 4, 10))
    with pytest.raises(TypeError, match="n_heads must be an int"):
        ec.split_heads(torch.randn(1, 4, 8), 2.0)
    x = torch.randn(2, 5, 12)
    assert torch.equal(ec.merge_heads(ec.split_heads(x, 3)), x)


@pytest.mark.parametrize("args, error, words", [
    ((4, 7.5), TypeError, "d_model must be an int"),
    ((0, 8), ValueError, "max_len must be a positive int"),
    ((4.0, 8), TypeError, "max_len must be an int"),
])
def test_learned_positions_check_their_sizes(args, error, words):
    with pytest.raises(error, match=words):
        ec.LearnedPositions(*args)


@pytest.mark.parametrize("seed, error", [(2**70, ValueError), (-1, ValueError), (1.5, TypeError), ("1", TypeError)])
def test_seed_everything_explains_a_bad_seed(seed, error):
    with pytest.raises(error, match="seed must be an int"):
        tools.seed_everything(seed)


def test_seed_everything_accepts_the_whole_range_and_seeds():
    for seed in (2**64 - 1, 0):
        tools.seed_everything(seed)
        first = torch.rand(3)
        tools.seed_everything(seed)
        assert torch.equal(torch.rand(3), first)


@pytest.mark.parametrize("make", [
    lambda: ec.MultiHeadAttention(8, 2, dropout=1.0),
    lambda: ec.FeedForward(8, 16, dropout=-0.1),
    lambda: ec.EncoderBlock(8, 2, 16, dropout=1.5),
    lambda: _config(dropout=2.0),
    lambda: ec.fused_attention(torch.ones(1, 2, 4), torch.ones(1, 2, 4), torch.ones(1, 2, 4), dropout_p=1.0),
])
def test_every_dropout_rate_is_checked_the_same_way(make):
    with pytest.raises(ValueError, match=r"must be in \[0, 1\)"):
        make()


def test_a_long_sequence_gets_the_same_message_everywhere():
    words = r"sequence length 17 is longer than the position table \(max_len 16\)"
    with pytest.raises(ValueError, match=words):
        ec.Encoder(_config())(torch.ones(1, 17, dtype=torch.long))
    with pytest.raises(ValueError, match=words):
        ec.SinusoidalPositions(16, 8)(torch.zeros(1, 17, 8))
    with pytest.raises(ValueError, match=words):
        ec.LearnedPositions(16, 8)(torch.zeros(1, 17, 8))


def _package_sources():
    return {p: p.read_text(encoding="utf-8") for p in PACKAGE.rglob("*.py")}


@pytest.mark.parametrize("phrase, home", [
    ("longer than the position table", "_validate.py"),
    ("must be in [0, 1)", "_validate.py"),
    ("must be an integer tensor", "_validate.py"),
    ("in_proj_weight", "interop/bridges.py"),
    ("in_proj_bias", "interop/bridges.py"),
])
def test_each_input_check_and_the_torch_weight_copy_are_written_once(phrase, home):
    places = [p.relative_to(PACKAGE).as_posix() for p, text in _package_sources().items()
              if phrase in text and "checks" not in p.parts]
    assert places == [home], places


def test_notebooks_use_the_torch_bridges_instead_of_copying_weights():
    import nbformat

    notebooks = sorted((PACKAGE.parent / "notebooks").rglob("[0-9][0-9]_*.ipynb"))
    copying = [p.name for p in notebooks for cell in nbformat.read(p, as_version=4).cells
               if cell.cell_type == "code" and "in_proj_weight" in cell.source]
    assert not copying, copying


MODEL_MODULES = ("positions", "attention", "masks", "multi_head", "layer_norm", "feed_forward", "block", "encoder",
                 "pooling", "blockwise")


@pytest.mark.parametrize("module", MODEL_MODULES)
def test_model_modules_raise_input_errors_only_through_validate(module):
    """Every ValueError/TypeError of the model is raised by a named check in _validate.py, never inline."""
    import ast

    tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
    inline = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id in ("ValueError", "TypeError"):
                inline.append(f"{module}.py:{node.lineno}")
    assert not inline, f"inline input checks (move them into a require_... helper in _validate.py): {inline}"


@pytest.mark.parametrize("make", [
    lambda: ec.LayerNorm(8, implementation="fast"),
    lambda: ec.MultiHeadAttention(8, 2, implementation=True),
    lambda: ec.EncoderBlock(8, 2, 16, implementation="naive"),
    lambda: _config(implementation="flash"),
])
def test_the_implementation_is_checked_the_same_way_everywhere(make):
    with pytest.raises(ValueError, match=r"implementation must be one of \('fused', 'eager'\)"):
        make()


def test_parts_must_be_encoder_parts_of_callables():
    from encoder_course.encoder import EncoderParts

    with pytest.raises(TypeError, match="parts must be an EncoderParts, got dict"):
        ec.Encoder(_config(), parts={"layer_norm": ec.LayerNorm})
    with pytest.raises(TypeError, match="layer_norm must be a function or a class"):
        EncoderParts(layer_norm=3)


@pytest.mark.parametrize("changes, error, words", [
    ({"positions": "sinusoidal", "d_model": 6, "n_heads": 3, "max_len": 8}, None, None),
    ({"positions": "sinusoidal", "d_model": 9, "n_heads": 3}, ValueError, "d_model must be even for sinusoidal"),
    ({"type_vocab_size": -1}, ValueError, "type_vocab_size must be >= 0, got -1"),
    ({"type_vocab_size": 1.5}, TypeError, "type_vocab_size must be an int"),
    ({"pad_id": 20}, ValueError, r"pad_id must be a token id in \[0, 20\), got 20"),
    ({"embedding_norm": 1}, TypeError, "embedding_norm must be True or False"),
])
def test_config_checks_keep_their_words(changes, error, words):
    if error is None:
        assert _config(**changes).d_model == changes["d_model"]  # accepted as given
        return
    with pytest.raises(error, match=words):
        _config(**changes)


def test_token_types_without_a_token_type_table_are_refused():
    with pytest.raises(ValueError, match=r"token_type_ids were given, but this config has no token types"):
        ec.Encoder(_config())(torch.ones(1, 3, dtype=torch.long), token_type_ids=torch.zeros(1, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="d_model must be even for sin/cos pairs, got 5"):
        ec.sinusoidal_positions(4, 5)
