"""Starting checker processes for the grader and reading their verdicts, with hard limits.

``VerdictRunner.run(job)`` starts one checker process (``encoder_course.course.verdict``, which starts
the learner's process below it) and returns an :class:`Outcome`. On Linux the checker processes are
forks of a warm fork server (torch and the course imported once per run, so a verdict costs a
fraction of a second); elsewhere each one is a fresh interpreter; with ``mode="container"`` each one
is a ``docker``/``podman run``. Only the checker process holds the verdict pipe.

The grader keeps the clock: it waits on the process's pipes with ``select`` until the verdict
arrives or the time is up (a stopped or busy process cannot hold it up), keeps at most
``output_cap`` bytes of what the process printed (the rest is read and dropped), and afterwards
kills the process's session and every process below the fork server.
"""

from __future__ import annotations

import json
import os
import secrets
import select
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field, replace

from . import sandbox

OUTPUT_CAP = 64 * 1024
VERDICT_CAP = 256 * 1024
HELLO_TIMEOUT = 180.0


@dataclass
class Outcome:
    """What one verdict process said (or why it said nothing)."""

    status: str  # passed, failed, not attempted, error, timed out
    message: str = ""
    notes: str = ""
    seconds: float = 0.0
    output: str = ""  # the first output_cap bytes it printed
    output_bytes: int = 0
    problems: list = field(default_factory=list)


class RunnerError(RuntimeError):
    """The verdict processes cannot be started at all (no container engine, fork server dead, ...)."""


def _nonblocking(fd: int) -> None:
    os.set_blocking(fd, False)


#: The processes of every runner of this grader that are in use (fork servers, verdict processes, container
#: clients): a runner's sweep for strays spares them and what is below them (``--jobs`` runs several).
_IN_USE: set[int] = set()
_IN_USE_LOCK = threading.RLock()  # held from a spawn until its pid is known, and through a sweep


def _use(pid: int, on: bool = True) -> None:
    with _IN_USE_LOCK:
        (_IN_USE.add if on else _IN_USE.discard)(pid)


class VerdictRunner:
    """Starts verdict processes for one grading run; use as a context manager.

    Several runners may work at once, one per thread (``grade --jobs``); each has its own fork server
    and folder.
    """

    def __init__(self, *, mode: str = "process", timeout: float = 60.0, memory_mb: int = 4096,
                 hide=(), hide_files=(), setups=(), output_cap: int = OUTPUT_CAP,
                 image: str = sandbox.IMAGE, fork_server: bool | None = None, verdict_api: str | None = None,
                 drop_privileges: bool = True, allow_namespaces: bool = True):
        self.mode, self.timeout, self.output_cap, self.image = mode, float(timeout), output_cap, image
        self.memory_mb, self.hide, self.hide_files = memory_mb, list(hide), list(hide_files)
        self.setups = list(setups)
        self.verdict_api = verdict_api
        self.drop_privileges, self.allow_namespaces = drop_privileges, allow_namespaces
        self.fork_server = sys.platform.startswith("linux") if fork_server is None else fork_server
        self.base = sandbox.make_run_base()
        self.plan: sandbox.Plan | None = None
        self.server: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self.engine: str | None = None
        self.counter = 0
        self.prefix: list[str] = []  # bubblewrap's command around the fork server (an ordinary user's run)
        self.inner: int | None = None  # the fork server's own pid (below bubblewrap's, with a prefix)
        self.stopping = False  # set by interrupt(): no new verdict process, no new server
        self.current: int | None = None  # the verdict process now running (its pid)
        self.baseline = {(p.pid, _created(p)) for p in sandbox.descendants()}
        self.was_subreaper = sandbox.make_subreaper()
        # A submission run as this user (no root, no bubblewrap) cannot open this process's pipes or memory
        # through /proc/<pid>/fd or /proc/<pid>/mem.
        sandbox.prctl(sandbox.PR_SET_DUMPABLE, 0)

    # -- lifecycle ------------------------------------------------------------------------------

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def start(self) -> None:
        """Get ready to run jobs (starts the fork server, or checks the container engine)."""
        if self.plan is not None:
            return
        cpu = int(self.timeout) + 10
        if self.mode == "container":
            self.engine, why = sandbox.container_engine()
            if not self.engine:
                raise RunnerError(
                    "--isolate container needs Docker or Podman, and none answers here (" + why + "). "
                    "Start the engine, or grade with --isolate process (the default).")
            self.plan = sandbox.Plan(memory_mb=self.memory_mb, cpu_s=cpu)
            return
        options = dict(hide=self.hide, hide_files=self.hide_files, memory_mb=self.memory_mb, cpu_s=cpu,
                       drop_privileges=self.drop_privileges)
        if self.fork_server and self.drop_privileges and self.allow_namespaces and os.geteuid() != 0:
            bwrap = sandbox.find_bwrap()  # an ordinary user: the whole fork server runs in bubblewrap
            if bwrap:
                self.plan = sandbox.make_plan(**options, bwrap=bwrap)
                self.prefix = sandbox.bwrap_command(self.plan, self.base)
                self._start_server()
                return
        namespaces = False
        if self.fork_server:
            namespaces = self._start_server()
        self.plan = sandbox.make_plan(**options, namespaces_available=namespaces and self.allow_namespaces)
        if self.plan.uid is not None:
            os.chown(self.base, 0, 0)

    def _start_server(self) -> bool:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        home = os.path.join(self.base, "server")
        os.makedirs(home, 0o700, exist_ok=True)
        log = open(os.path.join(self.base, "server.log"), "wb")
        try:
            self.server = subprocess.Popen(
                self.prefix + [sys.executable, "-s", "-m", "encoder_course.course.verdict", "serve",
                               str(child.fileno())],
                pass_fds=[child.fileno()], env=sandbox.clean_environment(home), cwd=home,
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        finally:
            child.close()
            log.close()
        self.sock = parent
        _use(self.server.pid)
        hello = self._receive(HELLO_TIMEOUT, lambda m: m.get("hello"))
        if hello is None:
            raise RunnerError("the verdict fork server did not start: " + self._server_log())
        self.inner = self.server.pid
        if self.prefix:  # the server's pid inside bubblewrap's PID namespace means nothing here: find it
            for proc in sandbox.descendants(self.server.pid):
                try:
                    if "serve" in proc.cmdline() and "encoder_course.course.verdict" in proc.cmdline():
                        self.inner = proc.pid
                except Exception:
                    pass
        self._send({"op": "warm", "setup": self.setups})
        warm = self._receive(HELLO_TIMEOUT * 2, lambda m: m.get("warm"))
        if warm is None:
            raise RunnerError("the verdict fork server did not get ready: " + self._server_log())
        self.warm_problems = warm.get("problems", [])
        return bool(hello.get("namespaces"))

    def _restart_server(self) -> None:
        """The fork server died (or its socket did): kill what is left of it and start a new one."""
        if self.server is not None:
            self._kill_below(self.server.pid)
            sandbox.kill_session(self.server.pid)
            _use(self.server.pid, False)
            self.server = None
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        self._start_server()

    def _server_log(self) -> str:
        try:
            with open(os.path.join(self.base, "server.log"), "rb") as handle:
                text = handle.read()[-2000:].decode("utf-8", "replace").strip()
        except OSError:
            text = ""
        return text.splitlines()[-1] if text else "no message"

    def _send(self, obj, fds=()) -> None:
        data = json.dumps(obj).encode()
        if fds:
            socket.send_fds(self.sock, [data], list(fds))
        else:
            self.sock.send(data)

    def _receive(self, timeout: float, want):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.sock], [], [], min(0.5, max(0.0, deadline - time.monotonic())))
            if not ready:
                if self.server is not None and self.server.poll() is not None:
                    return None
                continue
            data = self.sock.recv(1 << 20)
            if not data:
                return None
            message = json.loads(data.decode())
            if want(message):
                return message
        return None

    def interrupt(self) -> None:
        """Stop the run from another thread: kill the verdict process now running (its job ends at once
        with its outcome) and start no other. Call :meth:`close` once the job has returned."""
        self.stopping = True
        pid = self.current
        if self.prefix and self.inner is not None:
            self._kill_below(self.inner)
        elif pid is not None:
            sandbox.kill_session(pid)
            sandbox.kill_tree(sandbox.descendants(pid))

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.server is not None:
            self._kill_below(self.server.pid)
            sandbox.kill_session(self.server.pid)
            try:
                self.server.kill()
                self.server.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
            _use(self.server.pid, False)
            self.server = None
        self._sweep()
        sandbox.remove_tree(self.base)
        if self.was_subreaper is False:
            sandbox.make_subreaper(False)

    # -- killing ---------------------------------------------------------------------------------

    def _kill_below(self, pid: int) -> None:
        sandbox.kill_tree(sandbox.descendants(pid))

    def _sweep(self) -> None:
        """Kill every process below the grader that was not there when the run began, but the servers and
        the verdict processes in use (this runner's and the other runners') and what is below them."""
        with _IN_USE_LOCK:
            keep = set(_IN_USE) | ({self.server.pid} if self.server is not None else set())
            # Ancestry is read per process, at the time it is judged: a process started during the
            # sweep by one in use (the PID namespace's first process, say) is spared too.
            stray = [p for p in sandbox.descendants()
                     if (p.pid, _created(p)) not in self.baseline and not _below(p, keep)]
            sandbox.kill_tree(stray)

    # -- one job ---------------------------------------------------------------------------------

    def run(self, job: dict, submission: bytes | None = None, filename: str = "submission.ipynb") -> Outcome:
        """Run one verdict process for ``job`` and return what it said; never raises for the job's sake."""
        if self.stopping:
            return Outcome("error", "the grading run was stopped before this exercise")
        self.start()
        job = dict(job)
        if self.verdict_api:
            job["verdict_api"] = self.verdict_api
        started = time.monotonic()
        if self.mode == "container":
            outcome = self._run_container(job)
        else:
            if self.fork_server and (self.server is None or self.server.poll() is not None or self.sock is None):
                self._restart_server()
            job_dir = sandbox.make_job_dir(self.base, self.plan, submission, filename)
            try:
                outcome = self._run_process(job, job_dir)
            finally:
                if self.server is not None:
                    self._kill_below(self.inner or self.server.pid)
                    sandbox.resume(self.inner or self.server.pid)  # a learner's SIGSTOP holds up no later job
                self._sweep()
                sandbox.remove_tree(job_dir)
        outcome.seconds = time.monotonic() - started
        return outcome

    def _run_process(self, job, job_dir) -> Outcome:
        job_r, job_w = os.pipe()
        verdict_r, verdict_w = os.pipe()
        out_r, out_w = os.pipe()
        theirs = [job_r, verdict_w, out_w]
        proc = None
        pid = None
        try:
            if self.fork_server:
                self.counter += 1
                with _IN_USE_LOCK:  # no other runner's sweep may see the new process before it is known
                    self._send({"op": "spawn", "id": self.counter, "plan": self.plan.to_json(),
                                "job_dir": job_dir}, theirs)
                    spawned = self._receive(HELLO_TIMEOUT, lambda m: m.get("id") == self.counter and "pid" in m)
                    if spawned is not None and not self.prefix:  # (inside bubblewrap, a pid of its own namespace)
                        pid = self.current = spawned["pid"]
                        _use(pid)
                    elif spawned is not None:
                        pid = spawned["pid"]
            else:
                plan = replace(self.plan, namespaces=False)
                proc = subprocess.Popen(
                    [sys.executable, "-s", "-m", "encoder_course.course.verdict", "run",
                     str(job_r), str(verdict_w), json.dumps(plan.to_json()), job_dir],
                    pass_fds=[job_r, verdict_w], stdin=subprocess.DEVNULL, stdout=out_w, stderr=out_w,
                    env=sandbox.clean_environment(job_dir), cwd=job_dir, start_new_session=True)
                pid = self.current = proc.pid
                _use(pid)
        except Exception as exc:
            for fd in theirs + [job_w, verdict_r, out_r]:
                os.close(fd)
            return Outcome("error", f"the verdict process could not start: {type(exc).__name__}: {exc}")
        for fd in theirs:
            os.close(fd)
        try:
            return self._collect(job, job_w, verdict_r, out_r, proc,
                                 child=pid if self.fork_server else None)
        finally:
            self.current = None
            if proc is not None:
                sandbox.kill_session(proc.pid)
                sandbox.kill_tree(sandbox.descendants(proc.pid))
                try:
                    proc.kill()
                    proc.wait(timeout=5)
                except (OSError, subprocess.TimeoutExpired):
                    pass
                _use(proc.pid, False)

    def _run_container(self, job) -> Outcome:
        name = f"encoder-course-{secrets.token_hex(6)}"
        cmd = sandbox.container_command(self.engine, self.image, name, self.plan)
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        _use(proc.pid)
        self.current = proc.pid
        # _collect closes the descriptors it is given: give it copies and close Popen's own now, so no
        # descriptor is closed twice (with --jobs, a number closed twice may by then be another job's).
        stdin, out, err = (os.dup(f.fileno()) for f in (proc.stdin, proc.stdout, proc.stderr))
        for f in (proc.stdin, proc.stdout, proc.stderr):
            f.close()
        try:
            return self._collect(job, stdin, out, err, proc)
        finally:
            subprocess.run([self.engine, "kill", name], capture_output=True, timeout=30)
            sandbox.kill_session(proc.pid)
            proc.kill()
            proc.wait(timeout=30)
            _use(proc.pid, False)
            self.current = None

    def _collect(self, job, job_w, verdict_r, out_r, proc, child=None) -> Outcome:
        """Feed the job, read output and verdict until a verdict, the end of the process, or the deadline."""
        pending = json.dumps(job).encode()
        for fd in (job_w, verdict_r, out_r):
            _nonblocking(fd)
        deadline = time.monotonic() + self.timeout
        verdict_buf, output, output_bytes = b"", bytearray(), 0
        exited, verdict_eof, out_eof = False, False, False
        found, invalid = None, 0
        job_open, gone_at = True, None
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                readers = [fd for fd, eof in ((verdict_r, verdict_eof), (out_r, out_eof)) if not eof]
                if self.fork_server and self.mode != "container" and self.sock is not None:
                    readers.append(self.sock.fileno())
                writers = [job_w] if job_open else []
                if not readers and not writers:
                    break
                ready_r, ready_w, _ = select.select(readers, writers, [], min(0.2, remaining))
                if job_w in ready_w and job_open:
                    try:
                        written = os.write(job_w, pending[:65536])
                        pending = pending[written:]
                    except (BlockingIOError, InterruptedError):
                        pass
                    except OSError:
                        pending = b""
                    if not pending:
                        os.close(job_w)
                        job_open = False
                for fd in ready_r:
                    if self.sock is not None and fd == self.sock.fileno():
                        data = self.sock.recv(1 << 20)
                        if not data:
                            self.sock = None
                            continue
                        message = json.loads(data.decode())
                        if message.get("id") == self.counter and "pid" in message:
                            child = message["pid"]
                            if not self.prefix:
                                _use(child)
                        elif "exit" in message and message["exit"] == child:
                            exited = True
                        continue
                    try:
                        data = os.read(fd, 65536)
                    except (BlockingIOError, InterruptedError):
                        continue
                    if fd == out_r:
                        if not data:
                            out_eof = True
                        output_bytes += len(data)
                        if len(output) < self.output_cap:
                            output += data[: self.output_cap - len(output)]
                    else:
                        if not data:
                            verdict_eof = True
                        elif len(verdict_buf) < VERDICT_CAP:
                            verdict_buf += data
                if verdict_buf:
                    found, invalid = _parse_verdicts(verdict_buf)
                    if found is not None:
                        break
                if gone_at is None and (exited or (proc is not None and proc.poll() is not None)):
                    gone_at = time.monotonic()
                if gone_at is not None and (verdict_eof or time.monotonic() - gone_at > 0.5):
                    break  # ended; a process it started may still hold the pipe, but it is killed next
        finally:
            if job_open:
                os.close(job_w)
            for fd in (verdict_r, out_r):
                try:
                    os.close(fd)
                except OSError:
                    pass
            if child is not None and not self.prefix:
                sandbox.kill_session(child)
                _use(child, False)
        text = bytes(output).decode("utf-8", "replace")
        if found is not None:
            return Outcome(found["status"], _text(found.get("message", "")), _text(found.get("notes", "")),
                           output=text, output_bytes=output_bytes)
        if time.monotonic() >= deadline:
            return Outcome("timed out", f"no verdict within {self.timeout:g} s (the process was killed)",
                           output=text, output_bytes=output_bytes)
        why = "the checker process ended without a verdict"
        if invalid:
            why += " (its verdict line could not be read)"
        last = [line for line in text.strip().splitlines() if line.strip()]
        if last:
            why += f"; its last output: {last[-1][:200]}"
        return Outcome("error", why, output=text, output_bytes=output_bytes)


def _text(value: str) -> str:
    """A message from the verdict process made writable: a lone surrogate (from an exception's text,
    say) becomes its escape, ``\\ud800``, so no file or terminal write of it can fail."""
    return value.encode("utf-8", "backslashreplace").decode("utf-8")


def _below(proc, pids: set) -> bool:
    """Whether the psutil process ``proc`` is one of ``pids`` or below one of them."""
    try:
        return proc.pid in pids or any(parent.pid in pids for parent in proc.parents())
    except Exception:  # it ended meanwhile: nothing to kill
        return True


def _parse_verdicts(buf: bytes):
    """``(verdict or None, number of other lines)``: a verdict is a JSON line with a status and text."""
    found, invalid = None, 0
    lines = buf.split(b"\n")
    for line in lines[:-1]:  # the last piece is not complete yet
        try:
            message = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):  # not JSON, or nested to exhaust the parser
            invalid += 1
            continue
        if (isinstance(message, dict) and message.get("status") in ("passed", "failed", "not attempted", "error")
                and isinstance(message.get("message", ""), str) and isinstance(message.get("notes", ""), str)):
            if found is None:
                found = message
        else:
            invalid += 1
    return found, invalid


def _created(proc) -> float:
    try:
        return proc.create_time()
    except Exception:
        return 0.0
