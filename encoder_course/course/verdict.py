"""The checker process: one per exercise per submission, started by ``encoder-course grade`` (never by hand).

It reads its job (the master's setup cells, the learner's exercise cells, the exercise key and name),
starts the *learner's process* below it (``worker.py``: isolated by ``sandbox.enter``, it runs the
cells and answers requests), and calls the real ``checks.verdict(key, candidate)`` itself, in this
process, with a stand-in for the learner's object (``remote.py``) that reaches it through plain data.
It writes the verdict as one JSON line on its verdict pipe, which only it holds, and ends.

No learner code ever runs here: not the cells, not the answer's functions, not a ``__hash__`` or a
``__torch_function__`` of theirs (only numbers, strings and tensors rebuilt from bytes cross over).
This process cannot be read or traced by the learner's (``PR_SET_DUMPABLE`` is off before the fork;
the learner's process closes every descriptor but its two pipes before its first cell). The
learner's process may end itself, or write nonsense on its pipe: that fails or ends the check of its
own exercise, never the grading run.

Started as a fork of the warm fork server (``fork_server.serve``), as a fresh interpreter (``run``), or
inside a container (``stdio``: the job on stdin, the verdict on stdout).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys

VERDICT_API = "encoder_course.checks:verdict"
JOB_FD, VERDICT_FD = 3, 4
MESSAGE_CHARS, NOTES_CHARS = 4000, 2000


def resolve(api: str):
    import importlib

    module, _, attr = api.partition(":")
    return getattr(importlib.import_module(module), attr)


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


def start_learner(job: dict, plan, job_dir: str | None) -> tuple[int, int, int]:
    """Fork the learner's process; returns (its pid, the request pipe's end, the reply pipe's end)."""
    from . import sandbox, worker

    sandbox.prctl(sandbox.PR_SET_DUMPABLE, 0)  # before the fork: the learner's process cannot read this one
    request_r, request_w = os.pipe()
    reply_r, reply_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            _move_pipes(request_r, reply_w)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.closerange(worker.REPLY_FD + 1, 65536)  # the verdict pipe and the job's: gone before any cell
            if plan is not None:
                sandbox.enter(plan, job_dir)
            else:
                os.setsid()
                sandbox.prctl(sandbox.PR_SET_PDEATHSIG, signal.SIGKILL)
            worker.serve(job)
        except BaseException as exc:
            try:
                os.write(2, f"learner process: {type(exc).__name__}: {exc}\n".encode())
            except OSError:
                pass
        os._exit(70)
    os.close(request_r)
    os.close(reply_w)
    return pid, request_w, reply_r


def _move_pipes(request_r: int, reply_w: int) -> None:
    """In the learner's process: its two pipes on their fixed descriptors (3 and 4)."""
    import fcntl

    from . import worker

    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 1000) for fd in (request_r, reply_w)]
    for target, fd in zip((worker.REQUEST_FD, worker.REPLY_FD), high):
        os.dup2(fd, target)


def judge(job: dict, request_fd: int, reply_fd: int) -> tuple[str, str, str]:
    """(status, message, notes): the checker's verdict on the learner's process behind the two pipes."""
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
        check = resolve(job.get("verdict_api") or VERDICT_API)
        result = check(job["key"], candidate(channel, hello))
        return result.status, result.message, notes
    except Lost as lost:
        return lost.status, lost.message, notes


def run_job(job_fd: int, verdict_fd: int, plan=None, job_dir: str | None = None) -> None:
    """Everything a checker process does; never returns."""
    code = 0
    try:
        job = json.loads(read_all(job_fd).decode("utf-8"))
        import torch

        torch.set_num_threads(1)
        pid, request_w, reply_r = start_learner(job, plan, job_dir)
        try:
            status, message, notes = judge(job, request_w, reply_r)
        except Exception as exc:  # the course's own checker failed: say so, blame no one
            status, message, notes = "error", f"the checker raised {type(exc).__name__}: {exc}", ""
        finally:
            for target in (-pid, pid):
                try:
                    os.kill(target, signal.SIGKILL)
                except OSError:
                    pass
        line = json.dumps({"status": status, "message": message[:MESSAGE_CHARS], "notes": notes[:NOTES_CHARS]},
                          ensure_ascii=True) + "\n"
        data = line.encode("ascii")
        while data:
            data = data[os.write(verdict_fd, data):]
    except BaseException as exc:
        code = 70
        try:
            os.write(2, f"checker process: {type(exc).__name__}: {exc}\n".encode())
        except OSError:
            pass
    os._exit(code)


@contextlib.contextmanager
def answered_by(key: str, obj):
    """``obj`` in a forked process that answers the checker's requests: yields (request fd, reply fd).

    What the grader does, without the cells and the sandbox (for the tests).
    """
    import torch.fx.experimental.symbolic_shapes  # noqa: F401 (autograd.grad imports it on first use: before the fork)

    from . import worker

    request_r, request_w = os.pipe()
    reply_r, reply_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(request_w)
            os.close(reply_r)
            _move_pipes(request_r, reply_w)
            import torch

            torch.set_num_threads(1)
            worker.answer(obj, {"notes": [], **worker._kind(obj)}, key, worker.REQUEST_FD, worker.REPLY_FD)
        finally:
            os._exit(0)
    os.close(request_r)
    os.close(reply_w)
    try:
        yield request_w, reply_r
    finally:
        os.close(request_w)
        os.close(reply_r)
        os.waitpid(pid, 0)


def through_protocol(key: str, obj):
    """``checks.verdict(key, obj)`` with ``obj`` reached only through the protocol: the tests compare it
    with the verdict on ``obj`` itself, for every answer in the checkers' catalogue."""
    with answered_by(key, obj) as (request_fd, reply_fd):
        return judge({"key": key}, request_fd, reply_fd)


# ----------------------------------------------------------------------------------------------
# Entry points


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["serve"]:
        from .fork_server import serve

        return serve(int(argv[1]))
    if argv[:1] == ["run"]:
        from .sandbox import Plan

        plan = Plan(**json.loads(argv[3])) if len(argv) > 4 else None
        run_job(int(argv[1]), int(argv[2]), plan, argv[4] if len(argv) > 4 else None)
    if argv[:1] == ["stdio"]:
        from .fork_server import stdio

        stdio()
    sys.stderr.write("usage: python -m encoder_course.course.verdict serve FD | run JOB VERDICT [PLAN DIR] | stdio\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
