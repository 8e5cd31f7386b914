"""The course manifest (``notebook_tools/manifest.py``): one entry per notebook, one name for its files."""

from __future__ import annotations

import pkgutil
import re
from pathlib import Path

import nbformat
import pytest

from encoder_course.notebook_tools import manifest
from encoder_course.notebook_tools.manifest import NOTEBOOKS
from encoder_course.quizzes import quiz

ROOT = Path(__file__).resolve().parents[2]
SHARED = {"plots": {"style", "encoder_map"}, "widgets": set()}  # modules every notebook may use


def test_every_notebook_file_is_in_the_manifest_and_every_entry_has_both_versions():
    on_disk = sorted(p.stem for p in (ROOT / "notebooks" / "solutions").glob("*.ipynb"))
    assert on_disk == [nb.stem for nb in NOTEBOOKS]
    for nb in NOTEBOOKS:
        assert nb.solution(ROOT).is_file() and nb.learner(ROOT).is_file(), nb.stem


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda nb: nb.stem)
def test_a_notebooks_first_heading_is_its_number_and_title(nb):
    first = nbformat.read(nb.solution(ROOT), as_version=4)
    heading = next(m.group(1) for c in first.cells if c.cell_type == "markdown"
                   for m in [re.search(r"^# (.+)$", c.source, re.M)] if m)
    assert heading.strip() == nb.heading


def test_start_heres_table_of_notebooks_lists_every_notebook_in_order():
    """00's own map of the course (written for the learner, not generated) names every later notebook."""
    start = nbformat.read(NOTEBOOKS[0].solution(ROOT), as_version=4)
    rows = [m.groups() for c in start.cells if c.cell_type == "markdown"
            for m in re.finditer(r"^\| (\d\d) \| (\w+) \|", c.source, re.M)]
    assert rows == [(nb.number, nb.name) for nb in NOTEBOOKS[1:]]


@pytest.mark.parametrize("kind", ["plots", "widgets"])
def test_plot_and_widget_modules_are_named_like_their_notebook(kind):
    package = ROOT / "encoder_course" / kind
    names = {m.name for m in pkgutil.iter_modules([str(package)]) if not m.name.startswith("_")}
    assert names - SHARED[kind] <= {nb.name for nb in NOTEBOOKS}, names - SHARED[kind]
    assert {nb.name for nb in NOTEBOOKS if nb.module(kind)} == names - SHARED[kind]


def test_every_notebook_after_the_first_has_a_quiz_bank_named_like_it():
    assert sorted(quiz.bank_modules()) == [nb.number for nb in NOTEBOOKS]
    assert all(quiz.bank_modules()[nb.number] == f"encoder_course.quizzes.bank.{nb.name}" for nb in NOTEBOOKS)


def test_readme_course_map_is_made_from_the_manifest():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    written = readme.split(manifest.MAP_BEGIN)[1].split(manifest.MAP_END)[0].strip()
    assert written == manifest.readme_map(), "README's course map is out of date: run encoder-course learner"


def test_readme_map_rows_carry_the_registry_exercises_and_reading_times():
    rows = {line.split("|")[1].strip(): line for line in manifest.readme_map().splitlines()[2:]}
    assert "`padding_mask`, `causal_mask`" in rows["03"] and "| 30 min |" in rows["03"]
    assert "`Embeddings`, `Encoder`, `parameter_count`" in rows["08"]
    assert "| — |" in rows["00"]


def test_rewriting_readme_keeps_everything_outside_the_markers(tmp_path):
    (tmp_path / "README.md").write_text(f"# x\n\nbefore\n{manifest.MAP_BEGIN}\nold\n{manifest.MAP_END}\nafter\n")
    assert manifest.rewrite_readme(tmp_path)
    text = (tmp_path / "README.md").read_text()
    assert text.startswith("# x\n\nbefore\n") and text.endswith(f"{manifest.MAP_END}\nafter\n") and "old" not in text
    assert not manifest.rewrite_readme(tmp_path)  # a second run changes nothing


@pytest.mark.parametrize("which", ["3", "03", "03_masks", "masks", "notebooks/03_masks.ipynb"])
def test_a_notebook_is_found_by_number_stem_name_or_path(which):
    assert manifest.notebook(which).stem == "03_masks"


def test_an_unknown_notebook_or_a_bad_entry_is_an_error():
    with pytest.raises(KeyError, match="no notebook '99'"):
        manifest.notebook("99")
    with pytest.raises(ValueError, match="listed twice"):
        manifest._index(NOTEBOOKS + (NOTEBOOKS[0],))
    with pytest.raises(ValueError, match="snake_case"):
        manifest.Notebook("3", "Masks", "Masks", "", 10)


def test_the_budgets_come_from_the_manifest():
    from encoder_course.notebook_tools import budgets

    assert budgets.budget_seconds("10_training.ipynb") == manifest.notebook("10").budget_s == 120.0
    assert budgets.budget_seconds("12_real_text") == manifest.notebook("12").budget_s == 180.0
    assert budgets.budget_seconds("13_modern_encoder") == manifest.notebook("13").budget_s == 180.0
    assert {budgets.budget_seconds(nb.stem) for nb in NOTEBOOKS if nb.number not in ("10", "12", "13")} == {60.0}


def test_the_self_check_finds_a_notebook_through_the_manifest(monkeypatch):
    from encoder_course.notebook_tools.self_check import _find

    monkeypatch.chdir(ROOT)
    assert _find("3") == _find("masks") == _find("03_masks") == ROOT / "notebooks" / "03_masks.ipynb"
    with pytest.raises(FileNotFoundError, match="give a number"):
        _find("99")


@pytest.mark.parametrize("nb", NOTEBOOKS[1:], ids=lambda nb: nb.stem)
def test_a_notebooks_quiz_calls_name_its_own_number(nb):
    source = "\n".join(c.source for c in nbformat.read(nb.solution(ROOT), as_version=4).cells)
    called = re.findall(r"""(?:quiz\.grade|widgets\.quiz|quiz)\(\s*["'](\d\d)["']""", source)
    assert called and set(called) == {nb.number}, called


def test_a_hub_link_is_an_nbgitpuller_link_to_the_learner_version(capsys):
    from urllib.parse import parse_qs, urlsplit

    from encoder_course.cli import main

    url = manifest.hub_url("03_masks", "https://hub.example.org/", repo="https://git.example.org/me/course.git",
                           branch="spring")
    parts = urlsplit(url)
    assert (parts.scheme, parts.netloc, parts.path) == ("https", "hub.example.org", "/hub/user-redirect/git-pull")
    assert parse_qs(parts.query) == {"repo": ["https://git.example.org/me/course.git"], "branch": ["spring"],
                                     "urlpath": ["lab/tree/course/notebooks/03_masks.ipynb"]}
    assert main(["link", "--hub", "https://hub.example.org"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == [nb.stem for nb in manifest.NOTEBOOKS]
    assert lines[0].split()[1] == manifest.hub_url(manifest.NOTEBOOKS[0].stem, "https://hub.example.org")
