"""Every learner notebook (exercises stubbed) runs to the end within its budget, as Run All would.

Split from test_notebooks.py so that pytest-xdist (``--dist loadfile``) runs the two halves on two workers.
"""

from __future__ import annotations

import pytest
from test_notebooks import LEARNER, MEMORY_LIMIT, ceiling_seconds, execute, exercise_checks, params, record, stream_text

pytestmark = pytest.mark.notebooks


@pytest.mark.parametrize("path", params(LEARNER, "learner"))
def test_learner_notebook_runs_to_the_end(path, tmp_path):
    nb, _, seconds, cpu, peak = execute(path, tmp_path)
    record(f"learner/{path.stem}",
           {"seconds": round(seconds, 1), "cpu_seconds": round(cpu, 1), "peak_mib": round(peak / 2**20)})
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and code[-1].get("execution_count"), "the last cell did not run"
    for cell in exercise_checks(path.parent / "solutions" / path.name, code):
        text = stream_text(cell)
        assert "not attempted yet" in text, f"expected 'not attempted yet', got:\n{text}"
    assert cpu <= ceiling_seconds(path), (
        f"{path.name} used {cpu:.1f} s of processor time (ceiling {ceiling_seconds(path):.0f} s)")
    assert peak < MEMORY_LIMIT, f"{path.name} kernel peaked at {peak / 2**20:.0f} MiB"
