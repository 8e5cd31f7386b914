"""Your encoder: the exercises you passed, saved as a small package, and an encoder built only from them.

When an exercise's check passes, its code is saved into your **workspace**, a folder of plain Python
files next to the notebooks (``my_encoder/``; the environment variable ``ENCODER_COURSE_WORKSPACE``
names another folder). One file per exercise, and each file imports your own earlier parts: your
``MultiHeadAttention`` calls your ``scaled_dot_product_attention``, your ``EncoderBlock`` uses your
``LayerNorm`` and ``FeedForward``. A later pass overwrites a part; a failing attempt never does.

* :func:`use` gives a notebook your parts where they exist (the course's reference otherwise, said plainly);
* :func:`parts` says which parts are saved and pass their check now;
* :class:`Encoder` is an encoder with the interface, parameter names and state-dict keys of
  :class:`encoder_course.Encoder`, built only from your parts: load all-MiniLM-L6-v2 into it with
  ``pretrained.embed(sentences, encoder=yours.Encoder(config), pool=..., rename=...)``;
* ``encoder-course progress`` prints the table.
"""

from __future__ import annotations

import ast
import datetime
import hashlib
import importlib
import importlib.util
import inspect
import json
import linecache
import math
import os
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from . import __version__
from ._validate import encoder_mask, require_length, require_same_shape, require_token_ids

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
    """Your workspace folder: ``workspace``, else ``$ENCODER_COURSE_WORKSPACE``, else ``./my_encoder``."""
    if workspace is not None:
        return Path(workspace)
    return Path(os.environ.get(ENV_VAR) or Path.cwd() / DEFAULT_FOLDER)


def _exercises():
    from .checks import EXERCISES

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


def source_of_answer(obj) -> tuple[str, list[str]]:
    """The definition of a learner's function or class, and the imports of its cell that it uses."""
    lines = _cell_lines(obj)
    text = "".join(lines)
    tree = ast.parse(text)
    name = obj.__name__
    definition, node_of_definition = None, None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            definition, node_of_definition = "".join(lines[start - 1:node.end_lineno]), node
    if definition is None:
        return textwrap.dedent(inspect.getsource(obj)), []
    used = {n.id for n in ast.walk(node_of_definition) if isinstance(n, ast.Name)}
    imports = []
    for node in tree.body:  # the cell's own imports, where the definition uses a name they bind
        if isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, "level", 0):
            bound = {(alias.asname or alias.name).split(".")[0] for alias in node.names}
            if bound & used:
                imports.append(ast.get_source_segment(text, node))
    return definition, imports


def render_part(key: str, candidate) -> str:
    """The text of the workspace file for a passing answer: header, imports of earlier parts, the code."""
    ex = _exercise(key)
    definition, imports = source_of_answer(candidate)
    when = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    text = _HEADER.format(name=ex.name, notebook=ex.notebook, when=when)
    if imports:
        text += "\n" + "\n".join(imports) + "\n"
    uses = [_exercise(u) for u in ex.uses]
    if uses:
        text += "\n# your own earlier parts\n" + "".join(
            f"from .{u.key} import {u.name}\n" for u in uses)
    return text + "\n\n" + definition.rstrip() + "\n"


def save_part(key: str, candidate, workspace=None, verify=None) -> Path:
    """Save a passing answer as ``<workspace>/<key>.py``, if the saved file works on its own.

    The file is written, imported as part of the workspace package and, if ``verify`` is given,
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
        ready = {u for u in _closure(ex.uses) if _status(folder, u).passing}
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


def _passes_now(folder: Path, key: str, module) -> bool:
    """Does the saved part pass its check now? (Cached by the file's content and the course version.)"""
    if _stamps(folder).get(key) == _hash(folder, key):
        return True
    from .checks import verdict

    ex = _exercise(key)
    ok = verdict(key, getattr(module, ex.name, None)).status == "passed"
    if ok:
        _write_stamp(folder, key)
    return ok


@dataclass
class PartStatus:
    """One row of :func:`progress`."""

    key: str
    name: str
    notebook: str
    saved: bool
    passing: bool
    problem: str = ""


def _status(folder: Path, key: str) -> PartStatus:
    ex = _exercise(key)
    saved = (folder / f"{key}.py").exists()
    passing, problem = False, "" if saved else f"not saved yet: pass the exercise in notebook {ex.notebook}"
    if saved:
        try:
            ready = {u for u in _closure(ex.uses) if _status(folder, u).passing}
            module = _load_package(folder, [key], fallback=set(_closure(ex.uses)) - ready).get(key)
            passing = _passes_now(folder, key, module)
            problem = "" if passing else "saved, but it does not pass its check now"
        except Exception as exc:  # a file the learner edited by hand, say
            problem = f"saved, but it does not import: {type(exc).__name__}: {exc}"
    return PartStatus(key, ex.name, ex.notebook, saved, passing, problem)


def progress(workspace=None) -> list[PartStatus]:
    """Every part, in course order: saved or not, passing its check now or not (and why not)."""
    folder = workspace_dir(workspace)
    return [_status(folder, key) for key in _exercises()]


def parts(workspace=None) -> dict[str, bool]:
    """Which parts are saved and pass their check now: ``{key: bool}``, in course order."""
    return {row.key: row.saved and row.passing for row in progress(workspace)}


def _get(keys, workspace=None, fallback: bool = False, quiet: bool = True):
    """``{key: (object, is_yours)}`` for ``keys``; missing or failing parts raise unless ``fallback``."""
    folder = workspace_dir(workspace)
    rows = {row.key: row for row in progress(folder)}
    missing = {key for key, row in rows.items() if not row.passing}
    wanted_missing = [key for key in keys if key in missing]
    if wanted_missing and not fallback:
        lines = [f"  {rows[k].name} (notebook {rows[k].notebook}): {rows[k].problem}" for k in wanted_missing]
        raise PartMissing("your encoder is missing parts:\n" + "\n".join(lines)
                          + "\nPass those exercises (or use fallback=True to take the course's reference for them).")
    modules = _load_package(folder, keys, fallback=missing)
    out = {}
    for key in keys:
        ex = _exercise(key)
        out[key] = (getattr(modules[key], ex.name), key not in missing)
        if not quiet:
            where = (f"yours (saved from notebook {ex.notebook})" if key not in missing else
                     f"the course's reference: yours is {rows[key].problem.split(':')[0]}")
            sys.stdout.write(f"{ex.name}: {where}\n")
    return out


def use(*keys, workspace=None):
    """Your own parts for a notebook to use, or the course's reference where yours is not ready.

    Prints one line per part saying which one is used. Returns one object, or a tuple for several keys.
    """
    got = _get(keys, workspace, fallback=True, quiet=False)
    objects = tuple(got[key][0] for key in keys)
    return objects[0] if len(objects) == 1 else objects


def part(key: str, workspace=None):
    """Your saved part ``key`` (raises :class:`PartMissing` when it is missing or failing)."""
    return _get([key], workspace)[key][0]


# ----------------------------------------------------------------------------------------------
# An encoder from your parts


class _Table(nn.Module):
    """A learned table of position vectors, so the parameter is named ``position.weight``."""

    def __init__(self, rows: int, width: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(rows, width) * 0.02)


class Encoder(nn.Module):
    """An encoder with :class:`encoder_course.Encoder`'s interface and state-dict keys, from your parts.

    Args:
        config: an :class:`~encoder_course.EncoderConfig`.
        workspace: your workspace folder (default: see :func:`workspace_dir`).
        fallback: take the course's reference for parts you have not passed yet (and say which).

    Attributes:
        yours: ``{part key: True if it is yours}`` for every part this encoder uses.

    Raises:
        PartMissing: naming each missing or failing part and its notebook (unless ``fallback``).
    """

    def __init__(self, config, workspace=None, fallback: bool = False):
        super().__init__()
        from .encoder import EncoderConfig

        if not isinstance(config, EncoderConfig):
            raise TypeError(f"config must be an EncoderConfig, got {type(config).__name__}")
        keys = ["scaled_dot_product_attention", "multi_head_attention", "layer_norm", "feed_forward",
                "encoder_block"]
        if config.positions == "sinusoidal":
            keys.insert(0, "sinusoidal_positions")
        got = _get(keys, workspace, fallback=fallback, quiet=not fallback)
        self.yours = {key: is_yours for key, (_, is_yours) in got.items()}
        layer_norm, block = got["layer_norm"][0], got["encoder_block"][0]
        self.config = config
        self.embeddings = nn.Module()
        self.embeddings.token = nn.Embedding(config.vocab_size, config.d_model)
        if config.scale_embeddings:  # as encoder_course.Encoder: the table that goes with the sqrt(d_model) factor
            nn.init.normal_(self.embeddings.token.weight, std=config.d_model ** -0.5)
        if config.positions == "sinusoidal":
            table = got["sinusoidal_positions"][0](config.max_len, config.d_model)  # (max_len, d_model)
            self.embeddings.register_buffer("sinusoid", table, persistent=False)
        else:
            self.embeddings.position = _Table(config.max_len, config.d_model)
        if config.type_vocab_size:
            self.embeddings.token_type = nn.Embedding(config.type_vocab_size, config.d_model)
        if config.embedding_norm:
            self.embeddings.norm = layer_norm(config.d_model, eps=config.eps)
        self.embeddings.dropout = nn.Dropout(config.dropout)
        self.layers = nn.ModuleList(
            block(config.d_model, config.n_heads, config.d_ff, dropout=config.dropout,
                  norm_first=config.norm_first, activation=config.activation, eps=config.eps)
            for _ in range(config.n_layers))
        self.final_norm = layer_norm(config.d_model, eps=config.eps) if config.norm_first else None

    def embed(self, token_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Token vectors + positions (+ token types), normalised if the config says so, then dropout."""
        cfg, emb = self.config, self.embeddings
        require_token_ids("token_ids", token_ids, cfg.vocab_size)
        length = token_ids.shape[1]
        require_length(length, cfg.max_len)
        x = emb.token(token_ids.long())  # (B, L, d_model)
        if cfg.scale_embeddings:
            x = x * math.sqrt(cfg.d_model)
        x = x + (emb.sinusoid[:length].to(x.dtype) if cfg.positions == "sinusoidal" else emb.position.weight[:length])
        if cfg.type_vocab_size:
            if token_type_ids is None:
                token_type_ids = torch.zeros_like(token_ids)
            require_token_ids("token_type_ids", token_type_ids, cfg.type_vocab_size)
            require_same_shape("token_type_ids", token_type_ids, "token_ids", token_ids)
            x = x + emb.token_type(token_type_ids.long())  # (B, L, d_model)
        if cfg.embedding_norm:
            x = emb.norm(x)
        return emb.dropout(x)

    def forward(self, token_ids: torch.Tensor, mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Encode ``token_ids`` ``(B, L)``; ``mask`` as for :class:`encoder_course.Encoder`."""
        x = self.embed(token_ids, token_type_ids)  # (B, L, d_model)
        mask = encoder_mask(mask, token_ids.shape[0], self.config.n_heads, token_ids.shape[1])
        for layer in self.layers:
            x = layer(x, mask)  # (B, L, d_model)
        return x if self.final_norm is None else self.final_norm(x)


def format_progress(rows: list[PartStatus]) -> str:
    """The table ``encoder-course progress`` prints, with a last line about the whole encoder."""
    header = ("part", "notebook", "saved", "passing")
    body = [(r.name, r.notebook, "yes" if r.saved else "no", "yes" if r.passing else "no") for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip() for row in [header, *body]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for r in rows:
        if r.problem and r.saved:
            lines.append(f"  {r.name}: {r.problem}")
    done = sum(r.passing for r in rows)
    encoder_keys = {"sinusoidal_positions", "scaled_dot_product_attention", "multi_head_attention", "layer_norm",
                    "feed_forward", "encoder_block"}
    encoder_done = all(r.passing for r in rows if r.key in encoder_keys)
    lines.append(f"{done} of {len(rows)} parts are yours and pass their checks. "
                 + ("The whole encoder is yours: yours.Encoder(config) builds it from your parts only."
                    if encoder_done else "The encoder is not all yours yet: the parts marked 'no' come from the "
                    "course's reference (yours.Encoder(config, fallback=True))."))
    return "\n".join(lines)
