"""The committed learner notebooks are exactly what `encoder-course student` makes from the solutions."""

from __future__ import annotations

from pathlib import Path

import pytest

from encoder_course.course.learner_versions import learner_text, solution_notebooks

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = solution_notebooks(ROOT) if (ROOT / "notebooks" / "solutions").is_dir() else []


@pytest.mark.skipif(not SOLUTIONS, reason="notebooks/solutions has no NN_*.ipynb notebooks yet")
@pytest.mark.parametrize("solution", SOLUTIONS, ids=[p.name for p in SOLUTIONS])
def test_learner_version_is_up_to_date(solution):
    learner = ROOT / "notebooks" / solution.name
    assert learner.exists(), f"{learner.name} is missing: run `encoder-course student` and commit the result"
    assert learner.read_text(encoding="utf-8") == learner_text(solution), (
        f"notebooks/{solution.name} is out of date: run `encoder-course student` and commit the result"
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
    import nbformat

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
