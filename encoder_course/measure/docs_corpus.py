"""Real English text every machine has: the first paragraphs of the Python standard library's docstrings.

Notebook 12 pretrains, searches and fine-tunes on this corpus. Docstrings differ between Python versions,
so the course reads a **snapshot** stored in the package (``encoder_course/data/python_docs.jsonl``), made
once by ``python -m encoder_course.measure.docs_corpus --write`` from a named Python version: every
learner gets the same passages, and so the same numbers, whatever Python they run.

One passage per documented public function, class or method: its docstring's first paragraph, on one line.
Passages whose text another one already has ("Close the file.") are kept once, so every passage has one
right answer in a search. The corpus is split **by top-level module** into training and held-out parts, so
nothing measured on the held-out part was ever seen, not even as a neighbour in the same module.

The docstrings are Python's documentation, © Python Software Foundation, under the PSF License
Agreement (https://docs.python.org/3/license.html); the snapshot's first line says so.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import inspect
import io
import json
import pkgutil
import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

SNAPSHOT = Path(__file__).resolve().parents[1] / "data" / "python_docs.jsonl"
LICENCE = ("Docstrings of the Python standard library, (c) Python Software Foundation, used under the PSF "
           "License Agreement: https://docs.python.org/3/license.html")
HELD_OUT_SHARE = 0.2  # about a fifth of the top-level modules are held out

# Modules that do something when imported (print, open a browser), are tests or tools rather than
# library, or exist on one platform only.
_SKIP = frozenset({
    "this", "antigravity", "idlelib", "tkinter", "turtle", "turtledemo", "test", "lib2to3", "ensurepip",
    "venv", "pydoc_data", "xxsubtype", "xxlimited", "msilib", "winreg", "winsound", "msvcrt", "nt",
    "sre_compile", "sre_parse", "sre_constants", "distutils", "__main__",
})
# Where a module's objects are documented under another name (``posix.getcwd`` is ``os.getcwd``).
_SHOWN_AS = {"posix": "os", "builtins": ""}


@dataclass(frozen=True)
class Passage:
    """One documented object: ``name`` as a learner writes it (``json.dumps``), its top-level ``module``,
    and ``text``, the first paragraph of its docstring."""

    name: str
    module: str
    text: str


def held_out(module: str) -> bool:
    """Whether a top-level module belongs to the held-out part: a fixed hash of its name, so the split
    never depends on the order or number of modules."""
    digest = hashlib.sha256(module.encode("utf-8")).digest()
    return digest[0] < 256 * HELD_OUT_SHARE


def load(path: str | Path = SNAPSHOT) -> list[Passage]:
    """Every passage of the snapshot, in its stored order (sorted by name)."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [Passage(**json.loads(line)) for line in lines[1:] if line.strip()]


def snapshot_info(path: str | Path = SNAPSHOT) -> dict:
    """The snapshot's header: the Python version that made it, the command, the licence."""
    with open(path, encoding="utf-8") as f:
        return json.loads(f.readline())


def split(passages: list[Passage]) -> tuple[list[Passage], list[Passage]]:
    """``(training, held_out)``, by top-level module (:func:`held_out`)."""
    train = [p for p in passages if not held_out(p.module)]
    test = [p for p in passages if held_out(p.module)]
    return train, test


def name_words(name: str) -> str:
    """A qualified name as lower-case words: ``"os.path.getsize"`` -> ``"os path getsize"``,
    ``"logging.StreamHandler.setFormatter"`` -> ``"logging stream handler set formatter"``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", name)
    return " ".join(w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w)


# ----------------------------------------------------------------------------------------------
# Building the snapshot (run once, by a maintainer, with the Python version named in the header)


def first_paragraph(doc: str) -> str:
    """The first paragraph of a docstring, on one line."""
    paragraph = re.split(r"\n\s*\n", inspect.cleandoc(doc).strip(), maxsplit=1)[0]
    return " ".join(paragraph.split())


def _usable(text: str) -> bool:
    """At least four words, and not a bare signature such as ``getattr(object, name) -> value``."""
    return len(text.split()) >= 4 and not re.fullmatch(r"[\w.]+\(.*\)\s*(->.*)?", text)


def _import(name: str):
    """The module, or None when it cannot be imported here; nothing it prints or warns reaches the caller."""
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            return importlib.import_module(name)
    except BaseException:  # ImportError, and whatever else an optional module's import raises
        return None


def _modules(names) -> dict:
    """The public modules among ``names`` and their public submodules, imported."""
    found = {}
    for name in sorted(names):
        if name.startswith("_") or name in _SKIP:
            continue
        module = _import(name)
        if module is None:
            continue
        found[name] = module
        for info in pkgutil.iter_modules(getattr(module, "__path__", []), name + "."):
            parts = info.name.split(".")
            if any(p.startswith("_") or p in _SKIP or p.startswith("test") for p in parts[1:]):
                continue
            sub = _import(info.name)
            if sub is not None:
                found[info.name] = sub
    return found


def _documented(obj) -> str | None:
    doc = getattr(obj, "__doc__", None)
    if not isinstance(doc, str):
        return None
    text = first_paragraph(doc)
    return text if _usable(text) else None


def _shown_name(module: str, qualname: str) -> str:
    top, _, rest = module.partition(".")
    shown = _SHOWN_AS.get(top, top)
    prefix = ".".join(p for p in (shown, rest) if p)
    return f"{prefix}.{qualname}" if prefix else qualname


def collect(names=None) -> list[Passage]:
    """The passages of the modules ``names`` (the standard library's by default), deduplicated, sorted by name.

    Public functions and classes defined in each module (not re-exported from another), and the public
    methods a class defines itself (not inherited), with a usable first paragraph.
    """
    names = sys.stdlib_module_names if names is None else names
    found: dict[str, Passage] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated modules warn when their attributes are read
        for module_name, module in _modules(names).items():
            for attr, obj in sorted(vars(module).items()):
                if attr.startswith("_") or getattr(obj, "__module__", None) != module_name:
                    continue
                if not (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.isbuiltin(obj)):
                    continue
                members = [(attr, obj)]
                if inspect.isclass(obj):
                    for method, member in sorted(vars(obj).items()):
                        member = getattr(member, "__func__", member)  # classmethod, staticmethod
                        if not method.startswith("_") and (inspect.isfunction(member) or inspect.isbuiltin(member)
                                                           or inspect.ismethoddescriptor(member)):
                            members.append((f"{attr}.{method}", member))
                for qualname, member in members:
                    text = _documented(member)
                    if text is not None:
                        top = module_name.split(".")[0]
                        top = _SHOWN_AS.get(top, top) or top  # posix's are os's; builtins stay builtins
                        found.setdefault(_shown_name(module_name, qualname), Passage(
                            _shown_name(module_name, qualname), top, text))
    kept, seen = [], set()
    for name in sorted(found):
        passage = found[name]
        if passage.text not in seen:  # one passage per text: a search has one right answer
            seen.add(passage.text)
            kept.append(passage)
    return kept


def write(path: str | Path = SNAPSHOT, names=None) -> list[Passage]:
    """Collect the passages and store them with a header naming the Python version that made them."""
    passages = collect(names)
    header = {"python": sys.version.split()[0], "command": "python -m encoder_course.measure.docs_corpus --write",
              "licence": LICENCE, "passages": len(passages)}
    lines = [json.dumps(header, ensure_ascii=False)]
    lines += [json.dumps({"name": p.name, "module": p.module, "text": p.text}, ensure_ascii=False) for p in passages]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return passages


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="the standard library's docstrings as a corpus")
    parser.add_argument("--write", action="store_true", help=f"collect them and write {SNAPSHOT.name}")
    parser.add_argument("--out", default=str(SNAPSHOT), help="where to write the snapshot")
    args = parser.parse_args(argv)
    if not args.write:
        info, passages = snapshot_info(), load()
        train, test = split(passages)
        sys.stdout.write(f"{len(passages)} passages from Python {info['python']}: {len(train)} training, "
                         f"{len(test)} held out\n")
        return 0
    passages = write(args.out)
    sys.stdout.write(f"wrote {len(passages)} passages from Python {sys.version.split()[0]} to {args.out}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
