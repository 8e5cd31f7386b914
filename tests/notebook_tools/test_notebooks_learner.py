"""Every learner notebook (exercises stubbed) runs to the end within its budget, as Run All would.

Split from test_notebooks.py so that pytest-xdist (``--dist loadfile``) runs the two halves on two workers. The
learner versions of the notebooks that train run in test_notebooks.py, after the solution run whose training
they replay.
"""

from __future__ import annotations

import pytest
from test_notebooks import LEARNER, check_learner_run, params

pytestmark = pytest.mark.notebooks


@pytest.mark.parametrize("path", params(LEARNER, "learner"))
def test_learner_notebook_runs_to_the_end(path, tmp_path):
    check_learner_run(path, tmp_path)
