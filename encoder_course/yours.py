"""Your encoder: the exercises you passed, saved as a small package, and an encoder built only from them.

When an exercise's check passes, its code is saved into your **workspace**, a folder of plain Python
files next to the notebooks (``my_encoder/``; the environment variable ``ENCODER_COURSE_WORKSPACE``
names another folder). One file per exercise, and each file imports your own earlier parts: your
``MultiHeadAttention`` calls your ``scaled_dot_product_attention``, your ``EncoderBlock`` uses your
``LayerNorm`` and ``FeedForward``. A later pass overwrites a part; a failing attempt never does.

* :func:`use` gives a notebook your parts where they exist (the course's reference otherwise, said plainly);
* :func:`parts` says which parts are saved and pass their check now;
* :func:`build_encoder` builds your encoder: your ``Encoder`` class (notebook 08), with your ``Embeddings`` and blocks,
  from your saved parts only, with the interface, parameter names and state-dict keys of
  :class:`encoder_course.Encoder`: load all-MiniLM-L6-v2 into it with
  ``pretrained.embed(sentences, encoder=yours.build_encoder(config), pool=..., rename=...)``;
* :func:`save_trained` keeps an encoder you trained (notebook 12) in the workspace, and :func:`load_trained`
  gives it back in one call;
* ``encoder-course progress`` prints the table.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from torch import nn

from .workspace import (
    ENV_VAR,
    PartMissing,
    PartStatus,
    _closure,
    _exercise,
    _exercises,
    _load_package,
    _status,
    workspace_dir,
)

__all__ = ["ENV_VAR", "PartMissing", "PartStatus", "build_encoder", "encoder_parts", "format_progress", "load_trained",
           "modern_parts", "modern_switches", "part", "parts", "progress", "save_trained", "use", "workspace_dir"]


def _judge(key: str, obj):
    """Whether a saved part passes its check now: the checker's verdict (imported when first needed)."""
    from .checks import verdict

    return verdict(key, obj)


def progress(workspace=None) -> list[PartStatus]:
    """Every part, in course order: saved or not, passing its check now or not (and why not)."""
    folder = workspace_dir(workspace)
    return [_status(folder, key, _judge) for key in _exercises()]


def parts(workspace=None) -> dict[str, bool]:
    """Which parts are saved and pass their check now: ``{key: bool}``, in course order."""
    return {row.key: row.saved and row.passing for row in progress(workspace)}


def _get(keys, workspace=None, fallback: bool = False, quiet: bool = True, rows: dict | None = None):
    """``{key: (object, is_yours)}`` for ``keys``; missing or failing parts raise unless ``fallback``.

    ``rows``: :func:`progress`'s rows by key, when the caller has them already.
    """
    folder = workspace_dir(workspace)
    rows = rows if rows is not None else {row.key: row for row in progress(folder)}
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


#: The part that is the whole encoder (notebook 08): its file imports every other part of the encoder.
ENCODER_PART = "encoder_stack"


def encoder_parts(config=None) -> list[str]:
    """The parts your encoder is built from, in course order: the stack and every part it imports.

    For a ``config`` with learned positions, ``sinusoidal_positions`` is left out (it is never called).
    """
    needed = set(_closure([ENCODER_PART]))
    if config is not None and config.positions != "sinusoidal":
        needed.discard("sinusoidal_positions")
    return [key for key in _exercises() if key in needed]


#: The activations notebook 06's exercise asks for: a feed-forward network of yours takes these (the gated ones,
#: SwiGLU and GeGLU, are the course's).
YOUR_ACTIVATIONS = ("relu", "gelu")


def modern_switches(config) -> list[str]:
    """The switches of ``config`` that BERT's design has not (notebook 13): rotary positions, GeGLU, no biases,
    local attention, unpadding. Your classes of notebooks 04, 07 and 08 are BERT's, so an encoder with any of
    these is the course's stack built around your functions and position-wise layers (see :func:`build_encoder`)."""
    return [name for name, on in (("rotary positions", config.positions == "rotary"),
                                  ("GeGLU", config.activation == "geglu"), ("no biases", not config.bias),
                                  ("local attention", config.window > 0), ("unpadding", config.unpad)) if on]


def modern_parts(config) -> list[str]:
    """The parts of yours a modern encoder (:func:`modern_switches`) runs, in course order: your attention, your
    LayerNorm, your feed-forward network (for notebook 06's activations), your positions (sinusoidal table or
    rotation) and your window mask (with local attention)."""
    needed = {"scaled_dot_product_attention", "layer_norm"}
    needed |= {"feed_forward"} if config.activation in YOUR_ACTIVATIONS else set()
    needed |= {"sinusoidal_positions"} if config.positions == "sinusoidal" else set()
    needed |= {"apply_rotary"} if config.positions == "rotary" else set()
    needed |= {"sliding_window_mask"} if config.window else set()
    return [key for key in _exercises() if key in needed]


def _used(key: str, passing: set, wanted: set, built_by_course: bool = True) -> list[str]:
    """The parts that really run when ``key`` is built.

    A part of yours brings the parts its file imports (yours where they pass, the course's reference
    otherwise). A course's class that the course's :class:`~encoder_course.Encoder` builds (the stack when
    yours is missing, and what it holds) is built from the given parts, so it brings them too. A course's
    class imported by a file of yours brings the course's own.
    """
    out = [key]
    if key in passing or built_by_course:
        for sub in _exercise(key).uses:
            if sub in wanted:
                out += [u for u in _used(sub, passing, wanted, key not in passing) if u not in out]
    return out


def build_encoder(config, workspace=None, fallback: bool = False) -> nn.Module:
    """Your encoder for ``config``: your ``Encoder`` class (notebook 08), built from your saved parts only.

    It has :class:`encoder_course.Encoder`'s interface and state-dict keys: ``forward(token_ids, mask=None,
    token_type_ids=None)``, ``embeddings``, ``layers``, ``final_norm``; a checkpoint for ``config`` loads into it.

    Args:
        config: an :class:`~encoder_course.EncoderConfig`.
        workspace: your workspace folder (default: see :func:`workspace_dir`).
        fallback: take the course's reference for parts you have not passed yet (one line per part says which).
            When the stack itself is not yours, the course's :class:`~encoder_course.Encoder` is built from
            your parts (:class:`~encoder_course.encoder.EncoderParts`), step by step: no fused kernel stands in
            for your attention.

    A config with a switch of notebook 13 (:func:`modern_switches`: rotary positions, GeGLU, no biases, local
    attention, unpadding) is built as the course's :class:`~encoder_course.Encoder` around your attention
    function, LayerNorm, feed-forward network (a gated one, SwiGLU or GeGLU, is the course's), positions and
    window mask: your classes of notebooks 04, 07 and 08 take none of those switches.

    Returns:
        the module, with ``yours``: ``{part key: True if it is yours}`` for every part it runs.

    Raises:
        PartMissing: naming each missing or failing part and its notebook (unless ``fallback``).
    """
    from ._validate import require_instance
    from .encoder import Encoder as CourseEncoder
    from .encoder import EncoderConfig, EncoderParts

    require_instance("config", config, EncoderConfig)
    folder = workspace_dir(workspace)
    rows = {row.key: row for row in progress(folder)}
    if modern_switches(config):  # the course's stack, attention and blocks, around your functions and layers
        got = _get(modern_parts(config), folder, fallback=fallback, quiet=not fallback, rows=rows)
        model = CourseEncoder(config.replace(implementation="eager"),
                              EncoderParts(**{key: obj for key, (obj, _) in got.items()}))
        model.yours = {key: is_yours for key, (_, is_yours) in got.items()}
        return model
    wanted = encoder_parts(config)
    passing = {key for key in wanted if rows[key].passing}
    keys = wanted if not fallback else [k for k in wanted if k in _used(ENCODER_PART, passing, set(wanted))]
    got = _get(keys, folder, fallback=fallback, quiet=not fallback, rows=rows)
    stack, stack_is_yours = got[ENCODER_PART]
    if stack_is_yours:  # your Encoder class is the stack: its file imports your other parts
        model = stack(config)
    else:  # the course's stack, built from your parts (their keys are EncoderParts' field names)
        parts = EncoderParts(**{key: obj for key, (obj, _) in got.items() if key != ENCODER_PART})
        model = CourseEncoder(config.replace(implementation="eager"), parts)
    model.yours = {key: is_yours for key, (_, is_yours) in got.items()}
    return model


TRAINED_FOLDER = "trained"  # inside the workspace: the encoders you trained, one folder each


def save_trained(name: str, sentence_encoder, workspace=None) -> Path:
    """Keep an encoder you trained (a ``SentenceEncoder``) in your workspace, as ``trained/<name>/``."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"name must be a plain word such as 'docs_search', got {name!r}")
    return sentence_encoder.save(workspace_dir(workspace) / TRAINED_FOLDER / name)


def load_trained(name: str, workspace=None):
    """The encoder you kept with :func:`save_trained`, rebuilt from your parts (the course's where yours are
    missing) with the weights you trained: one call, in any notebook or session."""
    from .interop.pretrained import SentenceEncoder

    folder = workspace_dir(workspace) / TRAINED_FOLDER / name
    return SentenceEncoder.load(folder, build=lambda config: build_encoder(config, workspace, fallback=True))


def format_progress(rows: list[PartStatus], folder: str | os.PathLike | None = None) -> str:
    """The table ``encoder-course progress`` prints: the folder it read (and whether it exists), a row per
    part, why each saved part fails, and a last line about the whole encoder."""
    lines = []
    if folder is not None:
        folder = Path(folder)
        lines.append(f"Workspace: {folder}" + ("" if folder.is_dir() else
                     " (it does not exist yet: pass an exercise in a notebook, or name your workspace with "
                     "--workspace DIR)"))
    return "\n".join(lines + [_table(rows)])


def _table(rows: list[PartStatus]) -> str:
    header = ("part", "notebook", "saved", "passing")
    body = [(r.name, r.notebook, "yes" if r.saved else "no", "yes" if r.passing else "no") for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip() for row in [header, *body]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for r in rows:
        if r.problem and r.saved:
            lines.append(f"  {r.name}: {r.problem}")
    done = sum(r.passing for r in rows)
    encoder_keys = set(encoder_parts())  # the stack (notebook 08) and every part it imports
    encoder_done = all(r.passing for r in rows if r.key in encoder_keys)
    lines.append(f"{done} of {len(rows)} parts are yours and pass their checks. "
                 + ("The whole encoder is yours: yours.build_encoder(config) builds it from your parts only."
                    if encoder_done else "The encoder is not all yours yet: the parts marked 'no' come from the "
                    "course's reference (yours.build_encoder(config, fallback=True))."))
    return "\n".join(lines)
