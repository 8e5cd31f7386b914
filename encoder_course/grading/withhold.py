"""The course's own answers, withheld from the learner's process: the process that runs a submission holds
no working copy of the answer its exercise is graded against, in memory or on disk.

The learner's process is a fork of one that imported the course. ``withdraw(key)`` (in the learner's process,
after the course's setup cells, before the learner's first cell) replaces the code of every object the registry
locks for the exercise with a stub that fails it as "calls the course's own ...". On disk, the sandbox shows
``stubbed_source(path)`` in place of each module that defines a reference (every reference's body replaced)
and covers their bytecode caches; in bubblewrap, where the checkers' fork server sees the same disk, it imports
those modules from the real source that the grader hands it (``import_real``).
"""

from __future__ import annotations

import ast
import glob
import importlib.abc
import importlib.util
import inspect
import os
import sys

STUB_LINE = "raise RuntimeError(\"the course's own answer is withheld while exercises are graded\")"


def _functions(obj):
    """The plain functions of a locked object: itself, or the methods of its classes that the course defines."""
    if not inspect.isclass(obj):
        yield inspect.unwrap(obj)
        return
    for klass in obj.__mro__:
        if klass.__module__.startswith("encoder_course"):
            for value in vars(klass).values():
                for f in (getattr(value, "__func__", value), getattr(value, "fget", None),
                          getattr(value, "fset", None)):
                    if inspect.isfunction(f):
                        yield inspect.unwrap(f)


def _locked(keys=None) -> list[tuple[str, object]]:
    from encoder_course.checks.registry import EXERCISES

    return [(shown, obj) for ex in EXERCISES.values() if keys is None or ex.key in keys
            for shown, obj in ex.load_locked().items()]


# ----------------------------------------------------------------------------------------------
# In memory (the learner's process)


def _stub_code(code, shown: str):
    """A code object with ``code``'s free variables that reports the call of ``shown`` and raises."""
    free = code.co_freevars
    source = "\n".join([
        "def _outer():",
        *(f"    {name} = None" for name in free),
        "    def _withheld(*args, **kwargs):",
        f"        ({', '.join(free)},)" if free else "        pass",
        "        __import__('encoder_course.checks._run', fromlist=['_run'])._refuse(" + repr(shown) + ")",
        "    return _withheld",
    ])
    scope: dict = {}
    exec(compile(source, f"<withheld {shown}>", "exec"), scope)
    stub = scope["_outer"]().__code__
    assert stub.co_freevars == free
    return stub


def withdraw(key: str) -> int:
    """Replace the code of what exercise ``key``'s check compares with (its reference and the objects locked
    with it) by stubs, in this process; returns how many functions. Only the course's own code is touched."""
    import linecache

    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    done, found = set(), 0
    for shown, obj in _locked({key}):
        for f in _functions(obj):
            found += 1
            if id(f) in done or f.__code__.co_filename.startswith("<withheld "):  # (withdrawn already)
                continue
            if not os.path.realpath(f.__code__.co_filename).startswith(package + os.sep):
                raise RuntimeError(f"{shown}'s code is not the course's own ({f.__code__.co_filename}): not withheld")
            done.add(id(f))
            f.__code__ = _stub_code(f.__code__, shown)
    if not found:
        raise RuntimeError(f"nothing to withhold for the exercise {key!r}")
    linecache.clearcache()
    return len(done)


# ----------------------------------------------------------------------------------------------
# On disk (the sandbox)


def _module_file(module: str) -> str | None:
    """The source file of a course module, found without importing it (the grader imports no torch)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    base = os.path.join(root, *module.split("."))
    for path in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(path):
            return os.path.realpath(path)
    return None


def _definition(module: str, name: str, seen=()) -> tuple[str, str, ast.AST] | None:
    """``(file, module, node)`` where ``module.name`` is defined: its own top-level ``def``/``class``, or where
    a ``from ... import name`` in it leads (a package re-exporting a name)."""
    path = _module_file(module)
    if path is None or (module, name) in seen:
        return None
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return path, module, node
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    source = node.module or ""
                    if node.level:
                        parts = package.split(".")
                        source = ".".join(parts[:len(parts) - node.level + 1] + ([source] if source else []))
                    if source.startswith("encoder_course"):
                        return _definition(source, alias.name, (*seen, (module, name)))
    return None


def withheld_files() -> dict[str, tuple[str, list[str]]]:
    """``{source file: (module name, [names of what to stub in it])}`` for every exercise's locked objects and
    the course's classes they derive from, read from the source (nothing is imported)."""
    from encoder_course.checks.registry import EXERCISES

    files: dict[str, tuple[str, list[str]]] = {}
    todo = [path.rpartition(".")[::2] for ex in EXERCISES.values() for path in (ex.reference, *ex.locked)]
    while todo:
        module, name = todo.pop()
        found = _definition(module, name)
        if found is None:
            raise LookupError(f"{module}.{name}: no definition found in the course's source")
        path, module, node = found
        names = files.setdefault(path, (module, []))[1]
        if node.name in names:
            continue
        names.append(node.name)
        for base in getattr(node, "bases", []):  # a class's bases that the course defines are stubbed too
            if isinstance(base, ast.Name) and _definition(module, base.id):
                todo.append((module, base.id))
    return files


def stubbed_source(source: str, names) -> str:
    """``source`` with the body of each top-level function in ``names``, and of each method of each class in
    ``names``, replaced by ``STUB_LINE`` (docstrings and signatures kept: it still imports)."""
    tree = ast.parse(source)
    bodies = []
    for node in tree.body:
        if getattr(node, "name", None) not in names:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            bodies.append(node)
        elif isinstance(node, ast.ClassDef):
            bodies += [f for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    lines = source.splitlines(keepends=True)
    for fn in sorted(bodies, key=lambda f: f.lineno, reverse=True):
        body = fn.body
        if isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]
        if not body:
            continue
        first, last = body[0], body[-1]
        start = lines[first.lineno - 1]
        head = start[:first.col_offset]  # the indentation (or, for a body on the def's line, "def f(): ")
        tail = lines[last.end_lineno - 1][last.end_col_offset:]
        lines[first.lineno - 1:last.end_lineno] = [head + STUB_LINE + (tail if tail.strip() else "\n")]
    return "".join(lines)


def bytecode_caches(path: str) -> list[str]:
    """The compiled copies of the module at ``path`` that lie beside it."""
    folder, name = os.path.split(path)
    stem = os.path.splitext(name)[0]
    return sorted(glob.glob(os.path.join(folder, "__pycache__", glob.escape(stem) + ".*.pyc"))
                  + [p for p in (os.path.splitext(path)[0] + ".pyc",) if os.path.isfile(p)])


def write_stubs(folder: str) -> list[list[str]]:
    """Write the stubbed modules into ``folder``; ``[[real file, stubbed file], ...]``."""
    pairs = []
    for i, (path, (_, names)) in enumerate(sorted(withheld_files().items())):
        with open(path, encoding="utf-8") as f:
            text = stubbed_source(f.read(), names)
        stub = os.path.join(folder, f"{i:02d}_{os.path.basename(path)}")
        with open(stub, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(stub, 0o644)
        pairs.append([path, stub])
    return pairs


def real_sources() -> dict[str, list[str]]:
    """``{module name: [file, source]}`` of the withheld modules, for a fork server that sees only the stubs."""
    found = {}
    for path, (name, _) in withheld_files().items():
        with open(path, encoding="utf-8") as f:
            found[name] = [path, f.read()]
    return found


class _RealSource(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, sources: dict):
        self.sources = sources

    def find_spec(self, name, path=None, target=None):
        if name not in self.sources:
            return None
        spec = importlib.util.spec_from_loader(name, self, origin=self.sources[name][0])
        spec.has_location = True
        return spec

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        path, source = self.sources.pop(module.__name__)
        module.__file__ = path
        exec(compile(source, path, "exec"), module.__dict__)


def import_real(sources: dict):
    """Import the withheld modules from ``sources`` (``real_sources()``'s) for as long as the returned finder
    stays on ``sys.meta_path``; each source is dropped once imported."""
    finder = _RealSource(dict(sources))
    sys.meta_path.insert(0, finder)
    return finder
