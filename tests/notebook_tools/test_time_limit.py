"""A check that runs past its time limit never poisons the kernel it runs in.

The timer used to raise wherever it landed; landing inside a first import (sympy, which
``torch.broadcast_shapes`` imports on first use) left a half-imported module behind, and every later
attention call in that kernel failed. Here a real kernel runs notebook 03 with one more cell after its
setup: a check whose answer starts a heavy first import and never ends, under a limit that passes
during the import. The rest of the notebook then runs in the same kernel and every check and every
stored output must be as if nothing had happened.
"""

from __future__ import annotations

import os
from pathlib import Path
from unittest import mock

import nbformat
import pytest
from test_notebooks import comparable, exercise_checks, stream_text

from encoder_course.notebook_tools.executor import run_notebook

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "solutions" / "03_masks.ipynb"

POISON = '''
import sys
import torch
from encoder_course import checks

assert "sympy" not in sys.modules, "sympy is already imported: this test needs its first import"
limit_before = checks.TIME_LIMIT
checks.TIME_LIMIT = 0.2  # seconds of processor time; the import below takes longer


def padding_mask(token_ids, pad_id):
    import torch.fx.experimental.symbolic_shapes  # noqa: F401  (imports sympy: seconds of work)
    while True:
        pass


verdict = checks.verdict("padding_mask", padding_mask)
checks.TIME_LIMIT = limit_before
assert verdict.status == "failed" and "took more than 0.2 s of processor time" in verdict.message, verdict
import sympy

assert sympy.printing and sympy.core, "sympy was left half-imported"
assert tuple(torch.broadcast_shapes((2, 1), (1, 3))) == (2, 3)
print("the time-out left the kernel healthy")
'''


@pytest.mark.notebooks
def test_a_time_out_during_a_first_import_leaves_every_later_check_right(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    setup = next(i for i, c in enumerate(nb.cells) if (c.metadata.get("encoder_course") or {}).get("role") == "setup")
    nb.cells.insert(setup + 1, nbformat.v4.new_code_cell(POISON))
    stored = [comparable(c.get("outputs", [])) for c in nb.cells if c.cell_type == "code"]
    with mock.patch.dict(os.environ, {"ENCODER_COURSE_WORKSPACE": str(tmp_path / "my_encoder")}):
        run = run_notebook(nb, timeout=900, cwd=NOTEBOOK.parent, stop_on_error=True)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert run.stop_reason is None, (run.stop_reason, nb.cells[run.stopped_at].outputs if run.stopped_at else None)
    poisoned = next(c for c in code if c.source == POISON)
    assert "the time-out left the kernel healthy" in stream_text(poisoned)
    for cell, expected in zip(code, stored):
        if cell.source.lstrip().startswith("# NBVAL_CHECK_OUTPUT"):
            assert comparable(cell.outputs) == expected, f"output changed in cell:\n{cell.source[:300]}"
    passed = [stream_text(c) for c in exercise_checks(NOTEBOOK, code)]
    assert len(passed) == 2 and all(text.startswith("✓") for text in passed), passed
