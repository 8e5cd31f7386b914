"""The exercise registry: each exercise declared once, and everything keyed by exercise read from it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from encoder_course import checks
from encoder_course.checks import EXERCISES, ExerciseError, registry
from encoder_course.checks._run import _checker

from .catalogue import PASS_LINES, catalogues

ROOT = Path(__file__).resolve().parents[2]
CHECKERS = {name: getattr(checks, name) for name in checks.__all__ if name.startswith("check_")}


def test_each_exercise_is_declared_once():
    declared = registry._DECLARED
    assert len({ex.key for ex in declared}) == len({ex.name for ex in declared}) == len(declared) == len(EXERCISES)
    assert all(isinstance(ex, registry.Exercise) for ex in declared)
    assert list(EXERCISES.values()) == list(declared)
    with pytest.raises(ValueError, match="declared twice"):
        registry._index(declared + (declared[0],))


def test_every_checker_has_an_entry_and_every_entry_a_checker():
    assert set(CHECKERS) == {f"check_{key}" for key in EXERCISES}
    for key, ex in EXERCISES.items():
        checker = CHECKERS[f"check_{key}"]
        assert checker.exercise is ex
        assert PASS_LINES[checker] == f"✓ {key}: all checks passed"


def test_each_entry_names_the_package_reference_and_the_notebook():
    for ex in EXERCISES.values():
        reference = ex.load_reference()
        assert reference.__name__ == ex.name
        assert isinstance(reference, type) == (ex.kind == "class")
        notebook = ROOT / "notebooks" / "solutions" / f"{ex.notebook}.ipynb"
        assert f"checks.check_{ex.key}(" in notebook.read_text(), notebook
        assert ex.shape_hint


def test_an_unknown_exercise_is_an_error():
    with pytest.raises(KeyError, match="no exercise 'attention'"):
        registry.exercise("attention")
    with pytest.raises(KeyError, match="no exercise named 'Attention'"):
        registry.exercise_named("Attention")
    with pytest.raises(KeyError):
        _checker("multi_head")  # the key is multi_head_attention
    with pytest.raises(ValueError, match="check_causal_mask"):
        @_checker("causal_mask")
        def check_triangle(fn):
            pass
    with pytest.raises(ValueError, match="kind"):
        registry.Exercise("x", "X", "00_start_here", "module", "encoder_course.X", "", part=False)


def test_whether_an_exercise_is_a_part_is_said_for_each_one():
    """No default: a new exercise that forgets to say is an error, not silently a part of the learner's encoder."""
    with pytest.raises(TypeError, match="part"):
        registry.Exercise("x", "X", "00_start_here", "function", "encoder_course.X", "a hint")
    assert all(isinstance(ex.part, bool) for ex in EXERCISES.values())


def test_each_exercise_belongs_to_a_notebook_of_the_manifest_in_course_order():
    from encoder_course.notebook_tools import manifest

    order = [manifest.notebook(ex.notebook).number for ex in EXERCISES.values()]
    assert order == sorted(order)
    assert {ex.key for nb in manifest.NOTEBOOKS for ex in nb.exercises} == set(EXERCISES)


def test_checkers_are_found_in_their_files_and_exported_by_key():
    """Each checker file registers its checkers; the package exports check_<key> for every registry entry."""
    assert checks.__all__[:5] == ["EXERCISES", "ExerciseError", "TIME_LIMIT", "Verdict", "verdict"]
    assert checks.__all__[5:] == [f"check_{key}" for key in EXERCISES]
    with pytest.raises(AttributeError):
        checks.check_attention  # noqa: B018 (not an exercise)


def test_the_shape_hint_comes_from_the_registry():
    with pytest.raises(ExerciseError) as info:
        checks.check_padding_mask(lambda ids, pad_id: (ids != pad_id).view(-1, 7))
    assert EXERCISES["padding_mask"].shape_hint in str(info.value)
    with pytest.raises(ExerciseError) as info:
        checks.check_layer_norm(torch.nn.LayerNorm(4))
    assert "check_layer_norm expects your class itself" in str(info.value)


def test_every_exercise_has_its_catalogue_named_like_its_checker_file():
    found = catalogues()
    assert {c for catalogue in found.values() for c in catalogue.checkers} == set(CHECKERS.values()) == set(PASS_LINES)
    for module, catalogue in found.items():
        for checker in catalogue.checkers:
            assert checker.__module__ == "encoder_course.checks." + module.removeprefix("test_")


def test_import_encoder_course_loads_neither_checks_nor_plotting():
    code = ("import sys, encoder_course; "
            "assert 'encoder_course.checks' not in sys.modules and 'matplotlib' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_registry_and_the_manifest_load_no_torch():
    """The site, the CLI and README's map read the exercises without loading torch or any checker."""
    code = ("import sys\nfrom encoder_course.notebook_tools import manifest\n"
            "assert [ex.key for ex in manifest.notebook('03').exercises] == ['padding_mask', 'causal_mask']\n"
            "assert 'torch' not in sys.modules and 'encoder_course.checks._run' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_no_wrong_answer_is_named_by_a_generic_phrase():
    """Each catalogue entry asserts the phrase that diagnoses its mistake, never a generic one."""
    from .catalogue import generic_phrase

    for phrase in ("gives different numbers", "different values", "not right yet", "Your LayerNorm",
                   "raised ValueError", "mask", "shape"):
        assert generic_phrase(phrase), phrase
    generic = {w[0]: (w[4], generic_phrase(w[4])) for c in catalogues().values() for w in c.wrong
               if generic_phrase(w[4])}
    assert not generic, generic
