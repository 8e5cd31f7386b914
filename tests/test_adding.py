"""The maintainers' guide's "Adding something" checklists, followed to the letter in a copy of the repository.

A toy exercise (``double``, in notebook 14) is added through exactly the places the guide's checklist names
and a toy widget through the widget checklist; then the checklist's commands run, and the copy's own tests
say the course took them in: the checker exported, its pass line, the registry, the manifest, README's
course map, the guide's catalogue figure, the learner version's stub. Nothing else is edited by hand.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]

# The five places of the guide's exercise checklist, and what each gets.
REFERENCE = ("encoder_course/toy.py", '''"""A toy model file (the checklist's test)."""

import torch


def double(x: torch.Tensor) -> torch.Tensor:
    """Twice ``x``.

    Shape:
        any -> the same.
    """
    return 2 * x
''')
REGISTRY_ENTRY = '''    Exercise(
        key="double", name="double", notebook="14_review",
        kind="function", reference="encoder_course.toy.double", part=False,
        shape_hint="Return a tensor of x's shape.",
    ),
'''
CHECKER = ("encoder_course/checks/toy.py", '''"""The checker of ``double`` (the checklist's test)."""

import torch

from ._run import ExerciseError, _checker, _expect_tensor, _invoke
from .registry import exercise


@_checker("double")
def check_double(fn):
    name = exercise("double").name
    x = torch.arange(6.0).reshape(2, 3)
    got = _expect_tensor(name, _invoke(name, "on a (2, 3) tensor", fn, x), "on a (2, 3) tensor")
    if torch.equal(got, x + 1):
        raise ExerciseError(f"Your {name} adds one instead of doubling.")
    if not torch.equal(got, 2 * x):
        raise ExerciseError(f"Your {name} does not give twice x.")
''')
CATALOGUE = ("tests/checks/test_toy.py", '''"""The checker of ``double``: its catalogue (the checklist's test)."""

from encoder_course import checks

from .catalogue import Catalogue

CATALOGUE = Catalogue(checks.check_double)
CATALOGUE.add_wrong("toy-plus-one", checks.check_double, "x + 1", "adds one instead of doubling")(lambda x: x + 1)
CATALOGUE.add_right("toy-sum", checks.check_double, "x + x")(lambda x: x + x)

test_catalogue_cases, test_wrong_answer_is_named, test_right_answer_passes = CATALOGUE.tests()
''')
EXERCISE_CELL = "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION"
CHECK_CELL = "# NBVAL_CHECK_OUTPUT\nchecks.check_double(double)"
# The widget checklist: a view and an explorer in the notebook's widget module, listed in its __all__; a cell.
WIDGET = '''

def toy_view(n: int = 1) -> str:
    return "x" * n


def explore_toy():
    import ipywidgets

    return ipywidgets.interact(toy_view, n=(1, 5))


__all__ += ["toy_view", "explore_toy"]
'''
WIDGET_TEST = '''

def test_toy_view_every_value():
    assert [widgets.toy_view(n) for n in range(1, 6)] == ["x" * n for n in range(1, 6)]
'''


def _copy(dest: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "my_encoder", ".ipynb_checkpoints")
    for name in ("encoder_course", "tests", "notebooks", "docs"):
        shutil.copytree(ROOT / name, dest / name, ignore=ignore)
    for name in ("README.md", "pyproject.toml"):
        shutil.copy(ROOT / name, dest / name)
    return dest


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


def _follow_the_checklists(repo: Path) -> tuple[set[str], set[str]]:
    """Edit exactly the places the guide names; return the files edited by hand for the exercise and the widget."""
    (repo / REFERENCE[0]).write_text(REFERENCE[1])
    registry = repo / "encoder_course/checks/registry.py"
    text = registry.read_text()
    end = text.index("\n)\n", text.index("_DECLARED = ("))  # the entry goes last: notebook 14 is last
    registry.write_text(text[:end + 1] + REGISTRY_ENTRY + text[end + 1:])
    (repo / CHECKER[0]).write_text(CHECKER[1])
    (repo / CATALOGUE[0]).write_text(CATALOGUE[1])
    solution = repo / "notebooks/solutions/14_review.ipynb"
    nb = nbformat.read(solution, as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "widgets.quiz" in c.source)
    nb.cells[at:at] = [
        nbformat.v4.new_code_cell(EXERCISE_CELL,
                                  metadata={"encoder_course": {"role": "exercise", "exercise": "double"}}),
        nbformat.v4.new_code_cell(CHECK_CELL, metadata={"encoder_course": {"role": "check", "exercise": "double",
                                                                           "points": 1}}),
        nbformat.v4.new_code_cell("widgets.explore_toy()"),
    ]
    nbformat.write(nb, solution)
    widget = repo / "encoder_course/widgets/review.py"
    widget.write_text(widget.read_text() + WIDGET)
    widget_test = repo / "tests/widgets/test_widgets_review.py"
    widget_test.write_text(widget_test.read_text() + WIDGET_TEST)
    exercise = {REFERENCE[0], "encoder_course/checks/registry.py", CHECKER[0], CATALOGUE[0],
                "notebooks/solutions/14_review.ipynb"}
    return exercise, {"encoder_course/widgets/review.py", "tests/widgets/test_widgets_review.py",
                      "notebooks/solutions/14_review.ipynb"}


def _run(repo: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(repo), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(args, cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def test_a_toy_exercise_and_widget_added_through_the_guides_checklist(tmp_path):
    guide = (ROOT / "docs" / "maintainers.md").read_text()
    checklist = guide.split("## Adding something")[1].split("\n## ")[0]
    for place in ("encoder_course/checks/registry.py", "encoder_course/checks/", "tests/checks/test_",
                  "notebooks/solutions/", "encoder-course execute", "python tests/checks/times.py --docs",
                  "__all__"):
        assert place in checklist, f"the guide's checklist does not name {place}"
    repo = _copy(tmp_path / "repo")
    learner = (sys.executable, "-m", "encoder_course.cli", "learner", "--root", str(repo))
    _run(repo, *learner)  # (the learner versions up to date first: test_learner_versions.py checks that)
    before = _tree(repo)
    exercise, widget = _follow_the_checklists(repo)
    assert len(exercise) <= 5 and len(widget) <= 3
    edited = exercise | widget

    # The checklist's commands (execute's notebook run is left out: the notebook tests run every notebook).
    _run(repo, *learner)
    _run(repo, sys.executable, "tests/checks/times.py", "--docs", "--no-timing")

    changed = {path for path, data in _tree(repo).items() if before.get(path) != data}
    assert changed - edited == {"notebooks/14_review.ipynb", "README.md", "docs/maintainers.md",
                                "encoder_course/data/mistakes.json", "tests/checks/published_mistake_ids.txt"}, \
        changed - edited
    learner = nbformat.read(repo / "notebooks/14_review.ipynb", as_version=4)
    stub = next(c.source for c in learner.cells if c.get("metadata", {}).get("encoder_course", {}).get("exercise")
                == "double" and c.metadata["encoder_course"]["role"] == "exercise")
    assert "NotImplementedError" in stub and "2 * x" not in stub
    row14 = next(line for line in (repo / "README.md").read_text().splitlines() if line.startswith("| 14 |"))
    assert "`double`" in row14

    # The copy's own tests take the new exercise and widget in: nothing else needed editing.
    probe = textwrap.dedent('''
        from encoder_course import checks, widgets, yours
        from encoder_course.notebook_tools import manifest
        assert checks.check_double.exercise.key == "double" and "check_double" in checks.__all__
        assert [ex.key for ex in manifest.notebook("14").exercises] == ["double"]
        assert "double" not in yours._exercises()  # part=False: not saved as a part of the learner's encoder
        assert widgets.toy_view(3) == "xxx" and callable(widgets.explore_toy)
        checks.check_double(lambda x: x * 2)
    ''')
    assert _run(repo, sys.executable, "-c", probe).stdout.strip() == "✓ double: all checks passed"
    _run(repo, sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
         "tests/checks/test_registry.py", "tests/checks/test_toy.py", "tests/checks/test_mistake_ids.py",
         "tests/notebook_tools/test_manifest.py",
         "tests/test_delivery.py::test_the_maintainers_guide_counts_the_checker_catalogues",
         "tests/widgets/test_widgets_review.py")
