"""The learner's answer as the checker sees it when grading: stand-ins that reach it only through plain data.

``candidate(channel, hello)`` gives the checker a function, a class or a module that behaves like the
learner's own: a call sends the arguments to the learner's process (``worker.py``) and turns the reply
back into tensors, numbers and exceptions. A built module is a :class:`Mirror`, a real ``nn.Module`` kept
in step with the learner's at every call; gradients flow through :class:`_Link`, whose backward asks the
learner's process; arguments changed in place and the random state come back. Anything that does not fit
raises :class:`Lost`, which ends the check of that exercise (a ``BaseException``: no checker's ``except
Exception`` takes it for a learner's mistake).
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import sys

import torch

from . import wire


class Lost(BaseException):
    """The learner's process cannot be checked further: it ended, or sent something unreadable."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status, self.message = status, message


class Channel:
    """Requests to the learner's process and its replies, one at a time."""

    def __init__(self, request_fd: int, reply_fd: int):
        self.request_fd, self.reply_fd, self.counter = request_fd, reply_fd, 0

    def receive(self) -> dict:
        try:
            reply = wire.decode(wire.receive(self.reply_fd))
        except EOFError:
            raise Lost("error", "the submission's process ended while it was being checked (its own code "
                                "exited or was killed)") from None
        except (wire.Malformed, TypeError, ValueError) as exc:
            raise Lost("failed", "the submission's process sent the checker something that is not an answer "
                                 f"({exc}): only the course's code may write on the checker's channel") from None
        if type(reply) is not dict:
            raise Lost("failed", "the submission's process sent the checker something that is not an answer")
        return reply

    def ask(self, request: dict) -> dict:
        self.counter += 1
        request["id"] = self.counter
        try:
            wire.send(self.request_fd, wire.encode(request))
        except OSError:
            raise Lost("error", "the submission's process ended while it was being checked") from None
        reply = self.receive()
        if "problem" in reply:
            raise Lost("failed", f"the submission's process could not answer: {str(reply['problem'])[:200]}")
        return reply


def candidate(channel: Channel, hello: dict):
    """What the checker is given in place of the learner's object."""
    kind = hello.get("kind")
    if kind in ("function", "class"):
        return Remote(channel, str(hello.get("name") or "candidate"), _signature(hello.get("signature")))
    if kind == "module" and isinstance(hello.get("module"), list):
        handle, tree = hello["module"]
        return mirror(channel, handle, tree)
    return wire.opaque(str(hello.get("type") or "object"), "")


def _signature(params):
    """The learner's signature, rebuilt from [name, kind, [default]] triples (None when it cannot be)."""
    import inspect

    try:
        return inspect.Signature([inspect.Parameter(name, inspect._ParameterKind(kind),
                                                    default=default[0] if default else inspect.Parameter.empty)
                                  for name, kind, default in params])
    except (TypeError, ValueError):
        return None


class Remote:
    """The learner's function or class: calling it calls theirs."""

    runs_elsewhere = True  # the reference is withheld over there (withhold.py), and locked while it answers

    def __init__(self, channel: Channel, name: str, signature=None):
        self.__name__ = self.__qualname__ = name
        self._channel = channel
        if signature is not None:
            self.__signature__ = signature

    def __call__(self, *args, **kwargs):
        return call(self._channel, None, None, args, kwargs)

    def __repr__(self):
        return f"<{self.__name__} (in the submission's process)>"


# ----------------------------------------------------------------------------------------------
# Calls


def call(channel: Channel, target, root, args, kwargs):
    """Call the learner's object (``target``: None, or [module handle, submodule path]) with ``args``."""
    recorder = next((m for m in torch.overrides._get_current_function_mode_stack()
                     if getattr(m, "records_learner_ops", False)), None)
    # (with a recorder, torch functions are off here: it hears the learner's operations, not these)
    with torch._C.DisableTorchFunction() if recorder is not None else contextlib.nullcontext():
        state = wire.describe(root) if root is not None else []
        params = [v for entry in state for _, v in entry.get("params", ()) if v is not None]
        grad = torch.is_grad_enabled()
        reply = channel.ask({"op": "call", "target": target, "state": state, "args": list(args), "kwargs": dict(kwargs),
                             "grad": grad, "rng": torch.get_rng_state(), "record": recorder is not None})
        try:
            printed = reply.get("printed", "")
            if printed and isinstance(printed, str):
                sys.stdout.write(printed)
            rng = reply.get("rng")
            if isinstance(rng, torch.Tensor) and rng.dtype == torch.uint8 and rng.shape == torch.get_rng_state().shape:
                torch.set_rng_state(rng)
            inputs = [a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor)]
            for index, value in reply.get("changed", []):
                if type(index) is not int or not 0 <= index < len(inputs):
                    raise IndexError("an argument that was not given")
                with torch.no_grad():
                    inputs[index].data = value.detach().to(inputs[index].dtype)
            if root is not None and "state" in reply:
                wire.apply(root, reply["state"])
            kept = channel.__dict__.setdefault("returned", {})  # number -> a tensor this side was given back
            for number, value in reply.get("earlier", []):
                if number in kept:  # the learner's code changed a tensor it returned before: so does its copy
                    with torch.no_grad():
                        kept[number].data = value.detach().to(kept[number].dtype)
            if recorder is not None:
                for op, outs, ins in reply.get("ops", []):
                    recorder.ops.append((str(op), [tuple(int(n) for n in shape) for shape in outs],
                                         [tuple(int(n) for n in shape) for shape in ins]))
        except (TypeError, ValueError, IndexError, KeyError, AttributeError, RuntimeError) as exc:
            raise Lost("failed", f"the submission's process sent the checker a reply it cannot use ({exc})") from None
        if "error" in reply:
            raise _error(reply["error"], reply.get("used", ""))
        if "module" in reply:
            handle, tree = reply["module"]
            return mirror(channel, handle, tree)
        value = reply.get("value")
        flags = reply.get("grad_outputs")
        if not grad or not isinstance(flags, list):
            return _kept(channel, reply, value)
        leaves = [t for t in inputs if t.requires_grad] + [p for p in params if p.requires_grad]
        outs = list(value) if isinstance(value, (tuple, list)) else [value]
        if len(flags) != len(outs) or not all(isinstance(o, torch.Tensor) for o, f in zip(outs, flags) if f):
            raise Lost("failed", "the submission's process sent the checker a reply it cannot use (gradients)")
        linked = iter(_Link.apply({"channel": channel, "id": channel.counter, "leaves": leaves, "flags": flags,
                                   "outs": [o for o, f in zip(outs, flags) if f]}, *leaves))
        outs = [next(linked) if f else o for o, f in zip(outs, flags)]
        return _kept(channel, reply, outs[0] if not isinstance(value, (tuple, list)) else type(value)(outs))


def _kept(channel: Channel, reply: dict, value):
    """``value`` (the call's result here), its tensors remembered by the numbers the learner's process gave them."""
    outs = value if isinstance(value, (tuple, list)) else (value,)
    numbers = reply.get("returned")
    kept = channel.__dict__.setdefault("returned", {})
    if isinstance(numbers, list) and len(numbers) == len(outs):
        for number, out in zip(numbers, outs):
            if type(number) is int and isinstance(out, torch.Tensor):
                kept[number] = out
        for old in list(kept)[:-8]:
            del kept[old]
    return value


class _Link(torch.autograd.Function):
    """Joins a remote call's outputs to its inputs and parameters here; backward asks the learner's process."""

    @staticmethod
    def forward(ctx, info, *leaves):
        ctx.info = info
        return tuple(o.detach().clone() for o in info["outs"])

    @staticmethod
    def backward(ctx, *grads):
        info = ctx.info
        grads = [g if g is not None else torch.zeros_like(o) for g, o in zip(grads, info["outs"])]
        reply = info["channel"].ask({"op": "backward", "call": info["id"], "grads": grads})
        if "error" in reply:
            error = reply["error"] if isinstance(reply["error"], dict) else {}
            raise RuntimeError(str(error.get("message", "the backward pass failed"))[:2000])
        got = reply.get("grads")
        leaves = info["leaves"]
        if not isinstance(got, list) or len(got) != len(leaves) or not all(
                g is None or (isinstance(g, torch.Tensor) and g.shape == leaf.shape) for g, leaf in zip(got, leaves)):
            raise Lost("failed", "the submission's process sent the checker gradients it cannot use")
        return (None, *[None if g is None else g.to(leaf.dtype) for g, leaf in zip(got, leaves)])


def _error(error, used: str) -> BaseException:
    """The learner's exception, rebuilt: same class name, same built-in base, same text."""
    from encoder_course.checks import _run, _timer

    if not isinstance(error, dict):
        return Lost("failed", "the submission's process sent the checker an error it cannot read")
    if error.get("reference"):
        _run._LOCK.used = str(used) or None
        return _run._UsedReference()
    if error.get("timeout"):
        timeout = _timer.Timeout()
        timeout.waited = bool(error.get("waited"))
        return timeout
    name, message = str(error.get("type", "Exception")), str(error.get("message", ""))
    bases = [getattr(builtins, b, None) for b in error.get("bases", []) if isinstance(b, str)]
    base = next((b for b in bases if isinstance(b, type) and issubclass(b, Exception)), Exception)
    if base is NotImplementedError or name == "NotImplementedError":
        return NotImplementedError(message)
    args = error.get("args")
    if name == base.__name__ and isinstance(args, list):  # a built-in exception: itself, with its arguments
        return base(*args)
    kind = type(name if name.isidentifier() else "Exception", (base,), {"__str__": lambda self: message})
    return kind(message)


# ----------------------------------------------------------------------------------------------
# Mirrors of the learner's modules


class Mirror(torch.nn.Module):
    """A learner's module, seen from the checker: its state lives here, its forward in the learner's process."""

    runs_elsewhere = True

    def forward(self, *args, **kwargs):
        channel, handle, path, root = self.__dict__["_remote"]
        return call(channel, [handle, path], root(), args, kwargs)


@functools.cache
def _mirror_class(name: str) -> type:
    return type(name if name.isidentifier() else "Module", (Mirror,), {"__module__": "submission"})


def mirror(channel: Channel, handle: int, tree) -> Mirror:
    import weakref

    try:
        modules = {}
        for entry in tree:
            path = entry["path"]
            if "alias" in entry:  # the same module under a second name, as in the learner's
                parent, _, name = path.rpartition(".")
                modules[parent]._modules[name] = modules[path] = modules[str(entry["alias"])]
                continue
            m = _mirror_class(str(entry["type"]))()
            modules[path] = m
            root_ref = weakref.ref(modules[""]) if path else weakref.ref(m)
            m.__dict__["_remote"] = (channel, handle, path, root_ref)
            if path:
                parent, _, name = path.rpartition(".")
                if not name or parent not in modules:
                    raise ValueError(f"a submodule path {path!r}")
                modules[parent]._modules[name] = m
        wire.apply(modules[""], tree)
        return modules[""]
    except (KeyError, TypeError, ValueError, AttributeError, RuntimeError) as exc:
        raise Lost("failed", f"the submission's process described its module in a way the checker cannot use ({exc})") \
            from None
