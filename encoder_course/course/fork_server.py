"""The checker fork server, and the container entry point (see ``verdict.py`` for what a checker process does).

``serve`` runs in a process the grader starts once per run: it imports torch and the course, runs the
masters' setup cells once (so every fork starts warm), and then forks one checker process per
``spawn`` request it gets on its socket, with the request's three pipes (job, verdict, output). Each
fork moves the pipes to fixed descriptors and runs ``verdict.run_job``, which forks the learner's
process into the sandbox (``sandbox.enter``: new namespaces, an unprivileged user, limits). No learner
code ever runs in the server itself. It is a child subreaper, reaps every child and reports their exits.

``stdio`` is the entry point inside a container: the job on stdin, the verdict on the original stdout.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

from .verdict import JOB_FD, VERDICT_FD, run_job
from .worker import describe_error, new_namespace, run_cells, transformer


def _preload(setups) -> list[str]:
    """Import the course and run the masters' setup cells once, so forks start warm. Returns problems."""
    import importlib
    import pkgutil

    problems = []
    import encoder_course

    for info in pkgutil.walk_packages(encoder_course.__path__, "encoder_course."):
        if info.name.startswith("encoder_course.course."):
            continue  # the course machinery (nbformat, ...) is not what a check uses
        try:
            importlib.import_module(info.name)
        except Exception as exc:
            problems.append(f"{info.name}: {type(exc).__name__}: {exc}")
    transform = transformer()
    for source in setups:
        for _, exc in run_cells(new_namespace(), [{"source": source, "label": "setup cell"}], transform):
            if exc is not None:
                problems.append(f"setup cell: {describe_error(exc, '<setup cell>')}")
    try:  # torch reads /proc/cpuinfo on its first operation; verdict processes have no /proc
        import torch

        (torch.ones(4, 4) @ torch.ones(4, 4)).sum().item()
        import torch.fx.experimental.symbolic_shapes  # noqa: F401 (autograd.grad imports it, and sympy, on first use)
    except Exception as exc:
        problems.append(f"torch: {exc}")
    import gc

    gc.collect()
    if hasattr(gc, "freeze"):
        gc.freeze()
    return problems


def _watch_parent(parent: int, children: set) -> None:
    """Belt and braces for the parent-death signal: when the grader is gone (this process re-parented,
    even while it is busy importing for a warm-up), kill every verdict process and exit."""
    import threading

    from . import sandbox

    def watch():
        while os.getppid() == parent:
            time.sleep(0.2)
        for pid in list(children):
            sandbox.kill_session(pid)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def serve(sock_fd: int) -> int:
    """The fork server: one verdict process per ``spawn`` request, each a fork of this warm process."""
    import select
    import socket

    from . import sandbox

    sock = socket.socket(fileno=sock_fd)
    sandbox.prctl(sandbox.PR_SET_DUMPABLE, 0)  # a learner's process of the same user cannot read or trace it
    sandbox.make_subreaper()
    sandbox.prctl(sandbox.PR_SET_PDEATHSIG, signal.SIGKILL)
    children = set()
    _watch_parent(os.getppid(), children)
    namespaces = sandbox.probe_namespaces()

    def send(obj):
        sock.send(json.dumps(obj).encode())

    send({"hello": True, "pid": os.getpid(), "namespaces": namespaces})
    while True:
        while True:  # reap every child, orphans re-parented to this subreaper included
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid in children:
                children.discard(pid)
                send({"exit": pid, "status": status})
        ready, _, _ = select.select([sock], [], [], 0.05)
        if not ready:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(sock, 1 << 20, 8)
        except OSError:
            data, fds = b"", []
        if not data:
            for pid in children:
                sandbox.kill_session(pid)
            return 0
        request = json.loads(data.decode())
        if request.get("op") == "warm":
            send({"warm": True, "problems": _preload(request.get("setup", []))})
            continue
        if request.get("op") != "spawn":
            continue
        if request["plan"].get("bwrap"):
            sandbox.clear_folder("/tmp")  # this server's own /tmp in bubblewrap: what the last job left
        server = os.getpid()
        pid = os.fork()
        if pid == 0:
            # First of all: die with the server, even if it died between the fork and this line.
            sandbox.prctl(sandbox.PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != server:
                os._exit(70)
            sock.close()
            _child(request, fds)
        for fd in fds:
            os.close(fd)
        children.add(pid)
        send({"id": request["id"], "pid": pid})


def _child(request, fds) -> None:
    """In a fork of the server: move the pipes to 3/4 (output on 1 and 2) and run the checker process."""
    code = 70
    try:
        import fcntl

        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 1000) for fd in fds]  # out of the way of 0..4
        job_r, verdict_w, out_w = high
        os.dup2(out_w, 1)
        os.dup2(out_w, 2)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for target, fd in zip((JOB_FD, VERDICT_FD), (job_r, verdict_w)):
            os.dup2(fd, target)
        os.closerange(VERDICT_FD + 1, 65536)
        for fd in (JOB_FD, VERDICT_FD):
            os.set_inheritable(fd, False)
        sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False, buffering=1)
        sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False, buffering=1)
        from . import sandbox

        run_job(JOB_FD, VERDICT_FD, sandbox.Plan(**request["plan"]), request["job_dir"])
    except BaseException as exc:
        try:
            os.write(2, f"checker process: {type(exc).__name__}: {exc}\n".encode())
        except OSError:
            pass
    os._exit(code)


def stdio() -> None:
    """In a container: the job on stdin, the verdict on the original stdout (the learner's process gets neither)."""
    from . import sandbox

    verdict_fd = os.dup(1)
    os.dup2(2, 1)
    os.set_inheritable(verdict_fd, False)
    job_r, job_w = os.pipe()
    job = sys.stdin.buffer.read()
    pid = os.fork()  # the job may be larger than a pipe holds
    if pid == 0:
        os.close(job_r)
        os.write(job_w, job)
        os._exit(0)
    os.close(job_w)
    del job
    run_job(job_r, verdict_fd, sandbox.Plan(), os.getcwd())
