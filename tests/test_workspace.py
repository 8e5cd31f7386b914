"""encoder_course.workspace: passing answers are saved as parts that import each other, a failing attempt
never overwrites one, an answer that needs another cell is not saved, and nothing is saved without a workspace."""

from __future__ import annotations

import pytest
from learner_answers import ANSWERS, learner_cell, pass_all

import encoder_course as ec
from encoder_course import checks, yours


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    folder = tmp_path / "my_encoder"
    monkeypatch.setenv("ENCODER_COURSE_WORKSPACE", str(folder))
    return folder



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
    mine = yours.build_encoder(ec.EncoderConfig.minilm_l6().replace(n_layers=1), fallback=True)
    assert mine.yours["multi_head_attention"] and not mine.yours["scaled_dot_product_attention"]
