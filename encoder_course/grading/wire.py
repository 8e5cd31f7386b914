"""The plain data that passes between the checker and the learner's process when a notebook is graded.

A message is a 4-byte length and a JSON text. Values are ``None``, booleans, numbers, strings, lists and
tagged objects: ``{"$d": [[key, value], ...]}`` (a dict), ``{"$tuple": [...]}``, ``{"$t": [dtype, shape,
base64 bytes, requires_grad, subclass name]}`` (a dense CPU tensor), ``{"$ref": i}`` (the i-th tensor of
the message again), ``{"$dc": [class path, fields]}`` (one of ``DATACLASSES``), ``{"$np": [dtype, value]}``
(a NumPy scalar), ``{"$gen": 0}`` (a generator), ``{"$rng": state}`` (a CPU ``torch.Generator``: a copy with
its state; drawing from it does not advance the sender's), ``{"$other": [type name, module name]}`` (anything else).
Nothing is unpickled: ``decode`` checks each message's size and depth, each tensor's dtype, shape and
bytes, and refuses anything else with :class:`Malformed`. ``describe`` and ``apply`` carry a module's state.
"""

from __future__ import annotations

import base64
import dataclasses
import importlib
import inspect
import json
import math
import os

import torch

MAX_BYTES = 32 * 1024 * 1024
MAX_DEPTH = 32
MAX_ELEMENTS = 4_000_000
MAX_VALUES = 1_000_000  # JSON values in one message: 32 MB of "[]," would make 10 million lists (GBs)
DTYPES = {str(d).removeprefix("torch."): d for d in (
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.uint8, torch.int8, torch.int16,
    torch.int32, torch.int64, torch.bool)}


#: The course's dataclasses that cross (a checker passes an EncoderConfig to ``parameter_count``).
DATACLASSES = ("encoder_course.encoder:EncoderConfig",)


class Malformed(ValueError):
    """A message that is not what the protocol allows (its text says what)."""


# ----------------------------------------------------------------------------------------------
# Values


def encode(value, memo=None, depth=0):
    """``value`` as JSON-ready plain data (tensors as bytes, unknown objects as their type's name)."""
    memo = {} if memo is None else memo
    if depth > MAX_DEPTH:
        raise Malformed("a value nested too deeply")
    if value is None or isinstance(value, (bool, str)) or type(value) in (int, float):
        return value
    if isinstance(value, torch.Tensor):
        if id(value) in memo:
            return {"$ref": memo[id(value)]}
        memo[id(value)] = len(memo)
        return {"$t": _tensor(value)}
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return {"$tuple": [encode(v, memo, depth + 1) for v in value]}
    if type(value) is list:
        return [encode(v, memo, depth + 1) for v in value]
    if type(value) is dict and all(isinstance(k, str) for k in value):
        return {"$d": [[k, encode(v, memo, depth + 1)] for k, v in value.items()]}
    path = f"{type(value).__module__}:{type(value).__qualname__}"
    if path in DATACLASSES and dataclasses.is_dataclass(value):
        fields = {f.name: encode(getattr(value, f.name), memo, depth + 1) for f in dataclasses.fields(value)}
        return {"$dc": [path, fields]}
    if inspect.isgenerator(value):
        return {"$gen": 0}
    if type(value) is torch.Generator and value.device.type == "cpu":
        return {"$rng": _tensor(value.get_state())}
    if type(value).__module__ == "numpy" and hasattr(value, "dtype") and getattr(value, "shape", None) == () \
            and value.dtype.kind in "biuf":  # a NumPy scalar (np.int64(3)): its dtype and value
        return {"$np": [str(value.dtype), value.item()]}
    kind = type(value)
    return {"$other": [str(getattr(kind, "__name__", "object"))[:80], str(getattr(kind, "__module__", ""))[:80]]}


def _tensor(t: torch.Tensor) -> list:
    subclass = "" if type(t) in (torch.Tensor, torch.nn.Parameter) else type(t).__name__[:80]
    name = str(t.dtype).removeprefix("torch.")
    if name not in DTYPES or t.layout != torch.strided or t.device.type != "cpu" or t.is_quantized:
        raise Malformed(f"a tensor of dtype {t.dtype} on {t.device} cannot be sent")
    if t.numel() > MAX_ELEMENTS:
        raise Malformed(f"a tensor of {t.numel()} elements (at most {MAX_ELEMENTS})")
    plain = torch.Tensor.as_subclass(t, torch.Tensor).detach().contiguous().reshape(-1)
    raw = plain.view(torch.uint8).numpy().tobytes() if plain.numel() else b""
    return [name, list(t.shape), base64.b64encode(raw).decode("ascii"), bool(t.requires_grad), subclass]


def decode(data, refs=None, depth=0):
    """The value plain data stands for, checked; raises :class:`Malformed`."""
    refs = [] if refs is None else refs
    if depth > MAX_DEPTH:
        raise Malformed("a value nested too deeply")
    if data is None or type(data) in (bool, int, float, str):
        return data
    if type(data) is list:
        return [decode(v, refs, depth + 1) for v in data]
    if type(data) is not dict or len(data) != 1:
        raise Malformed("an object the protocol does not know")
    (tag, body), = data.items()
    if tag == "$t":
        t = _untensor(body)
        refs.append(t)
        return t
    if tag == "$ref":
        if type(body) is not int or not 0 <= body < len(refs):
            raise Malformed("a reference to no tensor")
        return refs[body]
    if tag == "$tuple" and type(body) is list:
        return tuple(decode(v, refs, depth + 1) for v in body)
    if tag == "$d" and type(body) is list:
        out = {}
        for pair in body:
            if type(pair) is not list or len(pair) != 2 or type(pair[0]) is not str:
                raise Malformed("a dict entry that is not a [key, value] pair")
            out[pair[0]] = decode(pair[1], refs, depth + 1)
        return out
    if tag == "$dc" and type(body) is list and len(body) == 2 and type(body[0]) is str and type(body[1]) is dict:
        if body[0] not in DATACLASSES:
            raise Malformed("a dataclass that is not one of the course's configs")
        module, _, qualname = body[0].partition(":")
        kind = getattr(importlib.import_module(module), qualname)
        return kind(**{k: decode(v, refs, depth + 1) for k, v in body[1].items()})
    if tag == "$np" and type(body) is list and len(body) == 2 and type(body[0]) is str \
            and type(body[1]) in (bool, int, float):
        import numpy

        try:
            kind = numpy.dtype(body[0])
        except TypeError:
            raise Malformed("a NumPy scalar of an unknown dtype") from None
        if kind.kind not in "biuf":
            raise Malformed("a NumPy scalar of an unknown dtype")
        return kind.type(body[1])
    if tag == "$gen":
        return (x for x in ())
    if tag == "$rng":
        state = _untensor(body)
        generator = torch.Generator()
        if state.dtype != torch.uint8 or state.shape != generator.get_state().shape:
            raise Malformed("a random generator whose state is not a CPU generator's")
        try:
            return generator.set_state(state)
        except RuntimeError:
            raise Malformed("a random generator whose state is not a CPU generator's") from None
    if tag == "$other" and type(body) is list and len(body) == 2 and all(type(b) is str for b in body):
        return opaque(*body)
    raise Malformed("an object the protocol does not know")


def _untensor(body) -> torch.Tensor:
    if type(body) is not list or len(body) != 5:
        raise Malformed("a tensor that is not [dtype, shape, bytes, requires_grad, subclass]")
    name, shape, raw, grad, subclass = body
    if name not in DTYPES or type(shape) is not list or len(shape) > 8 \
            or not all(type(s) is int and 0 <= s <= MAX_ELEMENTS for s in shape) or type(raw) is not str:
        raise Malformed("a tensor with a dtype or shape the protocol does not allow")
    dtype = DTYPES[name]
    count = math.prod(shape)
    if count > MAX_ELEMENTS:
        raise Malformed(f"a tensor of {count} elements (at most {MAX_ELEMENTS})")
    try:
        data = base64.b64decode(raw.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise Malformed("a tensor whose bytes are not base64") from None
    size = torch.empty((), dtype=dtype).element_size()
    if len(data) != count * size:
        raise Malformed(f"a tensor of shape {tuple(shape)} with {len(data)} bytes")
    if dtype == torch.bool and data.strip(b"\x00\x01"):
        raise Malformed("a bool tensor with values other than 0 and 1")
    flat = torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)
    t = flat.view(dtype).reshape(shape).clone()
    if type(subclass) is str and subclass:  # a stand-in: only its name matters (the checkers refuse subclasses)
        t = t.as_subclass(type(subclass if subclass.isidentifier() else "TensorSubclass", (torch.Tensor,), {}))
    if grad is True and t.is_floating_point():
        t.requires_grad_(True)
    return t


def describe(module) -> list:
    """A module as plain data (the learner's, for the checker; the checker's mirror of it, back): every
    submodule's path, class name, mode, parameters, buffers, tensor and plain attributes."""
    tree, first = [], {}
    for path, sub in module.named_modules(remove_duplicate=False):
        if id(sub) in first:  # one module under a second name (self.b = self.a): an alias, not a copy
            tree.append({"path": path, "alias": first[id(sub)]})
            continue
        first[id(sub)] = path
        plain = {k: v for k, v in list(vars(sub).items())[:200]
                 if not k.startswith("_") and (v is None or type(v) in (bool, int, float, str))}
        tree.append({
            "path": path, "type": type(sub).__name__[:80], "training": bool(sub.training),
            "params": [[k, v] for k, v in sub._parameters.items()],  # None too: nn.Linear(bias=False)
            "buffers": [[k, v, k not in sub._non_persistent_buffers_set] for k, v in sub._buffers.items()
                        if v is not None],
            "tensors": [[k, v] for k, v in vars(sub).items() if type(v) is torch.Tensor],
            "attrs": plain,
        })
    return tree


def apply(module, tree) -> list:
    """Bring ``module`` in step with a described one (the learner's module with the checker's mirror of
    it, and back): modes, values (in place where they fit), what forward stored, tied parameters kept
    tied. Returns its parameters in the tree's order."""
    subs, shared, params = dict(module.named_modules()), {}, []
    with torch.no_grad():
        for entry in tree:
            m = subs.get(entry["path"])
            if m is None or "alias" in entry:
                continue
            m.training = bool(entry["training"])
            for name, value in entry["params"]:
                if value is None:
                    m._parameters[name] = None
                    continue
                if id(value) not in shared:  # (a tied parameter is one tensor, sent once)
                    old = m._parameters.get(name)
                    if isinstance(old, torch.nn.Parameter) and old.shape == value.shape and old.dtype == value.dtype:
                        old.copy_(value)
                        old.requires_grad_(value.requires_grad)
                    else:
                        old = torch.nn.Parameter(value.detach(), requires_grad=value.requires_grad)
                    shared[id(value)] = old
                m._parameters[name] = shared[id(value)]
                params.append(shared[id(value)])
            for name, value, persistent in entry["buffers"]:
                m._buffers[name] = value.detach()
                (m._non_persistent_buffers_set.discard if persistent else m._non_persistent_buffers_set.add)(name)
            for name, value in entry["tensors"]:
                if isinstance(name, str) and not name.startswith("_"):
                    m.__dict__[name] = value.detach()
            for name, value in entry["attrs"].items():
                if isinstance(name, str) and not name.startswith("_") and name != "training" \
                        and not hasattr(type(m), name) and name not in m._modules:
                    m.__dict__[name] = value
    return params


def opaque(type_name: str, module: str):
    """A stand-in with the type name (and module) of an object that cannot be sent."""
    safe = type_name if type_name.isidentifier() else "object"
    return type(safe, (), {"__module__": module or "builtins", "__repr__": lambda self: f"<{safe}>"})()


# ----------------------------------------------------------------------------------------------
# Messages: a 4-byte length, then JSON


def send(fd: int, message: dict) -> None:
    data = json.dumps(message, allow_nan=True).encode("utf-8", "surrogatepass")
    if len(data) > MAX_BYTES:
        raise Malformed(f"a message of {len(data)} bytes (at most {MAX_BYTES})")
    data = len(data).to_bytes(4, "big") + data
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def receive(fd: int):
    """The next message on ``fd`` (JSON data, for ``decode``); :class:`EOFError` when it is closed,
    :class:`Malformed` when it is not JSON text."""
    size = int.from_bytes(_exactly(fd, 4), "big")
    if size > MAX_BYTES:
        raise Malformed(f"a message announced as {size} bytes (at most {MAX_BYTES})")
    data = _exactly(fd, size)
    # Counted before parsing, so the checker's side never builds what it will refuse: each value after the
    # first follows a comma or opens a list or an object (commas inside strings only make the count larger).
    values = data.count(b",") + data.count(b"[") + data.count(b"{")
    if values > MAX_VALUES:
        raise Malformed(f"a message of more than {MAX_VALUES:,} values")
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise Malformed("a message that is not JSON text") from None


def _exactly(fd: int, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise EOFError("the other side closed the channel")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
