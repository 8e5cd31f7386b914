"""The verdict process: run one exercise of one submission and report the checker's own verdict.

Started by ``encoder-course grade`` (never by hand), one per exercise per submission, as a fork of a
warm *fork server* (``serve``: torch and the course already imported, no learner code ever run in
it), as a fresh interpreter (``run``), or inside a container (``stdio``). It

1. reads its job (the master's setup cells, the learner's exercise cells, the exercise key and name);
2. starts the *keeper* thread, which reads the run's random token from its own pipe before any
   learner code runs and keeps it where the learner's code cannot reach it;
3. runs the master's setup cells, takes a reference to the real ``checks.verdict``, and asks the
   keeper to arm: the keeper fingerprints the course's, torch's and Python's functions and installs
   an audit hook that refuses, while learner code may be running, to start processes (and threads,
   where Python audits that: 3.13+), to
   signal other processes, to use ctypes, to inspect the garbage collector or other threads' frames,
   to change the trace or profile function (except the checker's own reference lock), to add audit
   hooks, or to open any process's memory; in the keeper's thread it also refuses every way of
   getting at a frame, so learner code that ends up running there cannot find the token;
4. runs the learner's exercise cells of that notebook up to and including the one graded (their
   errors are noted, and the graded name is checked when it is defined);
5. calls the real ``verdict(key, candidate)`` and hands the result over by calling ``_hand_over``
   from ``run_job`` itself: the keeper accepts a result only from that very frame (code object and
   caller checked by identity), compares the fingerprints, and writes one JSON line with the token
   to the verdict pipe, then ends the process.

Any change to the fingerprinted functions, any refused event, or anything else handed over turns the
verdict into "failed" (tampering). A process that ends without a line carrying the token is an error
for the grader, never a pass. Limits: the learner's code and the checker share one process, so code
that patches something only while it is being checked and puts it back before the check ends is not
seen by the fingerprints (the checker takes its own references for that), and native code started
through a route Python does not audit (``_posixsubprocess``) is killed by the grader afterwards.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import sys
import threading
import time
import types

VERDICT_API = "encoder_course.checks:verdict"
JOB_FD, TOKEN_FD, VERDICT_FD = 3, 4, 5
MESSAGE_CHARS, NOTES_CHARS = 4000, 2000
RESULT_STATUSES = ("passed", "failed", "not attempted", "error")

# Modules and classes whose functions the learner's code must not change (besides every
# encoder_course module, whose functions are fingerprinted in depth).
WATCHED_MODULES = (
    "builtins", "math", "operator", "functools", "contextlib", "inspect", "io", "warnings", "threading",
    "signal", "os", "time", "dataclasses", "torch", "torch.nn", "torch.nn.functional", "torch.nn.init",
    "torch.testing", "torch.testing._comparison", "torch.random", "torch.autograd", "torch.linalg",
    "torch.nn.modules.module", "torch.nn.modules.linear", "torch.nn.modules.normalization",
)
WATCHED_CLASSES = (
    "torch.Tensor", "torch._C.TensorBase", "torch.nn.Module", "torch.nn.Linear", "torch.nn.LayerNorm",
    "torch.nn.Embedding", "torch.nn.Dropout", "torch.nn.Parameter", "torch.nn.ModuleList",
    "torch.nn.Sequential", "torch.Generator", "builtins.object",
)
_REFUSED = {
    "os.fork": "start processes", "os.forkpty": "start processes", "os.posix_spawn": "start processes",
    "os.spawn": "start processes", "os.exec": "start processes", "os.system": "start processes",
    "subprocess.Popen": "start processes", "pty.spawn": "start processes",
    "_thread.start_new_thread": "start threads", "os.kill": "send signals", "os.killpg": "send signals",
    "signal.pthread_kill": "send signals", "gc.get_objects": "inspect the garbage collector",
    "gc.get_referrers": "inspect the garbage collector", "gc.get_referents": "inspect the garbage collector",
    "sys._current_frames": "read other threads' frames", "sys._current_exceptions": "read other threads' frames",
    "sys.addaudithook": "add an audit hook", "sys.settrace": "change the trace function",
    "sys.setprofile": "change the profile function",
}
_FRAME_EVENTS = frozenset({"sys._getframe"})
_FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"})


class Forbidden(RuntimeError):
    """Raised by the audit hook: the learner's code tried something a graded exercise may not do."""


# ----------------------------------------------------------------------------------------------
# Running cells


class _Shell:
    """The little of ``get_ipython()`` a graded cell may use: ``%matplotlib`` and ``%time`` only."""

    def __init__(self, ns):
        self.user_ns = ns

    def run_line_magic(self, name, line, _stack_depth=1):
        if name == "matplotlib":
            return None
        if name in ("time", "timeit"):
            exec(compile(line, "<magic>", "exec"), self.user_ns)
            return None
        raise RuntimeError(f"the magic %{name} does not run when notebooks are graded")

    def run_cell_magic(self, name, line, cell):
        if name in ("time", "timeit", "capture"):
            exec(compile(cell, "<magic>", "exec"), self.user_ns)
            return None
        raise RuntimeError(f"the cell magic %%{name} does not run when notebooks are graded")

    def system(self, cmd, *args, **kwargs):
        raise RuntimeError("shell commands (!...) do not run when notebooks are graded")

    getoutput = system


def _transformer():
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        return TransformerManager().transform_cell
    except Exception:  # IPython missing: plain Python only
        return lambda source: source


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


def run_cells(ns: dict, cells, transform) -> list[tuple[dict, BaseException | None]]:
    results = []
    for cell in cells:
        filename = f"<{cell.get('label', 'cell')}>"
        try:
            exec(compile(transform(cell["source"]), filename, "exec"), ns)
            results.append((cell, None))
        except BaseException as exc:  # SystemExit and KeyboardInterrupt too: the run goes on
            results.append((cell, exc))
    return results


def resolve(api: str):
    import importlib

    module, _, attr = api.partition(":")
    return getattr(importlib.import_module(module), attr)


# ----------------------------------------------------------------------------------------------
# The job


def read_all(fd: int, limit: int = 32 * 1024 * 1024) -> bytes:
    chunks, size = [], 0
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise ValueError("job too large")
    os.close(fd)
    return b"".join(chunks)


def run_job(job_fd: int, token_fd: int, verdict_fd: int) -> None:
    """Everything a verdict process does; never returns (the keeper ends the process)."""
    job = json.loads(read_all(job_fd).decode("utf-8"))
    import encoder_course

    for name in encoder_course.__all__:  # load the package's lazy names now, before anything is watched
        getattr(encoder_course, name)
    handoff, arm_request, armed = queue.SimpleQueue(), threading.Event(), threading.Event()
    keeper = threading.Thread(
        target=_keeper, name="verdict-keeper", daemon=True,
        args=(token_fd, verdict_fd, handoff, arm_request, armed, threading.get_ident(),
              run_job.__code__, _hand_over.__code__),
    )
    keeper.start()
    block_signals = signal.pthread_sigmask if hasattr(signal, "pthread_sigmask") else None
    transform = _transformer()
    ns = new_namespace()
    missing = object()
    result = None
    try:
        for _cell, exc in run_cells(ns, [{"source": s, "label": "setup cell"} for s in job["setup"]], transform):
            if exc is not None:
                result = ("error", f"the course's setup cell failed: {describe_error(exc, '<setup cell>')}", "")
                break
        check = resolve(job.get("verdict_api") or VERDICT_API)
    except BaseException as exc:
        result = ("error", f"the grader could not prepare the check: {type(exc).__name__}: {exc}", "")
        check = None
    arm_request.set()
    armed.wait()
    # ---------------------------------------------------------------- learner code from here on
    if result is None:
        key, name = job["key"], job["name"]
        notes = []
        graded_error = None
        for cell, exc in run_cells(ns, job["cells"], transform):
            if exc is None:
                continue
            text = describe_error(exc, f"<{cell.get('label', 'cell')}>")
            if cell.get("graded"):
                graded_error = text
            else:
                notes.append(f"{cell.get('label', 'an earlier cell')} raised {text}")
        candidate = ns.get(name, missing)
        if candidate is missing:
            why = f"the exercise cell raised {graded_error}" if graded_error else "the exercise cell does not define it"
            result = ("error", f"{name} is not defined after running the exercise cell: {why}", "; ".join(notes))
        else:
            if graded_error:
                notes.append(f"the exercise cell raised {graded_error} (after defining {name})")
            try:
                v = check(key, candidate)
                result = (v.status, v.message, "; ".join(notes))
            except BaseException as exc:
                result = ("error", f"the checker raised {type(exc).__name__}", "; ".join(notes))
    _hand_over(result, handoff, block_signals)


def _hand_over(result, handoff, block_signals):
    """Give ``result`` to the keeper: it takes it from this very frame, called by ``run_job``."""
    if block_signals is not None:
        block_signals(signal.SIG_BLOCK, signal.valid_signals())
    handoff.put(sys._getframe())
    while True:
        time.sleep(3600)


def _keeper(token_fd, verdict_fd, handoff, arm_request, armed, main_ident, job_code, hand_over_code):
    """The trusted thread: holds the token, arms the audit hook, judges the hand-over, writes the verdict."""
    # Everything used after arming is taken now, before any learner code can replace it.
    _read, _write, _close, _exit = os.read, os.write, os.close, os._exit
    _type, _len, _vars, _list, _tuple, _str, _enumerate = type, len, vars, list, tuple, str, enumerate
    _isinstance, _frozenset, _sorted, _repr, _getattr, _id = isinstance, frozenset, sorted, repr, getattr, id
    _dict, _set, _all = dict, set, all
    _get_ident, _getframe, _current_frames = threading.get_ident, sys._getframe, sys._current_frames
    _modules = sys.modules
    _encode = getattr(json.encoder, "c_encode_basestring_ascii", None) or json.encoder.encode_basestring_ascii
    FrameType, FunctionType, ModuleType = types.FrameType, types.FunctionType, types.ModuleType
    _staticmethod, _classmethod, _property = staticmethod, classmethod, property

    token = b""
    while b"\n" not in token and _len(token) < 256:
        chunk = _read(token_fd, 256)
        if not chunk:
            break
        token += chunk
    _close(token_fd)
    token = token.split(b"\n")[0].decode("ascii", "replace")
    arm_request.wait()

    # The frame of run_job in the main thread: the only caller a result is taken from.
    frame = _current_frames().get(main_ident)
    while frame is not None and frame.f_code is not job_code:
        frame = frame.f_back
    job_frame = frame

    own = _sorted(n for n in _modules if n == "encoder_course" or n.startswith("encoder_course."))
    watched = [(n, _modules[n], True) for n in own]
    watched += [(n, _modules[n], False) for n in WATCHED_MODULES if n in _modules]
    classes = []
    for dotted in WATCHED_CLASSES:
        mod, _, attr = dotted.rpartition(".")
        obj = _getattr(_modules.get(mod), attr, None) if mod in _modules else None
        if _isinstance(obj, type):
            classes.append((dotted, obj))

    course_codes = set()

    def collect_codes(code):
        course_codes.add(code)
        for const in code.co_consts:
            if _type(const) is _type(code):
                collect_codes(const)

    def collect_function(v):
        f = v.__func__ if _type(v) in (_staticmethod, _classmethod) else v
        if _type(f) is FunctionType:
            collect_codes(f.__code__)
            inner = _getattr(f, "__wrapped__", None)
            if _type(inner) is FunctionType:
                collect_codes(inner.__code__)

    # The course's own code may change the trace function: the checker's reference lock sets it, and
    # CPython clears it (raising the same audit event) when the lock's tracer stops a reference call.
    for n, mod, is_own in watched:
        if not is_own or n.startswith("encoder_course.course."):
            continue
        for v in _list(_vars(mod).values()):
            collect_function(v)
            if _isinstance(v, type) and _str(_vars(v).get("__module__", "")).startswith("encoder_course"):
                for member in _list(_vars(v).values()):
                    collect_function(member)
    course_codes = _frozenset(course_codes)

    def deep(label, v, out, depth):
        t = _type(v)
        if t in (_staticmethod, _classmethod):
            deep(label, v.__func__, out, depth)
        elif t is _property:
            for part in ("fget", "fset", "fdel"):
                deep(label + "." + part, _getattr(v, part), out, depth)
        elif t is FunctionType:
            out[(label, "__code__")] = v.__code__
            out[(label, "__defaults__")] = v.__defaults__
            out[(label, "__kwdefaults__")] = v.__kwdefaults__
            out[(label, "__dict__")] = v.__dict__
            for k2, v2 in _list(v.__dict__.items()):
                out[(label, "__dict__", k2)] = v2
            for i, cell in _enumerate(v.__closure__ or ()):
                try:
                    out[(label, "cell", i)] = cell.cell_contents
                except ValueError:
                    pass
        elif t is _dict:
            for k2, v2 in _list(v.items())[:2000]:
                out[(label, "[]", k2)] = v2
        elif t is _list or t is _tuple:
            for i, v2 in _enumerate(v[:2000]):
                out[(label, "[]", i)] = v2
        elif t is _set:
            out[(label, "set")] = _frozenset(_id(x) for x in v)  # compared by value
        elif depth == 0 and _isinstance(v, type) and _str(_vars(v).get("__module__", "")).startswith("encoder_course"):
            for k2, v2 in _list(_vars(v).items()):
                out[(label, k2)] = v2
                deep(label + "." + _str(k2), v2, out, 1)

    def fingerprint():
        out = {}
        for n, mod, is_own in watched:
            out[("sys.modules", n)] = _modules.get(n)
            for k, v in _list(_vars(mod).items()):
                out[(n, k)] = v
                if is_own:
                    deep(n + "." + _str(k), v, out, 0)
        for n, cls in classes:
            for k, v in _list(_vars(cls).items()):
                out[(n, k)] = v
        for n in _list(_modules):
            if n == "encoder_course" or n.startswith("encoder_course."):
                out[("sys.modules", n)] = _modules.get(n)
        return out

    def label_of(key):
        head, rest = key[0], key[1:]
        if head == "sys.modules":
            return "sys.modules[" + _repr(rest[0]) + "]"
        if not rest:
            return head
        if rest[0] == "[]":
            return head + "[" + (_repr(rest[1])[:40] if _type(rest[1]) in (_str, int) else "...") + "]"
        if rest[0] == "cell":
            return head + " (its closure)"
        return head + "." + (rest[0] if _type(rest[0]) is _str else "?")

    def differences(before, after):
        changed = []
        for key, obj in before.items():
            if key not in after or (after[key] is not obj and not (key[-1] == "set" and after[key] == obj)):
                changed.append(key)
        for key, obj in after.items():
            if key not in before and _type(obj) is not ModuleType and key[-1] != "__warningregistry__":
                changed.append(key)
        return changed

    before = fingerprint()
    flags = []
    keeper_ident = _get_ident()

    def hook(event, args):
        if event == "open":
            path = args[0] if args else None
            if _type(path) is bytes:
                path = path.decode("utf-8", "replace")
            if _type(path) is _str and (path.endswith("mem") or path.endswith("kcore")) or (
                    _type(path) is _str and path.startswith("/proc/")
                    and (path[6:].split("/")[0].isdigit() or path[6:].split("/")[0] in ("self", "thread-self"))):
                flags.append("read process memory")
                raise Forbidden("reading /proc of a process is not allowed while an exercise is graded")
            return
        if _get_ident() == keeper_ident:
            if event in _FRAME_EVENTS or event in _REFUSED or event.startswith("ctypes.") or (
                    event == "object.__getattr__" and _len(args) > 1 and args[1] in _FRAME_ATTRS):
                flags.append("reach the grader's thread")
                raise Forbidden("not allowed while an exercise is graded")
            return
        what = _REFUSED.get(event)
        if what is None and event.startswith("ctypes."):
            what = "use ctypes"
        if what is None:
            return
        if event in ("sys.settrace", "sys.setprofile"):
            caller = _getframe(1)
            if caller is not None and caller.f_code in course_codes:
                return  # the checker's own reference lock
        flags.append(what)
        raise Forbidden(f"graded code may not {what}")

    sys.addaudithook(hook)
    armed.set()

    junk = []
    while True:
        item = handoff.get()
        if _type(item) is FrameType and item.f_code is hand_over_code and job_frame is not None \
                and item.f_back is job_frame:
            break
        junk.append(item)  # kept, so nothing of the learner's is freed in this thread
        flags.append("hand over a result of its own")
    result = item.f_locals.get("result")
    after = fingerprint()
    changed = differences(before, after)
    ok = (_type(result) is _tuple and _len(result) == 3 and _all(_type(x) is _str for x in result)
          and result[0] in RESULT_STATUSES)
    status, message, notes = result if ok else ("error", "the verdict process handed over no valid result", "")
    tamper = []
    if changed:
        names = _sorted({label_of(k) for k in changed})
        tamper.append("the submission changes the course's or torch's functions ("
                      + ", ".join(names[:6]) + (", ..." if _len(names) > 6 else "") + ")")
    seen = []
    for f in flags:
        if f not in seen:
            seen.append(f)
    if seen:
        tamper.append("the submission tried to " + ", ".join(seen) + " while it was graded")
    if tamper:
        status, message = "failed", "; ".join(tamper)
    line = ('{"token": ' + _encode(token) + ', "status": ' + _encode(status)
            + ', "message": ' + _encode(message[:MESSAGE_CHARS]) + ', "notes": ' + _encode(notes[:NOTES_CHARS])
            + ', "tamper": ' + ("true" if tamper else "false") + "}\n").encode("ascii")
    while line:
        written = _write(verdict_fd, line)
        line = line[written:]
    _exit(0)


# ----------------------------------------------------------------------------------------------
# Entry points


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["serve"]:
        from .fork_server import serve

        return serve(int(argv[1]))
    if argv[:1] == ["run"]:
        run_job(int(argv[1]), int(argv[2]), int(argv[3]))
    if argv[:1] == ["stdio"]:
        from .fork_server import stdio

        stdio()
    sys.stderr.write("usage: python -m encoder_course.course.verdict serve FD | run JOB TOKEN VERDICT | stdio\n")
    return 2


if __name__ == "__main__":
    from encoder_course.course import verdict as _canonical  # the module the fingerprints know

    sys.exit(_canonical.main())
