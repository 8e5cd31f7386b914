"""Run a notebook in a fresh kernel, cell by cell, and collect its outputs (used by the notebook tests).

Why not ``nbclient``? Its asyncio message loop waits on the kernel's reply with no time limit, and
with the pinned Jupyter stack it occasionally never wakes up although the kernel has replied and
is idle (seen here in about one run in ten). This runner uses jupyter_client's blocking client,
as nbval does, and polls in short steps, so a run always ends by its deadline.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

POLL_S = 0.5
START_ATTEMPTS = 3


@dataclass
class RunResult:
    """What happened when a notebook ran.

    Attributes:
        seconds: wall time from kernel start to the end of the last cell run.
        peak_rss: the kernel's peak resident memory in bytes (with its child processes), 0 if unknown.
        cpu_seconds: processor time the kernel used (with its child processes), 0 if unknown: unlike
            ``seconds``, barely changed by a busy machine, so it is what a test may bound.
        executed: indices of the cells that finished.
        stopped_at: index of the cell that was running when the run stopped early, else None.
        stop_reason: ``"timed out"``, ``"kernel died"``, ``"error"`` or None.
    """

    seconds: float = 0.0
    peak_rss: int = 0
    cpu_seconds: float = 0.0
    executed: list[int] = field(default_factory=list)
    stopped_at: int | None = None
    stop_reason: str | None = None


class _PeakMemory(threading.Thread):
    def __init__(self, pid: int | None):
        super().__init__(daemon=True)
        self.pid, self.peak, self.cpu, self.stop = pid, 0, 0.0, threading.Event()

    def run(self):
        try:
            import psutil
        except ImportError:
            return
        while self.pid and not self.stop.is_set():
            try:
                proc = psutil.Process(self.pid)
                family = [proc, *proc.children(recursive=True)]
                self.peak = max(self.peak, sum(p.memory_info().rss for p in family))
                self.cpu = max(self.cpu, sum(sum(p.cpu_times()[:2]) for p in family))
            except psutil.Error:
                pass
            self.stop.wait(0.1)


def _add_output(outputs: list, msg: dict, nbformat) -> None:
    kind, content = msg["header"]["msg_type"], msg["content"]
    if kind == "stream":
        if outputs and outputs[-1].get("output_type") == "stream" and outputs[-1]["name"] == content["name"]:
            outputs[-1]["text"] += content["text"]
        else:
            outputs.append(nbformat.v4.new_output("stream", name=content["name"], text=content["text"]))
    elif kind in ("display_data", "execute_result"):
        out = nbformat.v4.new_output(kind, data=content.get("data", {}), metadata=content.get("metadata", {}))
        if kind == "execute_result":
            out["execution_count"] = content.get("execution_count")
        outputs.append(out)
    elif kind == "error":
        outputs.append(nbformat.v4.new_output("error", ename=content.get("ename", ""),
                                              evalue=content.get("evalue", ""),
                                              traceback=content.get("traceback", [])))
    elif kind == "clear_output":
        outputs.clear()


def run_notebook(nb, *, timeout: float, cwd: str | Path, kernel_name: str = "python3",
                 stop_on_error: bool = False, startup_timeout: float = 120.0) -> RunResult:
    """Execute every code cell of ``nb`` (a NotebookNode, changed in place) in a new kernel.

    Args:
        nb: the notebook; each code cell gets fresh ``outputs`` and ``execution_count``.
        timeout: seconds allowed for the whole run, kernel start included.
        cwd: the kernel's working directory.
        kernel_name: the Jupyter kernel to start.
        stop_on_error: stop at the first cell that raises (as Run All in JupyterLab does).
        startup_timeout: seconds allowed for the kernel to start.
    """
    import nbformat

    result = RunResult()
    start = time.monotonic()
    deadline = start + timeout
    try:
        km, kc, memory = _start_kernel(kernel_name, cwd, min(startup_timeout, timeout), deadline)
    except _KernelDidNotStart as failure:
        result.seconds = time.monotonic() - start
        result.stop_reason, result.stopped_at = failure.reason, 0
        return result
    try:
        for index, cell in enumerate(nb.cells):
            if cell.get("cell_type") != "code":
                continue
            cell["outputs"], cell["execution_count"] = [], None
            status = _run_cell(kc, km, cell, deadline, nbformat)
            if status == "ok" or (status == "error" and not stop_on_error):
                result.executed.append(index)
                continue
            result.stopped_at, result.stop_reason = index, status
            break
        return result
    finally:
        result.seconds = time.monotonic() - start
        memory.stop.set()
        memory.join()
        result.peak_rss, result.cpu_seconds = memory.peak, memory.cpu
        kc.stop_channels()
        km.shutdown_kernel(now=True)


class _KernelDidNotStart(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _start_kernel(kernel_name: str, cwd, startup_timeout: float, deadline: float):
    """Start a kernel and wait until it answers; returns ``(km, kc, memory_thread)``.

    A kernel can die at start with "Address already in use": jupyter_client picks its five ports by
    binding to port 0 and letting go, and another process (a second test worker, or any outgoing
    connection) can take one of them before the kernel binds it. A kernel that dies at start is
    therefore started again on fresh ports, up to ``START_ATTEMPTS`` times. When none answers,
    raises ``_KernelDidNotStart`` with the reason ``"kernel died"`` or ``"timed out"``.
    """
    from jupyter_client.manager import KernelManager

    reason = "kernel died"
    for _ in range(START_ATTEMPTS):
        km = KernelManager(kernel_name=kernel_name)
        km.start_kernel(cwd=str(cwd))
        memory = _PeakMemory(getattr(km.provisioner, "pid", None))
        memory.start()
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=min(startup_timeout, max(1.0, deadline - time.monotonic())))
            return km, kc, memory
        except RuntimeError:  # jupyter_client raises RuntimeError both for a death and for a timeout
            reason = "kernel died" if not km.is_alive() else "timed out"
            memory.stop.set()
            memory.join()
            kc.stop_channels()
            km.shutdown_kernel(now=True)
            if reason == "timed out" or time.monotonic() >= deadline:
                break
    raise _KernelDidNotStart(reason)


def _run_cell(kc, km, cell, deadline: float, nbformat) -> str:
    """Run one cell; returns ``"ok"``, ``"error"``, ``"timed out"`` or ``"kernel died"``."""
    msg_id = kc.execute(cell["source"], store_history=True, allow_stdin=False)
    idle = False
    while not idle:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return "timed out"
        try:
            msg = kc.get_iopub_msg(timeout=min(POLL_S, remaining))
        except queue.Empty:
            if not km.is_alive():
                return "kernel died"
            continue
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind = msg["header"]["msg_type"]
        if kind == "status" and msg["content"].get("execution_state") == "idle":
            idle = True
        elif kind == "execute_input":
            cell["execution_count"] = msg["content"].get("execution_count")
        else:
            _add_output(cell["outputs"], msg, nbformat)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return "timed out"
        try:
            reply = kc.get_shell_msg(timeout=min(POLL_S, remaining))
        except queue.Empty:
            if not km.is_alive():
                return "kernel died"
            continue
        if reply.get("parent_header", {}).get("msg_id") == msg_id:
            return "error" if reply["content"].get("status") == "error" else "ok"
