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

# Each pytest-xdist worker gets its share of the cores, and so does every notebook kernel it starts (kernels
# inherit the environment). With torch's default of one thread per core, two workers would run four threads
# on two cores, and OpenMP's threads, spinning while they wait for each other, then take many times longer.
# (Only in the workers: the controlling process starts them, and they would inherit its setting.)
if "PYTEST_XDIST_WORKER_COUNT" in os.environ:
    _THREADS = max(1, len(os.sched_getaffinity(0)) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))
    for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_name, str(_THREADS))


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


# The files that take longest go first, so that pytest-xdist (README's `-n 2 --dist loadfile`) starts each worker
# on one of them and fills the rest in around them; by default it orders files by their number of tests, and a
# slow file that starts last leaves one worker idle while the other finishes it.
SLOW_FILES = ("test_notebooks_learner.py", "test_notebooks.py", "test_site.py", "test_self_check.py",
              "test_browser.py", "test_attacks.py", "test_grade_runs.py")


def pytest_configure(config):
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False  # keep the order below


def pytest_collection_modifyitems(session, config, items):
    rank = {name: i for i, name in enumerate(SLOW_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order
