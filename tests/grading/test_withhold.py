"""The course's own answers are withheld from the learner's process: stubbed in its memory before the
learner's first cell, and shown as stubs on its disk (the hostile class in ``test_attacks.py`` tries to get
them back: from disk, from memory, with the lock lifted, by replaying the checker)."""

from __future__ import annotations

import ast
import inspect
import os

import pytest
import torch

import encoder_course as ec
from encoder_course.checks import _run
from encoder_course.checks.registry import EXERCISES
from encoder_course.grading import withhold


def _in_a_fork(fn) -> int:
    """Run ``fn()`` in a forked child (what it changes stays there); its exit code (0: fn returned True)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = 0 if fn() else 1
        except BaseException:
            code = 2
        os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _call_with_nones(obj):
    params = [p for p in inspect.signature(obj).parameters.values()
              if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return obj(*[None] * len(params))


@pytest.mark.parametrize("key", sorted(EXERCISES))
def test_after_withdraw_the_exercise_s_answer_refuses_and_the_others_still_work(key):
    ex = EXERCISES[key]
    others = [e for e in EXERCISES.values() if not set(e.load_locked().values()) & set(ex.load_locked().values())]

    def child():
        assert withhold.withdraw(key) >= 1
        for shown, obj in ex.load_locked().items():
            _run._LOCK.used = None
            try:
                _call_with_nones(obj)
            except _run._UsedReference:
                assert _run._LOCK.used == shown
            else:
                return False
        # another exercise's reference is untouched (its code is still the course's own file's)
        return all(f.__code__.co_filename.endswith(".py") for e in others[:3]
                   for obj in e.load_locked().values() for f in withhold._functions(obj))

    assert _in_a_fork(child) == 0
    q = torch.randn(1, 3, 4)  # and the test's own process still has every answer
    assert ec.scaled_dot_product_attention(q, q, q)[0].shape == (1, 3, 4)


def test_a_stub_keeps_the_free_variables_of_a_closure():
    def outer():
        secret = 3

        def answer(x):
            return x * secret

        return answer

    fn = outer()
    fn.__code__ = withhold._stub_code(fn.__code__, "answer")
    with pytest.raises(_run._UsedReference):
        fn(2)


def test_the_withheld_files_read_from_source_are_where_the_imported_objects_live():
    """The grader finds them without importing the model; here they are checked against the imported objects
    (each function, each class and every class of the course it derives from)."""
    expected: dict = {}
    for _, obj in withhold._locked():
        for target in ([obj] if not inspect.isclass(obj) else
                       [k for k in obj.__mro__ if k.__module__.startswith("encoder_course")]):
            expected.setdefault(os.path.realpath(inspect.getsourcefile(target)), set()).add(target.__name__)
    assert {path: set(names) for path, (_, names) in withhold.withheld_files().items()} == expected


def test_the_stubbed_modules_import_and_hold_no_reference_body():
    files = withhold.withheld_files()
    for path, (module, names) in files.items():
        with open(path, encoding="utf-8") as f:
            text = withhold.stubbed_source(f.read(), names)
        scope = {"__name__": module, "__package__": module.rpartition(".")[0]}
        exec(compile(text, path, "exec"), scope)  # it still imports
        tree = {n.name: n for n in ast.parse(text).body if hasattr(n, "name")}
        for name in names:
            defs = [tree[name]] if not isinstance(tree[name], ast.ClassDef) else [
                f for f in tree[name].body if isinstance(f, ast.FunctionDef)]
            for fn in defs:
                body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
                assert len(body) == 1 and isinstance(body[0], ast.Raise), (path, name, fn.name)
            obj = scope[name]
            with pytest.raises(RuntimeError, match="withheld"):
                _call_with_nones(obj)


def test_a_one_line_body_and_a_nested_function_are_replaced_whole():
    source = ("def a(x): return x + 1\n\n\ndef b(x):\n    '''doc'''\n    def inner():\n        return x\n"
              "    return inner()  # done\n\n\ndef c():\n    return 2\n")
    text = withhold.stubbed_source(source, ["a", "b"])
    scope: dict = {}
    exec(text, scope)
    assert scope["c"]() == 2 and scope["b"].__doc__ == "doc"
    for name in ("a", "b"):
        with pytest.raises(RuntimeError, match="withheld"):
            scope[name](1)
    assert "inner" not in text and "x + 1" not in text


def test_the_bytecode_caches_of_a_withheld_module_are_found(tmp_path):
    module = tmp_path / "masks.py"
    module.write_text("x = 1\n")
    (tmp_path / "__pycache__").mkdir()
    for name in ("masks.cpython-311.pyc", "masks.cpython-311.opt-1.pyc", "masks_other.cpython-311.pyc"):
        (tmp_path / "__pycache__" / name).write_bytes(b"")
    found = [os.path.basename(p) for p in withhold.bytecode_caches(str(module))]
    assert found == ["masks.cpython-311.opt-1.pyc", "masks.cpython-311.pyc"]


def test_the_real_modules_are_imported_where_the_disk_shows_stubs(tmp_path, monkeypatch):
    """What the fork server does in bubblewrap: the finder serves the real source under the real file name."""
    package = tmp_path / "pkg_withheld_demo"
    package.mkdir()
    (package / "__init__.py").write_text("")
    real = "def answer():\n    return 42\n"
    (package / "mod.py").write_text(withhold.stubbed_source(real, ["answer"]))
    monkeypatch.syspath_prepend(str(tmp_path))
    finder = withhold.import_real({"pkg_withheld_demo.mod": [str(package / "mod.py"), real]})
    try:
        import pkg_withheld_demo.mod as mod
        assert mod.answer() == 42 and mod.__file__ == str(package / "mod.py")
        assert finder.sources == {}  # dropped once imported
    finally:
        import sys

        sys.meta_path.remove(finder)
        for name in ("pkg_withheld_demo.mod", "pkg_withheld_demo"):
            sys.modules.pop(name, None)
