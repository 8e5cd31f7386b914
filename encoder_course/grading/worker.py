"""The learner's process: it runs the submission's cells, then answers the checker (``checker_process.py``).

It runs the solution's setup cells and the learner's exercise cells, says what the graded name is, then
serves the checker's requests on its two pipes, in plain data only (``wire.py``): ``call`` (the learner's
function, class or built module, with arguments; the reply has the result, the arguments changed in
place, what it printed, the random state after and, when asked, the torch operations it ran) and
``backward`` (the gradients of an earlier call's outputs). Every call runs under the course's time
limit; the exercise's own answer is withdrawn from this process before the learner's first cell
(``withhold.py``). Whatever this process does,
the checker sees only what it sends; a reply it cannot read fails that exercise.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import warnings

from . import wire, withhold

REQUEST_FD, REPLY_FD = 3, 4
KEPT_CALLS = 8


class _Shell:
    """The little of ``get_ipython()`` a graded cell may use: ``%matplotlib`` and ``%time`` only."""

    def __init__(self, ns):
        self.user_ns = ns

    def run_line_magic(self, name, line, _stack_depth=1):
        return None if name == "matplotlib" else self.run_cell_magic(name, "", line)

    def run_cell_magic(self, name, line, cell):
        if name not in ("time", "timeit", "capture"):
            raise RuntimeError(f"the magic %{name} does not run when notebooks are graded")
        exec(compile(cell, "<magic>", "exec"), self.user_ns)

    def system(self, cmd, *args, **kwargs):
        raise RuntimeError("shell commands (!...) do not run when notebooks are graded")

    getoutput = system


def new_namespace() -> dict:
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    shell = _Shell(ns)
    ns["get_ipython"] = lambda: shell
    return ns


def describe_error(exc: BaseException, filename: str) -> str:
    """``"NameError: name 'x' is not defined (line 3)"``, the line taken from the cell's own frames."""
    line = getattr(exc, "lineno", None) if isinstance(exc, SyntaxError) else None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    text = str(exc).strip().splitlines()
    where = f" (line {line})" if line else ""
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}{where}".strip()


def run_cells(ns: dict, cells) -> list[tuple[dict, BaseException | None]]:
    """Run each cell (IPython's syntax turned into Python) in ``ns``; each cell's error, or None."""
    from IPython.core.inputtransformer2 import TransformerManager

    transform, results = TransformerManager().transform_cell, []
    for cell in cells:
        try:
            exec(compile(transform(cell["source"]), f"<{cell.get('label', 'cell')}>", "exec"), ns)
            results.append((cell, None))
        except BaseException as exc:  # SystemExit and KeyboardInterrupt too: the run goes on
            results.append((cell, exc))
    return results


# ----------------------------------------------------------------------------------------------
# The cells


def run_submission(job: dict) -> tuple[object, dict]:
    """Run the setup and exercise cells; return (the graded object or None, the hello reply)."""
    ns = new_namespace()
    for _, exc in run_cells(ns, [{"source": s, "label": "setup cell"} for s in job["setup"]]):
        if exc is not None:
            return None, {"error": f"the course's setup cell failed: {describe_error(exc, '<setup cell>')}"}
    withhold.withdraw(job["key"])  # from here on, the exercise's own answer is not in this process
    notes, graded_error = [], None
    for cell, exc in run_cells(ns, job["cells"]):
        if exc is not None:
            text = describe_error(exc, f"<{cell.get('label', 'cell')}>")
            if cell.get("graded"):
                graded_error = text
            else:
                notes.append(f"{cell.get('label', 'an earlier cell')} raised {text}")
    name = job["name"]
    if name not in ns:
        why = f"the exercise cell raised {graded_error}" if graded_error else "the exercise cell does not define it"
        return None, {"error": f"{name} is not defined after running the exercise cell: {why}", "notes": notes}
    if graded_error:
        notes.append(f"the exercise cell raised {graded_error} (after defining {name})")
    return ns[name], {"notes": notes, **_kind(ns[name])}


def _kind(obj) -> dict:
    """What the graded name is, for the checker: a module, a class or function (with its parameters as
    [name, kind, [default]], the default only when it is plain), or something else."""
    import inspect

    import torch

    if isinstance(obj, torch.nn.Module) or not callable(obj):
        return {"kind": "module" if callable(obj) else "other", "type": type(obj).__name__}
    found = {"kind": "class" if isinstance(obj, type) else "function", "name": str(getattr(obj, "__name__", ""))}
    try:
        params = list(inspect.signature(obj).parameters.values())[:64]
    except (TypeError, ValueError):
        return found
    plain = (bool, int, float, str, type(None))
    found["signature"] = [[p.name, int(p.kind), [p.default] if type(p.default) in plain else []] for p in params]
    return found


# ----------------------------------------------------------------------------------------------
# Serving the checker


class Server:
    def __init__(self, candidate, key: str):
        from encoder_course.checks import _run
        from encoder_course.checks.registry import exercise

        self.candidate, self.modules, self.graphs = candidate, {}, {}
        # The last tensors returned (number -> (tensor, its value when last seen)): when a later call changes one
        # (a view of a buffer the learner's code keeps and writes again), the checker's copy changes too.
        self.returned, self.returned_count = {}, 0
        self.codes = _run._reference_codes(exercise(key))
        if _kind(candidate)["kind"] == "module":  # an instance given where a class is asked for
            self.modules[0] = candidate

    def _guarded(self, fn):
        """Run ``fn()`` as the checkers run learner code: time limit, answer out of reach, output held."""
        from encoder_course.checks import _run, _timer

        printed = io.StringIO()
        _run._LOCK.codes, _run._LOCK.used = self.codes, None
        outcome = {}
        try:
            with _timer.time_limit(_run._time_limit_in_force()) as timer, _run._reference_locked(threads=True), \
                    contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed), \
                    warnings.catch_warnings():
                warnings.simplefilter("ignore")
                outcome["value"] = fn()
        except _run._UsedReference:
            outcome["error"] = {"reference": True}
        except _timer.Timeout:
            outcome["error"] = {"timeout": True, "waited": bool(timer.waited)}
        except Exception as exc:
            outcome["error"] = _exception(exc)
        if _run._LOCK.used:
            outcome["error"] = {"reference": True}
        outcome["used"] = _run._LOCK.used or ""
        outcome["printed"] = printed.getvalue()[-20000:]
        return outcome

    def call(self, request: dict) -> dict:
        import torch

        target = request.get("target")
        obj = self.candidate if target is None else self.modules.get(target[0])
        if obj is None:
            return {"problem": "no such module"}
        params = []
        if target is not None:
            params = wire.apply(obj, request["state"])
            obj = obj.get_submodule(target[1])
        args, kwargs = request["args"], request["kwargs"]
        inputs = [a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor)]
        before = [t.detach().clone() for t in inputs]
        torch.set_rng_state(request["rng"])
        grad = bool(request["grad"])
        recorder = None
        if request.get("record"):
            from encoder_course.checks.blockwise import _Recorder

            recorder = _Recorder()
        def run():
            with torch.set_grad_enabled(grad), recorder if recorder is not None else contextlib.nullcontext():
                return obj(*args, **kwargs)

        outcome = self._guarded(run)
        reply = {"printed": outcome["printed"], "used": outcome["used"], "rng": torch.get_rng_state()}
        if recorder is not None:
            reply["ops"] = [[name, [list(s) for s in outs], [list(s) for s in ins]]
                            for name, outs, ins in recorder.ops[:100_000]]
        if "error" in outcome:
            reply["error"] = outcome["error"]
        else:
            value = outcome["value"]
            if isinstance(value, torch.nn.Module):
                handle = len(self.modules)
                self.modules[handle] = value
                reply["module"] = [handle, wire.describe(value)]
            else:
                reply["value"] = value
                outs = value if isinstance(value, (tuple, list)) else (value,)
                if grad and any(isinstance(o, torch.Tensor) and o.requires_grad for o in outs):
                    leaves = [t for t in inputs if t.requires_grad] + [p for p in params if p.requires_grad]
                    self.graphs[request["id"]] = (outs, leaves)
                    for old in list(self.graphs)[:-KEPT_CALLS]:
                        del self.graphs[old]
                    reply["grad_outputs"] = [isinstance(o, torch.Tensor) and o.requires_grad for o in outs]
        reply["changed"] = [[i, t] for i, (t, old) in enumerate(zip(inputs, before))
                            if t.shape != old.shape or not torch.equal(t.detach(), old)]
        reply["earlier"] = [[number, t] for number, (t, old) in self.returned.items()
                            if t.shape != old.shape or not torch.equal(t.detach(), old)]
        for number, t in reply["earlier"]:
            self.returned[number] = (t, t.detach().clone())
        if "value" in reply:
            outs = reply["value"] if isinstance(reply["value"], (tuple, list)) else (reply["value"],)
            numbers = []
            for o in outs:
                if isinstance(o, torch.Tensor):
                    self.returned_count += 1
                    self.returned[self.returned_count] = (o, o.detach().clone())
                    numbers.append(self.returned_count)
                else:
                    numbers.append(None)
            for old in list(self.returned)[:-KEPT_CALLS]:
                del self.returned[old]
            reply["returned"] = numbers
        if target is not None:
            reply["state"] = wire.describe(self.modules[target[0]])
        return reply

    def backward(self, request: dict) -> dict:
        import torch

        kept = self.graphs.pop(request.get("call"), None)
        if kept is None:
            return {"problem": "no such call"}
        outs, leaves = kept
        flagged = [o for o in outs if isinstance(o, torch.Tensor) and o.requires_grad]  # what the checker linked
        pairs = list(zip(flagged, request["grads"]))

        def run():
            with torch.enable_grad():
                return torch.autograd.grad([o for o, _ in pairs], leaves, [g.to(o.dtype) for o, g in pairs],
                                           allow_unused=True)

        outcome = self._guarded(run)
        if "error" in outcome:
            return {"error": outcome["error"]}
        return {"grads": list(outcome["value"])}


def _exception(exc: BaseException) -> dict:
    """An exception as plain data: its class name, the built-in classes it derives from, its text."""
    import builtins

    bases = [k.__name__ for k in type(exc).__mro__ if getattr(builtins, k.__name__, None) is k
             and issubclass(k, Exception)]
    args = [a for a in exc.args if a is None or type(a) in (bool, int, float) or (type(a) is str and len(a) < 4000)]
    return {"type": type(exc).__name__[:80], "bases": bases[:8], "message": str(exc)[:4000],
            "args": args if len(args) == len(exc.args) <= 8 else None}


def serve(job: dict) -> None:
    """Run the submission, then answer the checker until it closes the channel; never returns."""
    try:
        candidate, hello = run_submission(job)
        answer(candidate, job["key"], hello)
    finally:
        sys.stdout.flush()
        os._exit(0)


def answer(candidate, key: str, hello: dict | None = None) -> None:
    """Say what the graded name is, then answer the checker's requests until it closes the channel."""
    import torch

    torch.set_num_threads(1)
    withhold.withdraw(key)  # (done already after a submission's cells; the tests' candidates come here directly)
    hello = hello or {"notes": [], **_kind(candidate)}
    server = Server(candidate, key)
    if 0 in server.modules:
        hello["module"] = [0, wire.describe(candidate)]
    wire.send(REPLY_FD, wire.encode({"hello": hello}))
    while True:
        try:
            request = wire.decode(wire.receive(REQUEST_FD))
        except EOFError:
            return
        reply = server.call(request) if request.get("op") == "call" else server.backward(request)
        try:
            wire.send(REPLY_FD, wire.encode(reply))
        except wire.Malformed as exc:  # a result that cannot be sent: a complex tensor, a huge one, ...
            wire.send(REPLY_FD, wire.encode({"rng": reply.get("rng"), "error": {
                "type": "TypeError", "bases": ["TypeError"], "message": f"what it returned cannot be checked: {exc}"}}))
