"""The machinery every checker shares: stubs, errors, time limits, prints held back, random state."""

from __future__ import annotations

import sys
import time

import numpy as np
import pytest
import torch
from learner_answers import ANSWERS, learner_cell
from torch import nn

import encoder_course as ec
from encoder_course import checks
from encoder_course.checks import ExerciseError, _run, _timer

from .catalogue import BB, ES, FB, LB, MB, PASS_LINES, SS, pe_right, pe_swapped, sdpa_in_place
from .test_block import BlockRight


def sdpa_raises(q, k, v, mask=None):
    raise ValueError("my own bug")


def sdpa_slow(q, k, v, mask=None):
    while True:
        pass


def sdpa_stub(q, k, v, mask=None):
    raise NotImplementedError("Exercise: write scaled_dot_product_attention: replace this line with your code")


class MHAStub(MB):
    def forward(self, x, mask=None):
        raise NotImplementedError("Exercise: write MultiHeadAttention.forward")



def _stub(*args, **kwargs):
    raise NotImplementedError("Exercise: replace this line with your code")


class _LNStub(LB):
    def forward(self, x):
        raise NotImplementedError("Exercise: write LayerNorm.forward")


class _FFStub(FB):
    def forward(self, x):
        raise NotImplementedError("Exercise")


class _BlockStub(BB):
    def forward(self, x, mask=None):
        raise NotImplementedError("Exercise")


class _EmbeddingsStub(ES):
    def forward(self, token_ids, token_type_ids=None):
        raise NotImplementedError("Exercise: write Embeddings.forward: replace this line with your code")


class _StackStub(SS):
    def forward(self, token_ids, mask=None, token_type_ids=None):
        raise NotImplementedError("Exercise: write Encoder.forward: replace this line with your code")


STUBS = [
    (checks.check_sinusoidal_positions, _stub), (checks.check_scaled_dot_product_attention, sdpa_stub),
    (checks.check_padding_mask, _stub), (checks.check_causal_mask, _stub),
    (checks.check_multi_head_attention, MHAStub), (checks.check_layer_norm, _LNStub),
    (checks.check_feed_forward, _FFStub), (checks.check_encoder_block, _BlockStub),
    (checks.check_embeddings, _EmbeddingsStub), (checks.check_encoder_stack, _StackStub),
]


@pytest.mark.parametrize("checker, stub", STUBS, ids=[s[0].__name__ for s in STUBS])
def test_stub_is_not_attempted_without_raising(checker, stub, capsys):
    assert checker(stub) is None
    out = capsys.readouterr().out
    name = PASS_LINES[checker].split()[1].rstrip(":")
    assert out.startswith(f"… {name}: not attempted yet")
    assert out.count("\n") == 1 and "✓" not in out


def test_candidate_exception_is_chained():
    with pytest.raises(ExerciseError) as info:
        checks.check_scaled_dot_product_attention(sdpa_raises)
    assert "raised ValueError" in str(info.value) and "my own bug" in str(info.value)
    assert isinstance(info.value.__cause__, ValueError)


def test_slow_candidate_is_stopped(monkeypatch):
    monkeypatch.setattr(checks, "TIME_LIMIT", 0.3)
    start = time.perf_counter()
    with pytest.raises(ExerciseError, match="took more than 0.3 s"):
        checks.check_scaled_dot_product_attention(sdpa_slow)
    assert time.perf_counter() - start < 60  # stopped, not left to spin (0.3 s of processor time)


def test_slow_candidate_without_timer_is_reported(monkeypatch):
    monkeypatch.setattr(checks, "TIME_LIMIT", 0.05)
    monkeypatch.setattr(_run.threading, "main_thread", lambda: None)  # no signal timer: only measure

    def busy(L, d):
        start = time.process_time()
        while time.process_time() - start < 0.1:
            pass
        return pe_right(L, d)

    with pytest.raises(ExerciseError, match="took more than 0.05 s of processor time"):
        checks.check_sinusoidal_positions(busy)


def test_the_limit_counts_processor_time_and_a_wait_is_stopped_by_the_clock(monkeypatch):
    """A busy machine stretches wall time, not processor time: a short sleep is no time-out; a long wait is."""
    monkeypatch.setattr(checks, "TIME_LIMIT", 0.05)

    def dozes(L, d):
        time.sleep(0.15)  # 3x the limit by the clock, almost no processor time
        return pe_right(L, d)

    checks.check_sinusoidal_positions(dozes)
    monkeypatch.setattr(_timer, "WALL_FACTOR", 4)

    def waits(L, d):
        time.sleep(30)
        return pe_right(L, d)

    start = time.perf_counter()
    with pytest.raises(ExerciseError, match=r"kept waiting for more than 0.2 s"):
        checks.check_sinusoidal_positions(waits)
    assert time.perf_counter() - start < 20


def test_a_time_out_never_stops_an_import_half_way(tmp_path, monkeypatch):
    """The timer fires while the learner's code imports a slow module: the import finishes whole, then
    the learner's loop is stopped, and the module works afterwards."""
    (tmp_path / "slow_to_import.py").write_text(
        "import time\n"
        "start = time.process_time()\n"
        "while time.process_time() - start < 0.3:\n"
        "    pass\n"
        "FINISHED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(checks, "TIME_LIMIT", 0.05)

    def imports_then_spins(L, d):
        import slow_to_import  # noqa: F401  (0.3 s of work: the 0.05 s limit passes inside it)

        while True:
            pass

    with pytest.raises(ExerciseError, match="took more than 0.05 s of processor time") as info:
        checks.check_sinusoidal_positions(imports_then_spins)
    assert "If your code is right and the machine is very slow" in str(info.value)
    import slow_to_import

    assert slow_to_import.FINISHED


def test_a_loop_that_swallows_the_time_out_is_stopped_all_the_same(monkeypatch):
    monkeypatch.setattr(checks, "TIME_LIMIT", 0.05)

    def stubborn(L, d):
        try:
            while True:
                pass
        except BaseException:  # a bare `except:` eats the first time-out
            pass
        while True:
            pass

    start = time.perf_counter()
    with pytest.raises(ExerciseError, match="took more than 0.05 s"):
        checks.check_sinusoidal_positions(stubborn)
    assert time.perf_counter() - start < 60


def test_a_time_out_never_lands_in_the_course_code(monkeypatch):
    frame = type("Frame", (), {})

    def fake(filename, back=None, name="f"):
        f = frame()
        f.f_code = type("Code", (), {"co_filename": filename, "co_name": name})()
        f.f_back = back
        return f

    learner = fake("/tmp/ipykernel_1/123.py")
    assert _timer._may_stop(learner, None, lenient=False)
    assert not _timer._may_stop(fake(_timer.__file__, learner), None, lenient=True)
    assert not _timer._may_stop(fake(torch.__file__, learner), None, lenient=False)
    assert _timer._may_stop(fake(torch.__file__, learner), None, lenient=True)
    importing = fake("<frozen importlib._bootstrap>", learner)
    assert not _timer._may_stop(fake("/tmp/x.py", importing, "<module>"), None, lenient=True)
    assert not _timer._may_stop(fake("/tmp/ipykernel_1/9.py", fake("/tmp/y.py", importing)), None, lenient=True)


def test_inputs_modified_names_the_input():
    with pytest.raises(ExerciseError, match="changed its input `q` in place"):
        checks.check_scaled_dot_product_attention(sdpa_in_place)

    def mask_in_place(ids, pad_id):
        ids[ids == pad_id] = -1
        return (ids != -1)[:, None, None, :]

    with pytest.raises(ExerciseError, match="changed its input `token_ids`"):
        checks.check_padding_mask(mask_in_place)


def test_checker_keeps_global_random_state_and_threads():
    torch.manual_seed(123)
    expected = torch.rand(3)
    threads = torch.get_num_threads()
    torch.manual_seed(123)
    checks.check_encoder_block(BlockRight)
    assert torch.equal(torch.rand(3), expected)
    assert torch.get_num_threads() == threads


def test_not_callable_is_explained():
    with pytest.raises(ExerciseError, match="without calling it"):
        checks.check_causal_mask(ec.causal_mask(3))


def test_wrong_constructor_is_explained():
    class NoHeads(nn.Module):
        def __init__(self, d_model):
            super().__init__()

    with pytest.raises(ExerciseError, match=r"when built as NoHeads\(24, 2\)") as info:
        checks.check_multi_head_attention(NoHeads)
    assert isinstance(info.value.__cause__, TypeError)


def test_renamed_submodule_is_explained():
    class Renamed(MB):
        def __init__(self, d_model, n_heads):
            super().__init__(d_model, n_heads)
            self.out_proj = self.w_o
            del self.w_o

        def forward(self, x, mask=None):
            return x

    with pytest.raises(ExerciseError, match="has no `w_o`"):
        checks.check_multi_head_attention(Renamed)


def test_numpy_array_input_never_reaches_the_reference():
    # a candidate that returns a numpy scalar array for the mask
    with pytest.raises(ExerciseError, match="NumPy"):
        checks.check_causal_mask(lambda L: np.tril(np.ones((L, L), dtype=bool)))


def test_what_the_learner_prints_stays_out_of_a_passing_check(capfd):
    """nbval compares a check cell's output with the pass line, so debugging prints must not reach it."""
    import warnings

    def chatty(seq_len, d_model):
        print("debug: building the table", seq_len, d_model)
        warnings.warn("a warning from the learner's code", stacklevel=2)
        return pe_right(seq_len, d_model)

    checks.check_sinusoidal_positions(chatty)
    out, err = capfd.readouterr()
    assert out == "✓ sinusoidal_positions: all checks passed\n" and err == ""


def test_what_the_learner_prints_is_shown_when_the_check_fails():
    def chatty_swapped(seq_len, d_model):
        for i in range(12):
            print(f"debug line {i}")
        return pe_swapped(seq_len, d_model)

    with pytest.raises(ExerciseError) as info:
        checks.check_sinusoidal_positions(chatty_swapped)
    message = str(info.value)
    assert "sin and cos are swapped" in message
    assert "Your code printed this while it was checked (the last 10 of 12 lines):" in message
    assert "debug line 11" in message and "debug line 1\n" not in message


def test_a_shape_error_without_a_mask_gets_no_mask_paragraph():
    def k_dot_T(q, k, v, mask=None):
        w = (q @ k.T).softmax(-1)
        return w @ v, w

    message = checks.verdict("scaled_dot_product_attention", k_dot_T).message
    assert "k.transpose(-2, -1)" in message and "without a mask" in message
    assert checks.EXERCISES["scaled_dot_product_attention"].mask_hint not in message


def test_a_missing_import_is_named_with_the_import_to_add():
    def uses_math(q, k, v, mask=None):
        w = (q @ k.transpose(-2, -1) / not_imported_math.sqrt(q.shape[-1])).softmax(-1)  # noqa: F821
        return w @ v, w

    message = checks.verdict("scaled_dot_product_attention", uses_math).message
    assert "check its spelling" in message  # an unknown name: spelling, or a cell not run
    hint = _run._error_hint(NameError("name 'F' is not defined"), "MultiHeadAttention")
    assert "add `import torch.nn.functional as F`" in hint and "spelling" not in hint
    assert "add `import math`" in _run._error_hint(NameError("name 'math' is not defined"), "LayerNorm")


def test_what_the_learner_sees_in_a_notebook_is_their_line_and_the_diagnosis(tmp_path, capsys):
    """In IPython a failing check shows the learner's frames and the message: no checker or nn.Module
    frames, no colour codes (with the plain-traceback setting the self-check uses)."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.InteractiveShell.colors = "nocolor"
    shell = InteractiveShell.instance(config=config, ipython_dir=str(tmp_path))
    try:
        shell.run_cell("import torch\nfrom torch import nn\nfrom encoder_course import checks")
        shell.run_cell(
            "class MultiHeadAttention(nn.Module):\n"
            "    def __init__(self, d_model, n_heads):\n"
            "        super().__init__()\n"
            "        self.n_heads, self.d_head = n_heads, d_model // n_heads\n"
            "        self.w_q, self.w_k = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)\n"
            "        self.w_v, self.w_o = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)\n"
            "\n"
            "    def forward(self, x, mask=None):\n"
            "        scores = self.w_q(x) @ self.w_k(x).transpose(-2, -1) / math.sqrt(self.d_head)\n"
            "        return self.w_o(scores.softmax(-1) @ self.w_v(x))\n")
        capsys.readouterr()
        result = shell.run_cell("checks.check_multi_head_attention(MultiHeadAttention)")
        shown = capsys.readouterr().out
    finally:
        InteractiveShell.clear_instance()
    assert not result.success
    assert "scores = self.w_q(x) @ self.w_k(x)" in shown  # the learner's line
    assert "add `import math`" in shown  # the diagnosis
    assert "encoder_course/checks" not in shown and "nn/modules/module.py" not in shown
    assert "\x1b[" not in shown


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
