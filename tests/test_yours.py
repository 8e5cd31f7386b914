"""encoder_course.yours: `yours.build_encoder` is built only from the learner's saved parts (or says which are missing),
`encoder-course progress` reports them, and the checkers' verdicts, self-check mode and reference lock behave as
documented."""

from __future__ import annotations

import pytest
import torch
from learner_answers import pass_all

import encoder_course as ec
from encoder_course import yours
from encoder_course.cli import main as cli


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    folder = tmp_path / "my_encoder"
    monkeypatch.setenv("ENCODER_COURSE_WORKSPACE", str(folder))
    return folder



def test_yours_encoder_has_the_reference_interface_and_keys_and_equals_it_with_the_same_weights(
        workspace, tmp_path, capsys):
    pass_all(tmp_path, capsys)
    for config in (ec.EncoderConfig.minilm_l6().replace(n_layers=2, vocab_size=100),
                   ec.EncoderConfig(vocab_size=50, max_len=16, d_model=32, n_heads=4, d_ff=64, n_layers=2,
                                    norm_first=True, dropout=0.0)):
        mine = yours.build_encoder(config).eval()
        assert all(mine.yours.values()) and list(mine.yours) == yours.encoder_parts(config)
        # the learner's own classes, from the workspace's files, down to the embeddings
        assert type(mine).__module__.endswith(".encoder_stack") and type(mine.embeddings).__module__.endswith(
            ".embeddings") and type(mine.layers[0]).__module__.endswith(".encoder_block")
        reference = ec.Encoder(config.replace(implementation="eager")).eval()
        assert sorted(mine.state_dict()) == sorted(reference.state_dict())
        reference.load_state_dict(mine.state_dict())
        ids = torch.randint(1, config.vocab_size, (3, 9))
        ids[1, 5:] = 0
        mask = ec.padding_mask(ids, 0)
        with torch.no_grad():
            torch.testing.assert_close(mine(ids, mask), reference(ids, mask), atol=1e-5, rtol=0)
            torch.testing.assert_close(mine(ids, mask[:, 0, 0]), reference(ids, mask), atol=1e-5, rtol=0)


@pytest.mark.parametrize("switches", [dict(positions="rotary"), dict(activation="geglu", bias=False),
                                      dict(window=4, global_every=2, n_layers=3), dict(unpad=True),
                                      dict(positions="rotary", activation="swiglu", bias=False, window=4,
                                           global_every=3, n_layers=3, unpad=True)])
def test_a_modern_encoder_is_the_course_stack_around_your_functions_and_equals_the_reference(
        workspace, tmp_path, capsys, switches):
    pass_all(tmp_path, capsys)
    config = ec.EncoderConfig(vocab_size=50, max_len=16, d_model=32, n_heads=4, d_ff=64, norm_first=True,
                              dropout=0.0, **{"n_layers": 2, **switches})
    mine = yours.build_encoder(config).eval()
    assert list(mine.yours) == yours.modern_parts(config) and all(mine.yours.values())
    assert ("apply_rotary" in mine.yours) == (config.positions == "rotary")
    assert ("sliding_window_mask" in mine.yours) == bool(config.window)
    assert ("feed_forward" in mine.yours) == (config.activation in ("relu", "gelu"))  # notebook 06's exercise
    block = mine.layers[0]
    assert type(block.norm1).__module__.endswith(".layer_norm")  # the learner's LayerNorm
    if config.positions == "rotary":
        assert block.attn.rotary.__module__.endswith(".apply_rotary")
    assert block.attn.attention.__module__.endswith(".scaled_dot_product_attention")
    reference = ec.Encoder(config).eval()
    assert sorted(mine.state_dict()) == sorted(reference.state_dict())  # no biases stored when bias=False
    reference.load_state_dict(mine.state_dict())
    ids = torch.randint(1, 50, (3, 11))
    ids[1, 6:] = 0
    real = ids != 0
    with torch.no_grad():
        torch.testing.assert_close(mine(ids, real)[real], reference(ids, real)[real], atol=1e-5, rtol=0)


def test_a_missing_part_is_named_with_its_notebook_and_fallback_says_which(workspace, tmp_path, capsys):
    pass_all(tmp_path, capsys, ("scaled_dot_product_attention", "multi_head_attention", "layer_norm"))
    config = ec.EncoderConfig.minilm_l6().replace(n_layers=1)
    with pytest.raises(yours.PartMissing) as info:
        yours.build_encoder(config)
    message = str(info.value)
    for missing in ("FeedForward (notebook 06_feed_forward)", "EncoderBlock (notebook 07_encoder_block)",
                    "Embeddings (notebook 08_stacking)", "Encoder (notebook 08_stacking)"):
        assert missing in message, message
    assert "LayerNorm (notebook" not in message
    assert "sinusoidal_positions" not in message  # learned positions: never called
    capsys.readouterr()
    mine = yours.build_encoder(config, fallback=True)
    out = capsys.readouterr().out
    assert "EncoderBlock: the course's reference" in out and "LayerNorm: yours" in out
    # The course's stack is built from the learner's parts: the course's blocks and embeddings (theirs are
    # missing) hold the learner's LayerNorm and MultiHeadAttention, which runs the learner's attention.
    assert mine.yours == {"scaled_dot_product_attention": True, "multi_head_attention": True, "layer_norm": True,
                          "feed_forward": False, "encoder_block": False, "embeddings": False, "encoder_stack": False}
    assert "MultiHeadAttention: yours" in out and "FeedForward: the course's reference" in out
    block = mine.layers[0]
    assert type(block) is ec.EncoderBlock and type(mine.embeddings) is ec.Embeddings
    assert type(block.attn).__module__.endswith(".multi_head_attention")
    assert all(type(m).__module__.endswith(".layer_norm") for m in (block.norm1, block.norm2, mine.embeddings.norm))
    assert sorted(mine.state_dict()) == sorted(ec.Encoder(config).state_dict())
    reference = ec.Encoder(config).eval()
    reference.load_state_dict(mine.state_dict())
    ids = torch.randint(1, config.vocab_size, (2, 7))
    with torch.no_grad():
        torch.testing.assert_close(mine.eval()(ids), reference(ids), atol=1e-5, rtol=0)


def test_a_part_edited_into_a_wrong_one_is_named(workspace, tmp_path, capsys):
    pass_all(tmp_path, capsys)
    path = workspace / "layer_norm.py"
    path.write_text(path.read_text().replace("var + self.eps", "var * 0 + self.eps"))
    with pytest.raises(yours.PartMissing, match=r"LayerNorm \(notebook 05_residual_and_layernorm\): saved, but it "
                                                r"does not pass its check now"):
        yours.build_encoder(ec.EncoderConfig.minilm_l6().replace(n_layers=1))
    # progress says why, in the checker's words
    cli(["progress", "--workspace", str(workspace)])
    out = capsys.readouterr().out
    why = next(line for line in out.splitlines() if line.strip().startswith("LayerNorm: saved"))
    assert why.split("check now: ", 1)[1].strip() and "LayerNorm" in why, out


def test_progress_from_the_repository_folder_reads_the_notebooks_workspace_and_names_it(tmp_path, monkeypatch,
                                                                                        capsys):
    monkeypatch.delenv("ENCODER_COURSE_WORKSPACE", raising=False)
    monkeypatch.chdir(tmp_path)
    cli(["progress"])
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(f"Workspace: {tmp_path / 'my_encoder'} (it does not exist yet")
    monkeypatch.setenv("ENCODER_COURSE_WORKSPACE", str(tmp_path / "notebooks" / "my_encoder"))
    pass_all(tmp_path, capsys, ("scaled_dot_product_attention",))
    monkeypatch.delenv("ENCODER_COURSE_WORKSPACE")
    cli(["progress"])
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"Workspace: {tmp_path / 'notebooks' / 'my_encoder'}", out
    assert "1 of" in out


def test_progress_on_an_empty_a_partial_and_a_complete_workspace(workspace, tmp_path, capsys):
    assert cli(["progress", "--workspace", str(workspace)]) == 0
    out = capsys.readouterr().out
    assert "0 of" in out and "not all yours yet" in out
    pass_all(tmp_path, capsys, ("scaled_dot_product_attention", "layer_norm"))
    cli(["progress", "--workspace", str(workspace)])
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("LayerNorm"))
    assert row.split()[-2:] == ["yes", "yes"]
    assert "not all yours yet" in out
    pass_all(tmp_path, capsys)
    cli(["progress", "--workspace", str(workspace)])
    assert "The whole encoder is yours" in capsys.readouterr().out


def test_the_course_stack_runs_the_learners_attention_when_only_that_part_is_theirs(workspace, tmp_path, capsys):
    pass_all(tmp_path, capsys, ("scaled_dot_product_attention",))
    config = ec.EncoderConfig.minilm_l6().replace(n_layers=1)
    mine = yours.build_encoder(config, fallback=True).eval()
    assert mine.yours["scaled_dot_product_attention"] and not mine.yours["multi_head_attention"]
    attn = mine.layers[0].attn
    assert type(attn) is ec.MultiHeadAttention and attn.implementation == "eager"  # no fused kernel stands in
    assert attn.attention.__module__.endswith(".scaled_dot_product_attention")
    calls = []
    learners = attn.attention
    attn.attention = lambda *args: calls.append(1) or learners(*args)
    with torch.no_grad():
        mine(torch.randint(1, 100, (2, 5)))
    assert calls == [1]


def test_a_trained_encoder_is_kept_in_the_workspace_and_comes_back_in_one_call(tmp_path):
    pytest.importorskip("tokenizers")
    from tokenizers import Tokenizer, models, pre_tokenizers

    from encoder_course.interop.pretrained import SentenceEncoder

    tok = Tokenizer(models.WordLevel({"[PAD]": 0, "[UNK]": 1, "a": 2, "b": 3}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    config = ec.EncoderConfig(vocab_size=4, max_len=8, d_model=8, n_heads=2, d_ff=16, n_layers=1, dropout=0.0)
    torch.manual_seed(0)
    trained = SentenceEncoder(ec.Encoder(config), tok, name="toy")
    folder = yours.save_trained("docs_search", trained, workspace=tmp_path)
    assert folder == tmp_path / "trained" / "docs_search" and (folder / "encoder.pt").is_file()
    kept = yours.load_trained("docs_search", workspace=tmp_path)
    texts = ["a b a", "b"]
    assert torch.allclose(kept.embed(texts), trained.embed(texts), atol=1e-6)
    with pytest.raises(ValueError, match="plain word"):
        yours.save_trained("../elsewhere", trained, workspace=tmp_path)
    with pytest.raises(FileNotFoundError, match="no stored encoder"):
        yours.load_trained("never_saved", workspace=tmp_path)
