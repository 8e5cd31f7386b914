"""The learner's workspace: each passing answer saved as a small Python package, and loaded back.

When an exercise's check passes in a notebook, the checker saves the answer here
(:func:`save_part`): one file per exercise in a folder next to the notebooks (``my_encoder/``, or
``$ENCODER_COURSE_WORKSPACE``), with the imports, constants and helpers it needs, importing the learner's
own earlier parts. :func:`_load_package` imports the saved files afresh. Whether a saved part passes its
check now is asked of a *judge* the caller passes in (``checks.verdict``), so this module needs neither
the checkers nor :mod:`encoder_course.yours`, which are built on it.
"""

from __future__ import annotations

import ast
import builtins
import datetime
import hashlib
import importlib
import importlib.util
import inspect
import json
import linecache
import os
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from . import __version__

ENV_VAR = "ENCODER_COURSE_WORKSPACE"
DEFAULT_FOLDER = "my_encoder"
STAMPS = ".checks.json"  # which saved files passed their check, by content hash

_HEADER = '''"""Your {name}, saved from notebook {notebook} when its check passed ({when}).

Edit the exercise in the notebook, not this file: the next passing check overwrites it.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn
'''


class PartMissing(RuntimeError):
    """A part of your encoder is not saved yet, or does not pass its check now."""


def workspace_dir(workspace: str | os.PathLike | None = None) -> Path:
    """Your workspace folder: ``workspace``, else ``$ENCODER_COURSE_WORKSPACE``, else ``./my_encoder``.

    From the repository's folder (where README's commands run), ``./my_encoder`` does not exist but
    ``notebooks/my_encoder`` does (the notebooks run in ``notebooks/``): that one is meant.
    """
    if workspace is not None:
        return Path(workspace)
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR])
    here, below = Path.cwd() / DEFAULT_FOLDER, Path.cwd() / "notebooks" / DEFAULT_FOLDER
    return below if not here.exists() and below.is_dir() else here


def _exercises():
    from .checks.registry import EXERCISES

    return {key: ex for key, ex in EXERCISES.items() if ex.part}


def _exercise(key: str):
    known = _exercises()
    if key not in known:
        raise KeyError(f"no exercise {key!r} is saved to the workspace; known: {', '.join(known)}")
    return known[key]


# ----------------------------------------------------------------------------------------------
# Saving a passing answer


def _cell_lines(obj) -> list[str]:
    """The lines of the notebook cell (or file) that defined ``obj``."""
    code = getattr(obj, "__code__", None)
    if code is None and inspect.isclass(obj):
        code = next((f.__code__ for f in vars(obj).values() if inspect.isfunction(f)), None)
    if code is None:
        raise TypeError(f"cannot find the code of {obj!r}")
    lines = linecache.getlines(code.co_filename)
    if not lines:
        raise OSError(f"the source of {getattr(obj, '__name__', obj)!r} is not available")
    return lines


_HEADER_NAMES = {"math", "torch", "F", "nn"}  # what every saved file imports already (see _HEADER)
_LITERALS = (bool, int, float, str, type(None))
_MISSING = object()


def _definition(obj) -> tuple[str, ast.AST | None, str]:
    """The source of ``obj``'s definition in its cell, its AST node, and the cell's text."""
    lines = _cell_lines(obj)
    text = "".join(lines)
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == obj.__name__:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            return "".join(lines[start - 1:node.end_lineno]), node, text
    return textwrap.dedent(inspect.getsource(obj)), None, text


def _globals_of(obj) -> dict:
    """The namespace ``obj``'s code looks names up in (its cell's notebook, for a learner's answer)."""
    if inspect.isfunction(obj):
        return obj.__globals__
    functions = [f for f in vars(obj).values() if inspect.isfunction(f)]
    return functions[0].__globals__ if functions else {}


def _import_line(name: str, value) -> str | None:
    """An import that binds ``name`` to ``value`` in a fresh file, if ``value`` can be imported."""
    if inspect.ismodule(value):
        top = value.__name__
        return f"import {top}" if top == name else f"import {top} as {name}"
    module = getattr(value, "__module__", None)
    if not module or module == "__main__" or module.startswith("_encoder_course_workspace_"):
        return None
    real = getattr(value, "__name__", name)
    for where in dict.fromkeys((module.split(".")[0], module)):  # the package's own name when it exports it
        try:
            if getattr(importlib.import_module(where), real, None) is value:
                return f"from {where} import {real}" + (f" as {name}" if real != name else "")
        except Exception:
            continue
    return None


@dataclass
class _Helper:
    """A function or class of the learner's, from another cell, that an answer calls."""


    name: str
    source: str


def source_of_answer(obj, skip: frozenset = frozenset()) -> tuple[str, list[str], list[_Helper]]:
    """A learner's function or class: its definition, and the imports and helpers it needs.

    The needs are found by name: each name the definition uses and does not define is looked up where the
    definition looks it up. A module or an importable object becomes an import (the cell's own import
    line when it has one); a plain constant becomes an assignment; a function or class the learner
    defined in another cell is carried along as a helper, with its own needs. Names in ``skip`` (the
    learner's earlier parts, imported separately) and the names every saved file imports are left alone.
    """
    definition, node, text = _definition(obj)
    imports, helpers = [], []
    if node is not None:
        _needs(obj, node, text, skip | {obj.__name__}, imports, helpers, depth=0)
    return definition, imports, helpers


def _needs(obj, node, text: str, skip, imports: list, helpers: list, depth: int) -> None:
    used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    cell_imports = {}
    for stmt in ast.parse(text).body:  # the cell's own import lines, as the learner wrote them
        if isinstance(stmt, (ast.Import, ast.ImportFrom)) and not getattr(stmt, "level", 0):
            for alias in stmt.names:
                cell_imports[(alias.asname or alias.name).split(".")[0]] = ast.get_source_segment(text, stmt)
    scope = _globals_of(obj)
    for name in sorted(used - skip - _HEADER_NAMES - set(dir(builtins))):
        line, value = cell_imports.get(name), scope.get(name, _MISSING)
        if line is None and value is not _MISSING:
            line = _import_line(name, value)
            if line is None and isinstance(value, _LITERALS):
                line = f"{name} = {value!r}"
        if line is not None:
            if line not in imports:
                imports.append(line)
        elif (depth < 4 and (inspect.isfunction(value) or inspect.isclass(value)) and value.__name__ == name
              and name not in {h.name for h in helpers}):  # a helper from another cell, with its own needs
            helper, helper_node, helper_text = _definition(value)
            if helper_node is not None:
                helpers.append(_Helper(name, helper.rstrip()))
                _needs(value, helper_node, helper_text, skip | {name}, imports, helpers, depth + 1)


def render_part(key: str, candidate) -> str:
    """The text of the workspace file for a passing answer: header, imports, earlier parts, helpers, the code."""
    ex = _exercise(key)
    uses = [_exercise(u) for u in ex.uses]
    definition, imports, helpers = source_of_answer(candidate, frozenset(u.name for u in uses))
    when = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    text = _HEADER.format(name=ex.name, notebook=ex.notebook, when=when)
    if imports:
        text += "\n" + "\n".join(imports) + "\n"
    if uses:
        text += "\n# your own earlier parts\n" + "".join(f"from .{u.key} import {u.name}\n" for u in uses)
    for helper in reversed(helpers):  # a helper's own helpers first
        text += f"\n\n# your {helper.name}, from another cell of the notebook\n{helper.source}\n"
    return text + "\n\n" + definition.rstrip() + "\n"


def save_part(key: str, candidate, judge, workspace=None, verify=None) -> Path:
    """Save a passing answer as ``<workspace>/<key>.py``, if the saved file works on its own.

    ``judge(key, obj)`` (``checks.verdict``) says whether an earlier part it imports passes now. The file
    is written, imported as part of the workspace package and, if ``verify`` is given,
    checked again (``verify(obj)`` returns None when it passes, else what is wrong); if any of that
    fails, the previous file comes back. So a file that would not import (a helper defined in another cell, say) never
    replaces a working one.

    Raises:
        PartMissing: when the saved file does not work on its own (the message says why).
    """
    ex = _exercise(key)
    folder = workspace_dir(workspace)
    folder.mkdir(parents=True, exist_ok=True)
    init = folder / "__init__.py"
    if not init.exists():
        init.write_text('"""Your own encoder, one file per exercise you passed (see encoder_course.yours)."""\n')
    text = render_part(key, candidate)
    target = folder / f"{key}.py"
    previous = target.read_text(encoding="utf-8") if target.exists() else None
    target.write_text(text, encoding="utf-8")
    try:
        # The saved file imports your earlier parts where they pass, the reference where they do not,
        # as `use` gave them to the notebook.
        ready = {u for u in _closure(ex.uses) if _status(folder, u, judge).passing}
        obj = getattr(_load_package(folder, [key], fallback=set(_closure(ex.uses)) - ready)[key], ex.name)
        problem = verify(obj) if verify is not None else None
        if problem:
            raise PartMissing(f"the file it would be saved as fails its check on its own ({problem}); "
                              "define everything it needs inside the exercise cell")
    except Exception as exc:
        if previous is None:
            target.unlink()
        else:
            target.write_text(previous, encoding="utf-8")
        if isinstance(exc, PartMissing):
            raise
        raise PartMissing(f"your {ex.name} passed, but the file it would be saved as does not work on its "
                          f"own ({type(exc).__name__}: {exc}). Define everything it needs inside the "
                          "exercise cell.") from exc
    _write_stamp(folder, key)
    return target


# ----------------------------------------------------------------------------------------------
# Loading the workspace


def _package_name(folder: Path) -> str:
    return "_encoder_course_workspace_" + hashlib.sha1(str(folder.resolve()).encode()).hexdigest()[:12]


def _reference_module(ex):
    module_name, _, attr = ex.reference.rpartition(".")
    module = type(sys)(f"reference.{ex.key}")
    setattr(module, ex.name, getattr(importlib.import_module(module_name), attr))
    return module


def _closure(keys) -> list[str]:
    """``keys`` and every part they import, directly or not (each once)."""
    out, todo = [], list(keys)
    while todo:
        key = todo.pop()
        if key not in out:
            out.append(key)
            todo.extend(_exercise(key).uses)
    return out


def _load_package(folder: Path, keys, fallback: set[str] = frozenset()) -> dict:
    """Import the saved parts ``keys`` afresh (files may have changed), with the parts they import.

    A part in ``fallback``, or one with no saved file, is the course's reference. Returns
    ``{key: module}`` for ``keys`` and the parts they import.
    """
    name = _package_name(folder)
    for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[loaded]
    spec = importlib.util.spec_from_file_location(name, folder / "__init__.py",
                                                  submodule_search_locations=[str(folder)])
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    if (folder / "__init__.py").exists():
        spec.loader.exec_module(package)
    needed = _closure(keys)
    modules = {}
    for key in needed:  # references first, so a saved part that imports one finds it
        if key in fallback or not (folder / f"{key}.py").exists():
            modules[key] = sys.modules[f"{name}.{key}"] = _reference_module(_exercise(key))
    importlib.invalidate_caches()
    for key in needed:
        if key not in modules:
            modules[key] = importlib.import_module(f"{name}.{key}")
    return modules


def _hash(folder: Path, key: str) -> str:
    """A fingerprint of a saved part: its file, the files of the parts it imports, the course version."""
    digest = hashlib.sha256(__version__.encode())
    todo, seen = [key], set()
    while todo:
        part_key = todo.pop()
        if part_key in seen:
            continue
        seen.add(part_key)
        path = folder / f"{part_key}.py"
        digest.update(part_key.encode() + (path.read_bytes() if path.exists() else b"<reference>"))
        todo.extend(_exercise(part_key).uses)
    return digest.hexdigest()


def _stamps(folder: Path) -> dict:
    try:
        return json.loads((folder / STAMPS).read_text())
    except (OSError, ValueError):
        return {}


def _write_stamp(folder: Path, key: str) -> None:
    stamps = _stamps(folder)
    stamps[key] = _hash(folder, key)
    (folder / STAMPS).write_text(json.dumps(stamps, indent=1, sort_keys=True))


def _passes_now(folder: Path, key: str, module, judge) -> tuple[bool, str]:
    """Does the saved part pass its check now, and if not, the first line of the checker's message?
    (A pass is cached by the file's content and the course version.)"""
    if _stamps(folder).get(key) == _hash(folder, key):
        return True, ""
    ex = _exercise(key)
    result = judge(key, getattr(module, ex.name, None))
    if result.status == "passed":
        _write_stamp(folder, key)
        return True, ""
    return False, (result.message.strip().splitlines() or [result.status])[0]


@dataclass
class PartStatus:
    """One row of :func:`progress`."""

    key: str
    name: str
    notebook: str
    saved: bool
    passing: bool
    problem: str = ""


def _status(folder: Path, key: str, judge) -> PartStatus:
    ex = _exercise(key)
    saved = (folder / f"{key}.py").exists()
    passing, problem = False, "" if saved else f"not saved yet: pass the exercise in notebook {ex.notebook}"
    if saved:
        try:
            ready = {u for u in _closure(ex.uses) if _status(folder, u, judge).passing}
            module = _load_package(folder, [key], fallback=set(_closure(ex.uses)) - ready).get(key)
            passing, why = _passes_now(folder, key, module, judge)
            problem = "" if passing else f"saved, but it does not pass its check now: {why}"
        except Exception as exc:  # a file the learner edited by hand, say
            problem = f"saved, but it does not import: {type(exc).__name__}: {exc}"
    return PartStatus(key, ex.name, ex.notebook, saved, passing, problem)
