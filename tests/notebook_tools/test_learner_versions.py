"""encoder_course.notebook_tools.learner_versions: learner notebooks are the solutions with each exercise stubbed
(`encoder-course learner` writes and checks them), and the committed ones are exactly what it makes."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from encoder_course.cli import main
from encoder_course.notebook_tools.learner_versions import (
    MarkerError,
    learner_text,
    regenerate,
    solution_notebooks,
    stub_source,
)

CLASS_CELL = '''import torch
from torch import nn


class LayerNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        # (..., d_model)
        ### BEGIN SOLUTION
        mean = x.mean(-1, keepdim=True)
        if True:
            for _ in range(1):
                mean = mean + 0
        return x - mean
        ### END SOLUTION'''

FUNC_CELL = '''def scaled_dot_product_attention(q, k, v, mask=None):
    """Docstring stays."""
    ### BEGIN SOLUTION
    scores = q @ k.transpose(-2, -1)
    return scores, scores
    ### END SOLUTION


print("after")'''


def _notebook():
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# 99 · Test\n\n### BEGIN SOLUTION stays in markdown"),
        nbformat.v4.new_code_cell(CLASS_CELL, execution_count=1),
        nbformat.v4.new_code_cell(FUNC_CELL, execution_count=2,
                                  outputs=[nbformat.v4.new_output("stream", name="stdout", text="after\n")]),
        nbformat.v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nchecks.check_layer_norm(LayerNorm)", execution_count=3,
                                  outputs=[nbformat.v4.new_output("stream", name="stdout",
                                                                  text="✓ layer_norm: all checks passed\n")]),
    ]
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i}"
    return nb


def test_stub_keeps_indentation_and_names_the_method():
    out = stub_source(CLASS_CELL)
    assert out.endswith(
        '    def forward(self, x):\n        # (..., d_model)\n'
        '        raise NotImplementedError("Exercise: write LayerNorm.forward: replace this line with your code")'
    )
    assert "mean" not in out.split("def forward")[1]


def test_stub_for_a_function_keeps_the_rest():
    out = stub_source(FUNC_CELL)
    assert out == (
        'def scaled_dot_product_attention(q, k, v, mask=None):\n    """Docstring stays."""\n'
        '    raise NotImplementedError("Exercise: write scaled_dot_product_attention: replace this line '
        'with your code")\n\n\nprint("after")'
    )


def test_nested_function_and_two_regions():
    src = "def outer(a):\n    def inner(b):\n        ### BEGIN SOLUTION\n        return b\n        ### END SOLUTION\n" \
          "    ### BEGIN SOLUTION\n    return inner(a)\n    ### END SOLUTION\n"
    out = stub_source(src)
    assert out.count("raise NotImplementedError") == 2
    assert "        raise NotImplementedError(\"Exercise: write outer" in out
    assert "return" not in out


@pytest.mark.parametrize("src", [
    "def f():\n    ### BEGIN SOLUTION\n    return 1\n",
    "def f():\n    return 1\n    ### END SOLUTION\n",
    "def f():\n    ### BEGIN SOLUTION\n    ### BEGIN SOLUTION\n    ### END SOLUTION\n",
])
def test_unbalanced_markers_are_an_error(src):
    with pytest.raises(MarkerError):
        stub_source(src)


def _repo(tmp_path):
    (tmp_path / "notebooks" / "solutions").mkdir(parents=True)
    nbformat.write(_notebook(), tmp_path / "notebooks" / "solutions" / "99_test.ipynb")
    return tmp_path


def test_learner_notebook_keeps_everything_else(tmp_path):
    root = _repo(tmp_path)
    text = learner_text(root / "notebooks" / "solutions" / "99_test.ipynb")
    learner = nbformat.reads(text, as_version=4)
    solution = _notebook()
    assert len(learner.cells) == len(solution.cells)
    assert learner.cells[0].source == solution.cells[0].source  # markdown untouched
    assert learner.cells[2].outputs == solution.cells[2].outputs  # exercise cell output kept
    # a cell that calls a checker stores no result in the learner version: no pass before any work
    assert learner.cells[3].source == solution.cells[3].source
    assert learner.cells[3].outputs == [] and learner.cells[3].execution_count is None
    assert learner.metadata == solution.metadata
    assert [c.get("id") for c in learner.cells] == [c.get("id") for c in solution.cells]
    assert "raise NotImplementedError" in learner.cells[1].source
    # exactly nbformat.write's formatting, and stable
    nbformat.write(learner, tmp_path / "again.ipynb")
    assert (tmp_path / "again.ipynb").read_text(encoding="utf-8") == text
    assert learner_text(root / "notebooks" / "solutions" / "99_test.ipynb") == text


def test_cli_writes_then_check_passes_then_detects_edits(tmp_path, capsys):
    root = _repo(tmp_path)
    assert main(["learner", "--check", "--root", str(root)]) == 1
    assert "notebooks/99_test.ipynb" in capsys.readouterr().out
    assert main(["learner", "--root", str(root)]) == 0
    learner = root / "notebooks" / "99_test.ipynb"
    first = learner.read_bytes()
    assert main(["learner", "--root", str(root)]) == 0
    assert learner.read_bytes() == first  # deterministic
    assert main(["learner", "--check", "--root", str(root)]) == 0
    assert "up to date" in capsys.readouterr().out
    learner.write_text(learner.read_text(encoding="utf-8").replace("after", "changed"), encoding="utf-8")
    assert main(["learner", "--check", "--root", str(root)]) == 1
    assert "notebooks/99_test.ipynb" in capsys.readouterr().out


def test_regenerate_reports_orphans(tmp_path):
    root = _repo(tmp_path)
    (root / "notebooks" / "98_old.ipynb").write_text("{}", encoding="utf-8")
    changed, orphans = regenerate(root, check=True)
    assert changed == ["notebooks/99_test.ipynb"] and orphans == ["notebooks/98_old.ipynb"]


# ---- the committed learner versions ----

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = solution_notebooks(ROOT) if (ROOT / "notebooks" / "solutions").is_dir() else []


@pytest.mark.skipif(not SOLUTIONS, reason="notebooks/solutions has no NN_*.ipynb notebooks yet")
@pytest.mark.parametrize("solution", SOLUTIONS, ids=[p.name for p in SOLUTIONS])
def test_learner_version_is_up_to_date(solution):
    learner = ROOT / "notebooks" / solution.name
    assert learner.exists(), f"{learner.name} is missing: run `encoder-course learner` and commit the result"
    assert learner.read_text(encoding="utf-8") == learner_text(solution), (
        f"notebooks/{solution.name} is out of date: run `encoder-course learner` and commit the result"
    )


def _lines(text: str) -> set[str]:
    return {line.strip() for line in text.splitlines() if line.strip()}


def _answer_texts(ex) -> list[str]:
    """The reference's source, and that of each method of a class reference and of each function locked with it."""
    import inspect

    texts = []
    for obj in ex.load_locked().values():
        if inspect.isclass(obj) and obj is not ex.load_reference():
            continue
        texts.append(inspect.getsource(obj))
        if inspect.isclass(obj):
            texts += [inspect.getsource(m) for name, m in vars(obj).items()
                      if inspect.isfunction(m) and name != "__init__"]
    return texts


@pytest.mark.skipif(not SOLUTIONS, reason="notebooks/solutions has no NN_*.ipynb notebooks yet")
def test_no_learner_version_stores_the_answer_to_an_exercise():
    """For every exercise, no stored output of any learner version (made in memory from the solutions)
    shows the reference's source, or the body of any of its methods; a cell of the solutions that does
    is emptied and has a spoiler note above it."""
    from encoder_course.checks.registry import EXERCISES

    answers = {key: [_lines(t) for t in _answer_texts(ex)] for key, ex in EXERCISES.items()}
    shown_in_solutions = set()
    for solution in SOLUTIONS:
        learner = nbformat.reads(learner_text(solution), as_version=4)
        solved = nbformat.read(solution, as_version=4)
        for version, nb in (("solution", solved), ("learner", learner)):
            for index, cell in enumerate(nb.cells):
                for output in cell.get("outputs", []):
                    text = output.get("text", "") if output.get("output_type") == "stream" else \
                        (output.get("data") or {}).get("text/plain", "")
                    lines = _lines("".join(text) if isinstance(text, list) else text)
                    for key, sources in answers.items():
                        # most of a source's lines (a short method counts only when it is shown whole)
                        if any(len(src & lines) >= max(3, 0.8 * len(src)) for src in sources):
                            assert version == "solution", (
                                f"the learner version of {solution.name}, cell {index}, shows the answer to {key}")
                            shown_in_solutions.add(key)
                            previous = learner.cells[[c.get("id") for c in learner.cells].index(cell.id) - 1]
                            assert previous.cell_type == "markdown" and previous.source.startswith("**Spoiler:**"), (
                                f"{solution.name}: no spoiler note above the cell that shows {key}")
    # The check looks at the right things: the solutions do show several answers.
    assert {"scaled_dot_product_attention", "layer_norm", "feed_forward", "encoder_block"} <= shown_in_solutions
