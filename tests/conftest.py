"""Shared test set-up: plain tracebacks in kernels, no model-hub access, a fixed thread count."""

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("IPYTHONDIR", str(ROOT / "tests" / "ipython_profile"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("ENCODER_COURSE_LEARNER", "tests")  # the quizzes' option order (no file in ~)


import pytest  # noqa: E402


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the test item (the browser test screenshots failures)."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, "rep_" + report.when, report)


@pytest.fixture
def controls_of():
    """The input controls inside an explorer (a widget box), however deeply they are nested."""
    ipywidgets = pytest.importorskip("ipywidgets")

    def controls(box) -> list:
        found = []
        for child in box.children:
            found += controls(child) if isinstance(child, ipywidgets.Box) else [child]
        return found

    return controls
