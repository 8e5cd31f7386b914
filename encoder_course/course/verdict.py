"""The checker process and its fork server, both started by ``encoder-course grade`` (never by hand).

A checker process judges one exercise: it forks the learner's process (``worker.py``, in the sandbox of
``sandbox.enter``), calls the real ``checks.verdict(key, candidate)`` itself with a stand-in for the
learner's object (``remote.py``) that reaches it only through plain data, and writes the verdict as one
JSON line on its verdict pipe, which only it holds. No learner code runs here (not even a ``__hash__`` or
a ``__torch_function__`` of theirs), and the learner's process cannot read or trace this one: whatever
it does costs it its own exercise only. ``serve`` is a runner's fork server; ``stdio``, a container's entry.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys

MESSAGE_CHARS, NOTES_CHARS = 4000, 2000


def _say(text: str) -> None:
    with contextlib.suppress(OSError):
        os.write(2, (text + "\n").encode("utf-8", "replace"))


def start_learner(serve, plan=None, job_dir: str | None = None) -> tuple[int, int, int]:
    """Fork the learner's process, which runs ``serve()`` (in ``plan``'s sandbox; the tests give none) with
    its request and reply pipes on descriptors 3 and 4 and no other; returns (its pid, request fd, reply fd)."""
    import fcntl

    from . import sandbox, worker

    sandbox.prctl(sandbox.PR_SET_DUMPABLE, 0)  # before the fork: the learner's process cannot read this one
    request_r, request_w = os.pipe()
    reply_r, reply_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 1000) for fd in (request_r, reply_w)]
            for target, fd in zip((worker.REQUEST_FD, worker.REPLY_FD), high):
                os.dup2(fd, target)
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            os.closerange(worker.REPLY_FD + 1, 65536)  # the verdict pipe and every other: gone before any cell
            if plan is not None:
                sandbox.enter(plan, job_dir)
            serve()
        except BaseException as exc:
            _say(f"learner process: {type(exc).__name__}: {exc}")
        os._exit(70)
    os.close(request_r)
    os.close(reply_w)
    return pid, request_w, reply_r


def judge(key: str, request_fd: int, reply_fd: int) -> tuple[str, str, str]:
    """(status, message, notes): the checker's verdict on the learner's process behind the two pipes."""
    from encoder_course.checks import verdict

    from .remote import Channel, Lost, candidate

    channel = Channel(request_fd, reply_fd)
    notes = ""
    try:
        hello = channel.receive().get("hello")
        if not isinstance(hello, dict):
            raise Lost("failed", "the submission's process did not say what it defines")
        notes = "; ".join(str(n) for n in hello.get("notes", []) if isinstance(n, str))
        if "error" in hello:
            return "error", str(hello["error"]), notes
        result = verdict(key, candidate(channel, hello))
        return result.status, result.message, notes
    except Lost as lost:
        return lost.status, lost.message, notes


def run_job(job: dict, verdict_fd: int, plan, job_dir: str) -> None:
    """Everything a checker process does: judge the learner's process, write the verdict; never returns."""
    code = 0
    try:
        import torch

        from . import worker

        torch.set_num_threads(1)
        _, request_w, reply_r = start_learner(lambda: worker.serve(job), plan, job_dir)
        try:  # (the learner's process dies with this one, and the grader kills all it left)
            status, message, notes = judge(job["key"], request_w, reply_r)
        except Exception as exc:  # the course's own checker failed: say so, blame no one
            status, message, notes = "error", f"the checker raised {type(exc).__name__}: {exc}", ""
        line = {"status": status, "message": message[:MESSAGE_CHARS], "notes": notes[:NOTES_CHARS]}
        data = (json.dumps(line) + "\n").encode("ascii")
        while data:
            data = data[os.write(verdict_fd, data):]
    except BaseException as exc:
        code = 70
        _say(f"checker process: {type(exc).__name__}: {exc}")
    os._exit(code)


def send(sock: socket.socket, message: dict, fds=()) -> None:
    """A message between the grader and its fork server: one JSON line, with ``fds`` attached."""
    data = json.dumps(message).encode() + b"\n"
    sent = socket.send_fds(sock, [data], list(fds)) if fds else 0
    sock.sendall(data[sent:])


def receive(sock: socket.socket) -> tuple[dict, list[int]]:
    """The next message and the descriptors attached to it; EOFError when the other side has gone."""
    data, fds, _, _ = socket.recv_fds(sock, 1 << 16, 2)
    while not data.endswith(b"\n"):
        more = sock.recv(1 << 16)
        if not more:
            raise EOFError("the other side closed the socket")
        data += more
    return json.loads(data), fds


def _preload(setups) -> None:
    """Import the course, run the masters' setup cells and torch once, so that every fork starts warm."""
    import gc
    import importlib
    import pkgutil

    import encoder_course

    from . import worker

    for info in pkgutil.walk_packages(encoder_course.__path__, "encoder_course."):
        if not info.name.startswith("encoder_course.course."):  # (the machinery is not what a check uses)
            with contextlib.suppress(Exception):
                importlib.import_module(info.name)
    worker.run_cells(worker.new_namespace(), [{"source": s, "label": "setup cell"} for s in setups])
    import torch
    import torch.fx.experimental.symbolic_shapes  # noqa: F401 (autograd.grad imports it, and sympy, on first use)

    (torch.ones(4, 4) @ torch.ones(4, 4)).sum().item()  # torch reads /proc/cpuinfo on its first operation
    gc.collect()
    gc.freeze()


def serve(sock_fd: int) -> None:
    """The fork server: warm up once, then fork a checker process for each job the grader sends (the
    job's file and folder, and the verdict and output pipes' ends). No learner code ever runs in it."""
    from . import sandbox

    sandbox.prctl(sandbox.PR_SET_PDEATHSIG, signal.SIGKILL)  # it dies with the grader
    sandbox.prctl(sandbox.PR_SET_DUMPABLE, 0)  # a learner's process of the same user cannot read or trace it
    sandbox.prctl(sandbox.PR_SET_CHILD_SUBREAPER, 1)  # what a learner's process leaves behind stays below
    sock = socket.socket(fileno=sock_fd)
    start, _ = receive(sock)
    plan = sandbox.Plan(**start["plan"])
    _preload(start["setup"])
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # every child, orphans included, is reaped as it ends
    send(sock, {"ready": True})
    server = os.getpid()
    while True:
        try:
            request, fds = receive(sock)
        except (EOFError, OSError):
            os._exit(0)
        if plan.mode == "bwrap":
            sandbox.clear_folder("/tmp")  # this server's own /tmp in bubblewrap: what the last job left
        if os.fork() == 0:
            try:
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                sandbox.prctl(sandbox.PR_SET_PDEATHSIG, signal.SIGKILL)  # first: die with the server ...
                if os.getppid() != server:  # ... even if it died before that line
                    os._exit(70)
                sock.close()
                verdict_w, out_w = fds
                os.dup2(out_w, 1)
                os.dup2(out_w, 2)
                sys.stdout = sys.stderr = open(1, "w", encoding="utf-8", errors="replace", buffering=1,
                                               closefd=False)
                with open(request["job"], encoding="utf-8") as handle:
                    job = json.load(handle)
                run_job(job, verdict_w, plan, request["job_dir"])
            except BaseException as exc:
                _say(f"checker process: {type(exc).__name__}: {exc}")
            os._exit(70)
        for fd in fds:
            os.close(fd)


def stdio() -> None:
    """In a container: the job on stdin, the verdict on the original stdout (the learner's process gets neither)."""
    from . import sandbox

    verdict_fd = os.dup(1)
    os.dup2(2, 1)
    run_job(json.load(sys.stdin), verdict_fd, sandbox.Plan(mode="container"), os.getcwd())


if __name__ == "__main__":  # started by the grader: `serve FD` (a runner's fork server) or `stdio` (a container)
    if sys.argv[1:2] == ["serve"]:
        serve(int(sys.argv[2]))
    stdio()
