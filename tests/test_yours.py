"""The learner's workspace: passing answers are saved as parts that import each other, a failing
attempt never overwrites one, `yours.Encoder` is built only from the parts, `encoder-course progress`
reports them, and the checkers' verdicts, self-check mode and reference lock behave as documented."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import encoder_course as ec
from encoder_course import checks, yours
from encoder_course.course.cli import main as cli

# A learner's answers, as they would write them in the exercise cells (solutions of notebooks 01-08).
ANSWERS = {
    "sinusoidal_positions": '''
        def sinusoidal_positions(seq_len, d_model):
            pos = torch.arange(seq_len, dtype=torch.float32)[:, None]
            freq = 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
            pe = torch.zeros(seq_len, d_model)
            pe[:, 0::2], pe[:, 1::2] = torch.sin(pos / freq), torch.cos(pos / freq)
            return pe
    ''',
    "scaled_dot_product_attention": '''
        def scaled_dot_product_attention(q, k, v, mask=None):
            scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))
            weights = torch.softmax(scores, dim=-1)
            return weights @ v, weights
    ''',
    "multi_head_attention": '''
        class MultiHeadAttention(nn.Module):
            def __init__(self, d_model, n_heads):
                super().__init__()
                self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
                self.w_q, self.w_k = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
                self.w_v, self.w_o = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

            def forward(self, x, mask=None):
                b, length, _ = x.shape
                split = lambda t: t.view(b, length, self.n_heads, self.d_head).transpose(1, 2)
                heads, _ = scaled_dot_product_attention(split(self.w_q(x)), split(self.w_k(x)),
                                                        split(self.w_v(x)), mask)
                return self.w_o(heads.transpose(1, 2).reshape(b, length, self.d_model))
    ''',
    "layer_norm": '''
        class LayerNorm(nn.Module):
            def __init__(self, d_model, eps=1e-5):
                super().__init__()
                self.eps = eps
                self.weight = nn.Parameter(torch.ones(d_model))
                self.bias = nn.Parameter(torch.zeros(d_model))

            def forward(self, x):
                mean = x.mean(dim=-1, keepdim=True)
                var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
                return self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias
    ''',
    "feed_forward": '''
        class FeedForward(nn.Module):
            def __init__(self, d_model, d_ff, activation="gelu"):
                super().__init__()
                self.activation = activation
                self.w1, self.w2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)

            def forward(self, x):
                h = self.w1(x)
                return self.w2(F.gelu(h) if self.activation == "gelu" else F.relu(h))
    ''',
    "encoder_block": '''
        class EncoderBlock(nn.Module):
            def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False, activation="gelu", eps=1e-5):
                super().__init__()
                self.norm_first = norm_first
                self.attn = MultiHeadAttention(d_model, n_heads)
                self.ffn = FeedForward(d_model, d_ff, activation=activation)
                self.norm1, self.norm2 = LayerNorm(d_model, eps=eps), LayerNorm(d_model, eps=eps)
                self.dropout1, self.dropout2 = nn.Dropout(dropout), nn.Dropout(dropout)

            def forward(self, x, mask=None):
                if self.norm_first:
                    x = x + self.dropout1(self.attn(self.norm1(x), mask))
                    return x + self.dropout2(self.ffn(self.norm2(x)))
                x = self.norm1(x + self.dropout1(self.attn(x, mask)))
                return self.norm2(x + self.dropout2(self.ffn(x)))
    ''',
    "embeddings": '''
        class Embeddings(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.config = config
                self.token = nn.Embedding(config.vocab_size, config.d_model)
                if config.positions == "learned":
                    self.position = nn.Embedding(config.max_len, config.d_model)
                else:
                    self.register_buffer("sinusoids", sinusoidal_positions(config.max_len, config.d_model),
                                         persistent=False)
                types = config.type_vocab_size
                self.token_type = nn.Embedding(types, config.d_model) if types else None
                self.norm = LayerNorm(config.d_model, eps=config.eps) if config.embedding_norm else None
                self.dropout = nn.Dropout(config.dropout)

            def forward(self, token_ids, token_type_ids=None):
                length = token_ids.shape[1]
                x = self.token(token_ids)
                if self.config.scale_embeddings:
                    x = x * math.sqrt(self.config.d_model)
                x = x + (self.position.weight if self.config.positions == "learned" else self.sinusoids)[:length]
                if self.token_type is not None:
                    x = x + self.token_type(torch.zeros_like(token_ids) if token_type_ids is None else token_type_ids)
                return self.dropout(x if self.norm is None else self.norm(x))
    ''',
    "encoder_stack": '''
        class Encoder(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.embeddings = Embeddings(config)
                self.layers = nn.ModuleList(
                    EncoderBlock(config.d_model, config.n_heads, config.d_ff, dropout=config.dropout,
                                 norm_first=config.norm_first, activation=config.activation, eps=config.eps)
                    for _ in range(config.n_layers))
                self.final_norm = LayerNorm(config.d_model, eps=config.eps) if config.norm_first else None

            def forward(self, token_ids, mask=None, token_type_ids=None):
                x = self.embeddings(token_ids, token_type_ids)
                if mask is not None and mask.dim() == 2:
                    mask = mask[:, None, None, :]
                for layer in self.layers:
                    x = layer(x, mask)
                return x if self.final_norm is None else self.final_norm(x)
    ''',
}
PREAMBLE = "import math\nimport torch\nimport torch.nn.functional as F\nfrom torch import nn\n"


def learner_cell(tmp_path: Path, key: str, source: str, names: dict | None = None):
    """Define an answer from a file of its own (as a notebook cell is), with earlier parts in scope."""
    path = tmp_path / f"cell_{key}_{abs(hash(source))}.py"
    path.write_text(PREAMBLE + textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(names or {})
    spec.loader.exec_module(module)
    return getattr(module, checks.EXERCISES[key].name)


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    folder = tmp_path / "my_encoder"
    monkeypatch.setenv("ENCODER_COURSE_WORKSPACE", str(folder))
    return folder


def pass_all(tmp_path, capsys, keys=tuple(ANSWERS)):
    """Pass the exercises in course order, each cell seeing the learner's earlier parts via yours.use."""
    for key in keys:
        uses = checks.EXERCISES[key].uses
        scope = dict(zip([checks.EXERCISES[u].name for u in uses], [yours.use(u) for u in uses])) if uses else {}
        getattr(checks, f"check_{key}")(learner_cell(tmp_path, key, ANSWERS[key], scope))
    return capsys.readouterr().out


def test_a_passing_check_saves_a_part_that_imports_the_learners_own_earlier_parts(workspace, tmp_path, capsys):
    out = pass_all(tmp_path, capsys, ("scaled_dot_product_attention", "multi_head_attention"))
    assert "✓ multi_head_attention: all checks passed" in out
    assert "saved as part of your encoder: my_encoder/multi_head_attention.py" in out
    text = (workspace / "multi_head_attention.py").read_text()
    assert "from .scaled_dot_product_attention import scaled_dot_product_attention" in text
    assert "class MultiHeadAttention(nn.Module):" in text and "encoder_course" not in text.split('"""', 2)[2]
    assert yours.parts(workspace)["multi_head_attention"] is True


def test_a_failing_attempt_never_overwrites_a_saved_part(workspace, tmp_path, capsys):
    pass_all(tmp_path, capsys, ("scaled_dot_product_attention",))
    saved = (workspace / "scaled_dot_product_attention.py").read_text()
    wrong = ANSWERS["scaled_dot_product_attention"].replace("dim=-1", "dim=-2")
    with pytest.raises(checks.ExerciseError, match="wrong axis"):
        checks.check_scaled_dot_product_attention(learner_cell(tmp_path, "scaled_dot_product_attention", wrong))
    assert (workspace / "scaled_dot_product_attention.py").read_text() == saved


def test_nothing_is_saved_outside_a_notebook_without_a_named_workspace(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("ENCODER_COURSE_WORKSPACE", raising=False)
    monkeypatch.chdir(tmp_path)
    checks.check_sinusoidal_positions(learner_cell(tmp_path, "sinusoidal_positions", ANSWERS["sinusoidal_positions"]))
    assert capsys.readouterr().out == "✓ sinusoidal_positions: all checks passed\n"
    assert not (tmp_path / "my_encoder").exists()


def test_an_answer_that_needs_another_cell_is_not_saved_and_says_why(workspace, tmp_path, capsys):
    source = '''
        def sinusoidal_positions(seq_len, d_model):
            return helper(seq_len, d_model)
    '''
    helper = learner_cell(tmp_path, "sinusoidal_positions", ANSWERS["sinusoidal_positions"])
    checks.check_sinusoidal_positions(learner_cell(tmp_path, "sinusoidal_positions", source, {"helper": helper}))
    out = capsys.readouterr().out
    assert out.startswith("✓ sinusoidal_positions: all checks passed")
    assert "not saved to your encoder" in out and "NameError" in out
    assert not (workspace / "sinusoidal_positions.py").exists()


def test_a_saved_part_carries_the_imports_helpers_and_constants_it_uses_from_other_cells(workspace, tmp_path,
                                                                                       capsys):
    import einops

    pass_all(tmp_path, capsys, ("scaled_dot_product_attention",))
    helper = learner_cell(tmp_path, "scaled_dot_product_attention", '''
        def heads_first(t, n):
            return rearrange(t, "b l (h d) -> b h l d", h=n)

        def scaled_dot_product_attention(q, k, v, mask=None):
            pass
    ''', {"rearrange": einops.rearrange})
    source = '''
        class MultiHeadAttention(nn.Module):
            def __init__(self, d_model, n_heads):
                super().__init__()
                self.n_heads = n_heads
                self.w_q, self.w_k = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
                self.w_v, self.w_o = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

            def forward(self, x, mask=None):
                q, k, v = (heads_first(w(x), self.n_heads) for w in (self.w_q, self.w_k, self.w_v))
                out, _ = scaled_dot_product_attention(q, k, v, mask)
                return self.w_o(ec.merge_heads(out) * ONE)
    '''
    scope = {"heads_first": helper.__globals__["heads_first"], "ec": ec, "ONE": 1.0,
             "scaled_dot_product_attention": yours.use("scaled_dot_product_attention")}
    checks.check_multi_head_attention(learner_cell(tmp_path, "multi_head_attention", source, scope))
    out = capsys.readouterr().out
    assert "saved as part of your encoder" in out and "not saved" not in out, out
    text = (workspace / "multi_head_attention.py").read_text()
    for line in ("from einops import rearrange", "import encoder_course as ec", "ONE = 1.0",
                 "def heads_first(t, n):", "from .scaled_dot_product_attention import scaled_dot_product_attention"):
        assert line in text, (line, text)
    assert yours.parts(workspace)["multi_head_attention"] is True


def test_yours_encoder_has_the_reference_interface_and_keys_and_equals_it_with_the_same_weights(
        workspace, tmp_path, capsys):
    pass_all(tmp_path, capsys)
    for config in (ec.EncoderConfig.minilm_l6().replace(n_layers=2, vocab_size=100),
                   ec.EncoderConfig(vocab_size=50, max_len=16, d_model=32, n_heads=4, d_ff=64, n_layers=2,
                                    norm_first=True, dropout=0.0)):
        mine = yours.Encoder(config).eval()
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


def test_a_missing_part_is_named_with_its_notebook_and_fallback_says_which(workspace, tmp_path, capsys):
    pass_all(tmp_path, capsys, ("scaled_dot_product_attention", "multi_head_attention", "layer_norm"))
    config = ec.EncoderConfig.minilm_l6().replace(n_layers=1)
    with pytest.raises(yours.PartMissing) as info:
        yours.Encoder(config)
    message = str(info.value)
    for missing in ("FeedForward (notebook 06_feed_forward)", "EncoderBlock (notebook 07_encoder_block)",
                    "Embeddings (notebook 08_stacking)", "Encoder (notebook 08_stacking)"):
        assert missing in message, message
    assert "LayerNorm (notebook" not in message
    assert "sinusoidal_positions" not in message  # learned positions: never called
    capsys.readouterr()
    mine = yours.Encoder(config, fallback=True)
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
        yours.Encoder(ec.EncoderConfig.minilm_l6().replace(n_layers=1))
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


def test_verdicts_self_check_and_the_reference_lock(monkeypatch, tmp_path):
    def stub(seq_len, d_model):
        raise NotImplementedError("Exercise")

    assert checks.verdict("sinusoidal_positions", stub).status == "not attempted"
    monkeypatch.setenv("ENCODER_COURSE_SELF_CHECK", "1")
    with pytest.raises(checks.ExerciseError, match="not attempted yet"):
        checks.check_sinusoidal_positions(stub)

    def sneaky(token_ids, pad_id):  # catches the lock's error and answers anyway
        try:
            return ec.padding_mask(token_ids, pad_id)
        except BaseException:
            return (token_ids != pad_id)[:, None, None, :]

    result = checks.verdict("padding_mask", sneaky)
    assert result.status == "failed" and "calls the course's own padding_mask" in result.message

    class Subclass(ec.LayerNorm):
        pass

    assert "calls the course's own LayerNorm" in checks.verdict("layer_norm", Subclass).message
    # Other parts of the package stay usable: the block exercise builds on the package's sublayers.
    block = learner_cell(tmp_path, "encoder_block", ANSWERS["encoder_block"],
                         {"MultiHeadAttention": ec.MultiHeadAttention, "FeedForward": ec.FeedForward,
                          "LayerNorm": ec.LayerNorm})
    assert checks.verdict("encoder_block", block).status == "passed"
    assert sys.gettrace() is None or "coverage" in type(sys.gettrace()).__module__


def test_parts_save_and_load_when_an_earlier_part_was_skipped(workspace, tmp_path, capsys):
    """A learner who skipped notebook 02 but passed 04: their MultiHeadAttention uses the course's attention,
    and saving later parts (or building with fallback) still works."""
    mha = learner_cell(tmp_path, "multi_head_attention", ANSWERS["multi_head_attention"],
                       {"scaled_dot_product_attention": yours.use("scaled_dot_product_attention")})
    checks.check_multi_head_attention(mha)
    checks.check_layer_norm(learner_cell(tmp_path, "layer_norm", ANSWERS["layer_norm"]))
    block_uses = ("multi_head_attention", "feed_forward", "layer_norm")
    checks.check_encoder_block(learner_cell(tmp_path, "encoder_block", ANSWERS["encoder_block"],
                                            {checks.EXERCISES[u].name: yours.use(u) for u in block_uses}))
    out = capsys.readouterr().out
    assert out.count("saved as part of your encoder") == 3, out
    assert not (workspace / "scaled_dot_product_attention.py").exists()
    assert yours.parts(workspace)["multi_head_attention"] and yours.parts(workspace)["layer_norm"]
    mine = yours.Encoder(ec.EncoderConfig.minilm_l6().replace(n_layers=1), fallback=True)
    assert mine.yours["multi_head_attention"] and not mine.yours["scaled_dot_product_attention"]


def test_the_course_stack_runs_the_learners_attention_when_only_that_part_is_theirs(workspace, tmp_path, capsys):
    pass_all(tmp_path, capsys, ("scaled_dot_product_attention",))
    config = ec.EncoderConfig.minilm_l6().replace(n_layers=1)
    mine = yours.Encoder(config, fallback=True).eval()
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
