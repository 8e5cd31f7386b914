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
