"""The expensive calls of a notebook, recorded in its solution run and replayed in its learner run (tests only).

Outside the exercises, a learner notebook is its solution notebook, cell for cell
(``test_learner_versions.py`` keeps them equal), so the training notebooks' two runs make the same training
calls on the same inputs: the solution run with the parts its exercises saved, the learner run with the course's
reference parts, which the checkers hold equal. Training twice is most of the suite's time; the second time
teaches the suite nothing the first did not.

A kernel started with ``ENCODER_COURSE_REPLAY=record:DIR`` runs each call of :data:`EXPENSIVE` for real and
stores in ``DIR`` a digest of its inputs, its result, the weights of every module it was given if it trains
them in place, and the random generators' states after it. A kernel started with ``replay:DIR`` that
makes the same call, the n-th of that function, on inputs of the same digest, gets all of these back instead
of running it; a call whose inputs differ, or that was never recorded, runs for real. The kernel counts both
in ``replay_counts.json`` (``record_counts.json``) in ``DIR``, which the test reads.

Loaded by the test IPython profile (``ipython_config.py``) when the variable is set; learners never have it.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import inspect
import json
import os
import random
from pathlib import Path

import torch

# (module, function, whether it trains the modules it is given in place: their weights are kept too)
EXPENSIVE = (
    ("encoder_course.measure.training", "train", True),
    ("encoder_course.measure.masked_lm", "pretrain", True),
    ("encoder_course.measure.contrastive", "fine_tune", True),
    ("encoder_course.measure.search", "embed_sorted", False),
    ("encoder_course.measure.modern", "extrapolation", False),
    ("encoder_course.measure.modern", "same_budget", False),
    ("encoder_course.measure.modern", "unpadding_times", False),
    ("encoder_course.measure.modern", "local_attention_times", False),
)
VARIABLE = "ENCODER_COURSE_REPLAY"
COUNTS = "{mode}_counts.json"  # what a kernel recorded, replayed, ran for real, and which calls differed


def _digest(value, h, seen: set) -> None:
    """Feed ``value`` into the hash ``h``: tensors by their bytes, modules by their weights, callables by name."""
    if isinstance(value, torch.Tensor):
        t = value.detach().cpu().contiguous()
        h.update(f"tensor{t.dtype}{tuple(t.shape)}".encode())
        h.update(t.flatten().view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        return
    if isinstance(value, (str, int, float, bool, type(None), bytes)):
        h.update(repr(value).encode())
        return
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, torch.nn.Module):
        h.update(b"module")
        for name, tensor in value.state_dict().items():
            h.update(name.encode())
            _digest(tensor, h, seen)
    elif isinstance(value, (list, tuple)):
        h.update(f"seq{len(value)}".encode())
        for item in value:
            _digest(item, h, seen)
    elif isinstance(value, dict):
        h.update(f"dict{len(value)}".encode())
        for key, item in value.items():
            _digest(key, h, seen)
            _digest(item, h, seen)
    elif inspect.isroutine(value) or inspect.isclass(value) or isinstance(value, functools.partial):
        # A function: the learner's saved part and the course's reference differ in code, not in name or role.
        h.update(f"callable:{getattr(value, '__name__', type(value).__name__)}".encode())
    elif dataclasses.is_dataclass(value):
        h.update(type(value).__name__.encode())
        for field in dataclasses.fields(value):
            _digest(getattr(value, field.name), h, seen)
    elif hasattr(value, "__dict__"):  # a sentence encoder, a vocabulary: their attributes
        h.update(type(value).__name__.encode())
        for key, item in sorted(vars(value).items()):
            h.update(key.encode())
            _digest(item, h, seen)
    else:
        h.update(type(value).__name__.encode())


def _modules(value, seen: set) -> list[torch.nn.Module]:
    """Every module reachable from ``value`` (arguments, a sentence encoder's encoder), outermost first."""
    if id(value) in seen or isinstance(value, (torch.Tensor, str, bytes, int, float)):
        return []
    seen.add(id(value))
    if isinstance(value, torch.nn.Module):
        return [value]
    if isinstance(value, (list, tuple)):
        return [m for item in value for m in _modules(item, seen)]
    if isinstance(value, dict):
        return [m for item in value.values() for m in _modules(item, seen)]
    if hasattr(value, "__dict__") and not (inspect.isroutine(value) or inspect.isclass(value)):
        return [m for item in vars(value).values() for m in _modules(item, seen)]
    return []


class Replay:
    def __init__(self, mode: str, folder: Path):
        self.mode, self.folder = mode, folder
        self.calls: dict[str, int] = {}
        self.counts = {"replayed": 0, "recorded": 0, "ran": 0, "differed": []}
        self.depth = 0  # calls inside a wrapped call (pretrain inside extrapolation) are neither kept nor replayed
        folder.mkdir(parents=True, exist_ok=True)

    def wrap(self, qualified: str, function, trains: bool = True):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            if self.depth:
                return function(*args, **kwargs)
            n = self.calls[qualified] = self.calls.get(qualified, 0) + 1
            h = hashlib.sha256()
            _digest((args, sorted(kwargs.items())), h, set())
            key, file = h.hexdigest(), self.folder / f"{qualified}-{n}.pt"
            modules = _modules((args, kwargs), set()) if trains else []
            if self.mode == "replay" and file.exists():
                stored = torch.load(file, weights_only=False)
                if stored["key"] == key and len(stored["modules"]) == len(modules):
                    for module, (state, modes) in zip(modules, stored["modules"]):
                        module.load_state_dict(state)
                        for sub, training in zip(module.modules(), modes):
                            sub.training = training
                    torch.set_rng_state(stored["torch_rng"])
                    random.setstate(stored["random"])
                    self._count("replayed")
                    return stored["result"]
                self.counts["differed"].append(f"{qualified}-{n}")
            self.depth += 1
            try:
                result = function(*args, **kwargs)
            finally:
                self.depth -= 1
            if self.mode == "record":
                states = [({k: v.detach().clone() for k, v in m.state_dict().items()},
                           [sub.training for sub in m.modules()]) for m in modules]
                torch.save({"key": key, "result": result, "torch_rng": torch.get_rng_state(),
                            "random": random.getstate(), "modules": states}, file)
                self._count("recorded")
            else:
                self._count("ran")
            return result

        return wrapper

    def _count(self, what: str) -> None:
        self.counts[what] += 1
        (self.folder / COUNTS.format(mode=self.mode)).write_text(json.dumps(self.counts))


def install() -> Replay | None:
    """Wrap :data:`EXPENSIVE` in the kernel when ``ENCODER_COURSE_REPLAY`` is ``record:DIR`` or ``replay:DIR``."""
    setting = os.environ.get(VARIABLE)
    if not setting:
        return None
    mode, _, folder = setting.partition(":")
    if mode not in ("record", "replay") or not folder:
        raise ValueError(f"{VARIABLE} must be record:DIR or replay:DIR, got {setting!r}")
    replay = Replay(mode, Path(folder))
    for module_name, name, trains in EXPENSIVE:
        module = importlib.import_module(module_name)
        setattr(module, name, replay.wrap(f"{module_name.rsplit('.', 1)[1]}.{name}", getattr(module, name), trains))
    return replay
