"""The checker processes of ``encoder-course grade``: started by the grader, judging one exercise each.

``VerdictRunner.run(job)`` (in the grader) has a checker process judge one exercise: a fork of the runner's
warm fork server (``serve``), or with ``--isolate container`` a ``docker``/``podman run`` (``stdio``). The
checker process forks the learner's process (``worker.py``, in the sandbox of ``sandbox.enter``), calls the
real ``checks.verdict(key, candidate)`` itself with a stand-in for the learner's object (``remote.py``)
that reaches it only through plain data, and writes the verdict as one JSON line on its verdict pipe, which
only it holds. No learner code runs in it (not even a ``__hash__`` or a ``__torch_function__`` of theirs),
and the learner's process cannot read or trace it: whatever it does costs it its own exercise only. The
grader keeps the clock: it reads the verdict pipe and the output (keeping ``OUTPUT_CAP`` bytes) until the
verdict pipe closes or the time is up, whatever the processes do, then kills everything below the server.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from . import sandbox, withhold

OUTPUT_CAP = 64 * 1024
MEMORY_POLL_S = 0.2  # how often a job's processes' memory is added up
VERDICT_CAP = 256 * 1024
START_TIMEOUT = 360.0
STATUSES = ("passed", "failed", "not attempted", "error")
MESSAGE_CHARS, NOTES_CHARS = 4000, 2000


@dataclass
class Outcome:
    """What one checker process said (or why it said nothing)."""

    status: str  # passed, failed, not attempted, error, timed out
    message: str = ""
    notes: str = ""
    output_bytes: int = 0  # how much it printed


class RunnerError(RuntimeError):
    """The checker processes cannot be started at all (no container engine, the fork server fails, ...)."""


class VerdictRunner:
    """Runs the checker processes of one grading run, one at a time; ``grade --jobs`` has several runners,
    each with its own fork server and folder. ``image`` is the container's, for the plan's container mode."""

    def __init__(self, plan: sandbox.Plan, *, timeout: float = 60.0, setups=(), image: str = sandbox.IMAGE):
        self.plan, self.timeout, self.setups, self.image = plan, float(timeout), list(setups), image
        self.base = sandbox.make_run_base()
        self.server: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self.inner: int | None = None  # the fork server's pid (in bubblewrap, below bubblewrap's)
        self.engine: str | None = None
        self.container: subprocess.Popen | None = None  # the container's client now running
        self.stopping = False  # set by interrupt(): no new checker process

    def start(self) -> None:
        """Get ready for jobs: find the container engine, or (re)start the fork server."""
        if self.plan.mode == "container":
            if self.engine is None:
                self.engine, why = sandbox.container_engine()
                if not self.engine:
                    raise RunnerError(f"--isolate container needs Docker or Podman, and none answers here ({why}). "
                                      "Start the engine, or grade with --isolate process (the default).")
            return
        if self.server is not None and self.server.poll() is None:
            return
        self._stop_server()  # it died (a learner's process of the same user may kill it): start another
        self.sock, child = socket.socketpair()
        home = os.path.join(self.base, "server")
        os.makedirs(home, 0o700, exist_ok=True)
        prefix = sandbox.bwrap_command(self.plan) if self.plan.mode == "bwrap" else []
        with open(os.path.join(self.base, "server.log"), "wb") as log:
            self.server = subprocess.Popen(
                prefix + [sys.executable, "-s", "-m", __spec__.name, "serve", str(child.fileno())],
                pass_fds=[child.fileno()], env=sandbox.clean_environment("/tmp" if prefix else home), cwd=home,
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        child.close()
        try:
            # In bubblewrap the server sees the stubs of the course's answers only: it gets the real modules here.
            sources = withhold.real_sources() if prefix else {}
            send(self.sock, {"setup": self.setups, "plan": asdict(self.plan), "sources": sources})
            if not select.select([self.sock], [], [], START_TIMEOUT)[0] or not receive(self.sock)[0]:
                raise EOFError
            # In bubblewrap the server is its sandbox's PID 1, bubblewrap's only child.
            self.inner = sandbox.descendants(self.server.pid)[0].pid if prefix else self.server.pid
        except (OSError, ValueError, EOFError, IndexError):
            log = Path(self.base, "server.log").read_bytes()[-2000:].decode("utf-8", "replace").strip().splitlines()
            why = log[-1] if log else "no message"
            raise RunnerError(f"the checkers' fork server did not start: {why}") from None

    def _stop_server(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.server is not None:
            sandbox.kill_tree(sandbox.descendants(self.server.pid))
            self.server.kill()
            self.server.wait()
            self.server = self.inner = None

    def _kill_jobs(self) -> None:
        """Kill every process of the current job: the container's client, or everything below the fork server
        (which a learner's process of the same user may have stopped: it goes on)."""
        container, inner = self.container, self.inner
        if container is not None:
            container.kill()
        if inner is not None:
            sandbox.kill_all_below(inner)
            with contextlib.suppress(OSError):
                os.kill(inner, signal.SIGCONT)

    def interrupt(self) -> None:
        """Stop the run from another thread: kill the job now running (it returns at once) and start no other."""
        self.stopping = True
        self._kill_jobs()

    def close(self) -> None:
        self._stop_server()
        shutil.rmtree(self.base, ignore_errors=True)

    # -- one job ---------------------------------------------------------------------------------

    def run(self, job: dict) -> Outcome:
        """One checker process judges ``job`` (the exercise, the setup and the learner's cells); never raises
        for the job's sake."""
        if self.stopping:
            return Outcome("error", "the grading run was stopped before this exercise")
        self.start()
        job_dir = tempfile.mkdtemp(prefix="job-", dir=self.base)  # (the learner's folder where no private /tmp is)
        try:
            if self.plan.mode == "container":
                return self._run_container(job, "encoder-course-" + os.path.basename(job_dir))
            (verdict_r, verdict_w), (out_r, out_w) = os.pipe(), os.pipe()
            try:
                try:
                    send(self.sock, {"job": job, "job_dir": job_dir}, [verdict_w, out_w])
                finally:  # the server has its own copies
                    os.close(verdict_w)
                    os.close(out_w)
                return self._collect(verdict_r, out_r)
            except OSError as exc:
                return Outcome("error", f"the checker process could not start: {exc}")
            finally:
                os.close(verdict_r)
                os.close(out_r)
        finally:
            self._kill_jobs()
            shutil.rmtree(job_dir, ignore_errors=True)

    def _run_container(self, job: dict, name: str) -> Outcome:
        with tempfile.TemporaryFile() as stdin:
            stdin.write(json.dumps(job).encode())
            stdin.seek(0)
            self.container = subprocess.Popen(sandbox.container_command(self.engine, self.image, name, self.plan),
                                              stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                              start_new_session=True)
        try:
            return self._collect(self.container.stdout.fileno(), self.container.stderr.fileno())
        finally:
            subprocess.run([self.engine, "kill", name], capture_output=True, timeout=30)
            self.container.kill()
            self.container.communicate()
            self.container = None

    def _collect(self, verdict_r: int, out_r: int) -> Outcome:
        """Read the verdict and the output until the verdict pipe closes (the checker has ended) or the time is up."""
        deadline = time.monotonic() + self.timeout
        line, output, printed = b"", b"", 0
        reading = [verdict_r, out_r]
        watched = self.inner if self.plan.mode != "container" else None  # (a container has its own limit)
        while verdict_r in reading and time.monotonic() < deadline:
            # The memory limit holds for the job's processes together (the checker, the learner's process and
            # whatever it starts), measured every MEMORY_POLL_S: each process alone is limited by the kernel.
            if watched is not None and sandbox.tree_memory_mb(watched) > self.plan.memory_mb:
                self._kill_jobs()
                return Outcome("failed", f"the answer's processes used more than {self.plan.memory_mb} MB of memory "
                               "together (the limit holds for all of them at once); it was stopped", "", printed)
            wait = min(MEMORY_POLL_S, max(0.0, deadline - time.monotonic()))
            for fd in select.select(reading, [], [], wait)[0]:
                data = os.read(fd, 65536)
                if not data:
                    reading.remove(fd)
                elif fd == out_r:
                    printed += len(data)
                    output += data[:OUTPUT_CAP - len(output)]
                elif len(line) < VERDICT_CAP:
                    line += data
        if watched is not None and sandbox.tree_memory_mb(watched) > self.plan.memory_mb:  # (a verdict that came
            self._kill_jobs()  # between two looks at the memory counts no more than one before them)
            return Outcome("failed", f"the answer's processes used more than {self.plan.memory_mb} MB of memory "
                           "together (the limit holds for all of them at once); it was stopped", "", printed)
        text = output.decode("utf-8", "replace")
        found = parse_verdict(line)
        if found is not None:
            return Outcome(found["status"], found["message"], found["notes"], printed)
        if verdict_r in reading:
            return Outcome("timed out", f"no verdict within {self.timeout:g} s (the process was killed)", "", printed)
        why = "the checker process ended without a verdict" + (" (its verdict line could not be read)" if line else "")
        last = [s for s in text.splitlines() if s.strip()]
        return Outcome("error", why + (f"; its last output: {last[-1][:200]}" if last else ""), "", printed)


def parse_verdict(line: bytes) -> dict | None:
    """The verdict in the first line of ``line``: a JSON object with a known status, a message and notes."""
    if b"\n" not in line:  # not a whole line yet
        return None
    try:
        found = json.loads(line.split(b"\n", 1)[0].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):  # not JSON, or nested to exhaust the parser
        return None
    ok = isinstance(found, dict) and found.get("status") in STATUSES and all(
        isinstance(found.get(k), str) for k in ("message", "notes"))
    return found if ok else None

# ----------------------------------------------------------------------------------------------
# The fork server and the checker process (no learner code runs in either)


def _say(text: str) -> None:
    with contextlib.suppress(OSError):
        os.write(2, (text + "\n").encode("utf-8", "replace"))


def start_learner(serve, plan=None, job_dir: str | None = None) -> tuple[int, int, int]:
    """Fork the learner's process, which runs ``serve()`` (in ``plan``'s sandbox; the tests give none) with
    its request and reply pipes on descriptors 3 and 4 and no other; returns (its pid, request fd, reply fd)."""
    import fcntl

    from . import worker

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
    data = bytearray(data)
    while not data.endswith(b"\n"):
        more = sock.recv(1 << 20)
        if not more:
            raise EOFError("the other side closed the socket")
        data += more
    return json.loads(data), fds


def _preload(setups) -> None:
    """Import the course, run the solutions' setup cells and torch once, so that every fork starts warm."""
    import gc
    import importlib
    import pkgutil

    import encoder_course

    from . import worker

    machinery = tuple(f"encoder_course.{room}" for room in ("cli", "course", "grading", "notebook_tools", "quizzes",
                                                            "site", "workspace"))
    for info in pkgutil.walk_packages(encoder_course.__path__, "encoder_course."):
        if not info.name.startswith(machinery):  # (the machinery is not what a check uses)
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
    sandbox.prctl(sandbox.PR_SET_PDEATHSIG, signal.SIGKILL)  # it dies with the grader
    sandbox.prctl(sandbox.PR_SET_DUMPABLE, 0)  # a learner's process of the same user cannot read or trace it
    sandbox.prctl(sandbox.PR_SET_CHILD_SUBREAPER, 1)  # what a learner's process leaves behind stays below
    sock = socket.socket(fileno=sock_fd)
    start, _ = receive(sock)
    plan = sandbox.Plan(**start["plan"])
    finder = withhold.import_real(start.pop("sources", {}))
    _preload(start["setup"])
    sys.meta_path.remove(finder)
    finder.sources.clear()
    del start, finder
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
                run_job(request["job"], verdict_w, plan, request["job_dir"])
            except BaseException as exc:
                _say(f"checker process: {type(exc).__name__}: {exc}")
            os._exit(70)
        for fd in fds:
            os.close(fd)


def stdio() -> None:
    """In a container: the job on stdin, the verdict on the original stdout (the learner's process gets neither)."""
    verdict_fd = os.dup(1)
    os.dup2(2, 1)
    run_job(json.load(sys.stdin), verdict_fd, sandbox.Plan(mode="container"), os.getcwd())


if __name__ == "__main__":  # started by the grader: `serve FD` (a runner's fork server) or `stdio` (a container)
    if sys.argv[1:2] == ["serve"]:
        serve(int(sys.argv[2]))
    stdio()
