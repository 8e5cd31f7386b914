"""Starting checker processes for the grader and reading their verdicts, with hard limits.

``VerdictRunner.run(job)`` has a checker process (``verdict.py``) judge one exercise: a fork of the
runner's warm fork server, or with ``--isolate container`` a ``docker``/``podman run``. The grader keeps
the clock: it reads the verdict pipe and the output (keeping ``OUTPUT_CAP`` bytes) until the verdict pipe
closes or the time is up, whatever the processes do, then kills everything below the fork server.
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
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from . import sandbox, verdict

OUTPUT_CAP = 64 * 1024
VERDICT_CAP = 256 * 1024
START_TIMEOUT = 360.0
STATUSES = ("passed", "failed", "not attempted", "error")


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
        prefix = sandbox.bwrap_command(self.plan, self.base) if self.plan.mode == "bwrap" else []
        with open(os.path.join(self.base, "server.log"), "wb") as log:
            self.server = subprocess.Popen(
                prefix + [sys.executable, "-s", "-m", "encoder_course.course.verdict", "serve", str(child.fileno())],
                pass_fds=[child.fileno()], env=sandbox.clean_environment(home), cwd=home,
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        child.close()
        try:
            verdict.send(self.sock, {"setup": self.setups, "plan": asdict(self.plan)})
            if not select.select([self.sock], [], [], START_TIMEOUT)[0] or not verdict.receive(self.sock)[0]:
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
            sandbox.kill_tree(sandbox.descendants(inner))
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
        job_dir = sandbox.make_job_dir(self.base, self.plan)
        job_file = job_dir + ".json"
        with open(job_file, "w", encoding="utf-8") as handle:
            json.dump(job, handle)
        try:
            if self.plan.mode == "container":
                return self._run_container(job_dir, job_file)
            (verdict_r, verdict_w), (out_r, out_w) = os.pipe(), os.pipe()
            try:
                try:
                    verdict.send(self.sock, {"job": job_file, "job_dir": job_dir}, [verdict_w, out_w])
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
            os.unlink(job_file)

    def _run_container(self, job_dir: str, job_file: str) -> Outcome:
        name = "encoder-course-" + os.path.basename(job_dir)
        with open(job_file, "rb") as job:
            self.container = subprocess.Popen(sandbox.container_command(self.engine, self.image, name, self.plan),
                                              stdin=job, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
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
        while verdict_r in reading and time.monotonic() < deadline:
            for fd in select.select(reading, [], [], max(0.0, deadline - time.monotonic()))[0]:
                data = os.read(fd, 65536)
                if not data:
                    reading.remove(fd)
                elif fd == out_r:
                    printed += len(data)
                    output += data[:OUTPUT_CAP - len(output)]
                elif len(line) < VERDICT_CAP:
                    line += data
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
