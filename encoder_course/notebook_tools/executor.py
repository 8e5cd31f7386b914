"""Run a notebook in a fresh kernel, cell by cell, and collect its outputs: the course's one notebook executor.

``encoder-course execute`` (which stores the outputs), ``encoder-course budgets``, the self-check and the
notebook tests all run notebooks with :func:`run_notebook`. It stores what nbclient would: each cell's
outputs and execution count, and the state of every widget the run made (``metadata.widgets``, which
the website edition draws its widgets from), with each Output widget holding what it displayed.

Why not ``nbclient``? Its asyncio message loop waits on the kernel's reply with no time limit, and
with the pinned Jupyter stack it occasionally never wakes up although the kernel has replied and
is idle (seen here in about one run in ten). This runner uses jupyter_client's blocking client,
as nbval does, and polls in short steps, so a run always ends by its deadline.
"""

from __future__ import annotations

import base64
import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

POLL_S = 0.5
START_ATTEMPTS = 3
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


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
        first_output_s: wall time from kernel start to the end of the first cell that shows something (what
            a learner waits for after Run All), None when no cell does.
    """

    seconds: float = 0.0
    peak_rss: int = 0
    cpu_seconds: float = 0.0
    executed: list[int] = field(default_factory=list)
    first_output_s: float | None = None
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


class _Outputs:
    """Turns a run's iopub messages into cell outputs and widget state, as a front end (and nbclient) would.

    Widget models (comms opened with the target ``jupyter.widget``) keep their latest state, so the notebook
    stores it as JupyterLab's "save widget state" does. An Output widget shows what the kernel displays
    while it is capturing (``with out:``): its outputs go into that widget's state instead of the cell's,
    and are sent back to the kernel, as JupyterLab's widget manager does.
    """

    def __init__(self, kc):
        self.kc = kc
        self.models: dict[str, dict] = {}  # comm id -> the model's latest state, in the order they were opened
        self.buffers: dict[str, dict[tuple, dict]] = {}  # comm id -> buffer path -> stored buffer
        self.capturing: dict[str, list[str]] = {}  # execute request id -> Output widgets capturing it, innermost last
        self.cleared_later: set = set()  # ids of output lists to clear at their next output (clear_output(wait=True))
        self.displays: dict[str, list[dict]] = {}  # display id -> the outputs that show it

    def handle(self, msg: dict, outputs: list, nbformat) -> None:
        kind, content = msg["header"]["msg_type"], msg["content"]
        if kind in ("comm_open", "comm_msg"):
            self._comm(msg)
            return
        if kind == "update_display_data":
            for shown in self.displays.get((content.get("transient") or {}).get("display_id"), []):
                shown["data"], shown["metadata"] = content.get("data", {}), content.get("metadata", {})
            return
        capture = self.capturing.get(msg.get("parent_header", {}).get("msg_id"))
        target = self.models[capture[-1]]["outputs"] if capture else outputs
        if kind == "clear_output":
            if content.get("wait"):
                self.cleared_later.add(id(target))
            else:
                target.clear()
                self.cleared_later.discard(id(target))
        else:
            out = _output(kind, content, nbformat)
            if out is None:
                return
            if id(target) in self.cleared_later:
                target.clear()
                self.cleared_later.discard(id(target))
            if out["output_type"] == "stream" and target and target[-1].get("output_type") == "stream" \
                    and target[-1]["name"] == out["name"]:
                target[-1]["text"] += out["text"]
            else:
                target.append(out)
                display_id = (content.get("transient") or {}).get("display_id")
                if display_id:
                    for shown in self.displays.get(display_id, []):
                        shown["data"], shown["metadata"] = out["data"], out["metadata"]
                    self.displays.setdefault(display_id, []).append(out)
        if capture:
            self._send_outputs(capture[-1], msg["parent_header"])

    def _comm(self, msg: dict) -> None:
        content = msg["content"]
        comm_id, data = content.get("comm_id"), content.get("data") or {}
        if msg["header"]["msg_type"] == "comm_open":
            if content.get("target_name") != "jupyter.widget":
                return
            self.models[comm_id] = {}
        elif comm_id not in self.models or data.get("method") not in ("update", "echo_update"):
            return
        state = data.get("state") or {}
        self.models[comm_id].update(state)
        if self.models[comm_id].get("_model_name") == "OutputModel":
            if not isinstance(self.models[comm_id].get("outputs"), list):
                self.models[comm_id]["outputs"] = list(self.models[comm_id].get("outputs") or [])
            if "msg_id" in state:
                self._capture(comm_id, state["msg_id"])
        if data.get("buffer_paths"):
            stored = self.buffers.setdefault(comm_id, {})
            for path, buffer in zip(data["buffer_paths"], msg.get("buffers") or []):
                stored[tuple(path)] = {"data": base64.b64encode(bytes(buffer)).decode("ascii"),
                                       "encoding": "base64", "path": path}

    def _capture(self, comm_id: str, msg_id: str) -> None:
        """An Output widget starts (``msg_id`` set) or stops (``msg_id`` empty) capturing a request's outputs."""
        for stack in self.capturing.values():
            if comm_id in stack:
                stack.remove(comm_id)
        if msg_id:
            self.capturing.setdefault(msg_id, []).append(comm_id)

    def _send_outputs(self, comm_id: str, parent: dict) -> None:
        """Tell the kernel's Output widget what it now shows, as a front end does."""
        data = {"method": "update", "state": {"outputs": self.models[comm_id]["outputs"]}, "buffer_paths": []}
        self.kc.shell_channel.send(self.kc.session.msg("comm_msg", content={"comm_id": comm_id, "data": data},
                                                       parent=parent))

    def widget_state(self) -> dict:
        """The notebook's ``metadata.widgets`` entry: every widget model's last state (the format nbclient stores)."""
        state = {}
        for comm_id, model in self.models.items():
            if "_model_name" not in model:
                continue
            state[comm_id] = {"model_name": model.get("_model_name"), "model_module": model.get("_model_module"),
                              "model_module_version": model.get("_model_module_version"), "state": model}
            if self.buffers.get(comm_id):
                state[comm_id]["buffers"] = list(self.buffers[comm_id].values())
        return {WIDGET_STATE: {"state": state, "version_major": 2, "version_minor": 0}} if state else {}


def _output(kind: str, content: dict, nbformat):
    """The notebook output an iopub message makes, or None for a message that makes none."""
    if kind == "stream":
        return nbformat.v4.new_output("stream", name=content["name"], text=content["text"])
    if kind in ("display_data", "execute_result"):
        out = nbformat.v4.new_output(kind, data=content.get("data", {}), metadata=content.get("metadata", {}))
        if kind == "execute_result":
            out["execution_count"] = content.get("execution_count")
        return out
    if kind == "error":
        return nbformat.v4.new_output("error", ename=content.get("ename", ""), evalue=content.get("evalue", ""),
                                      traceback=content.get("traceback", []))
    return None


def may_raise(cell) -> bool:
    """A cell tagged ``raises-exception`` (Jupyter's, nbclient's and nbval's tag) may end in an error."""
    return "raises-exception" in (cell.get("metadata", {}).get("tags") or [])


def run_notebook(nb, *, timeout: float, cwd: str | Path, kernel_name: str = "python3",
                 stop_on_error: bool = False, startup_timeout: float = 120.0,
                 cell_timeout: float | None = None) -> RunResult:
    """Execute every code cell of ``nb`` (a NotebookNode, changed in place) in a new kernel.

    Each code cell gets fresh ``outputs`` and ``execution_count``; the notebook's
    ``metadata.widgets`` gets the state of every widget the run made (or loses it when the run made none),
    and ``metadata.language_info`` the kernel's when it has none.

    Args:
        nb: the notebook.
        timeout: seconds allowed for the whole run, kernel start included.
        cwd: the kernel's working directory.
        kernel_name: the Jupyter kernel to start.
        stop_on_error: stop at the first cell that raises (as Run All in JupyterLab does), unless the cell is
            tagged ``raises-exception``.
        startup_timeout: seconds allowed for the kernel to start.
        cell_timeout: seconds one cell may run (None: only ``timeout`` bounds it); past it the run stops,
            ``"timed out"``.
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
    collected = _Outputs(kc)
    try:
        if "language_info" not in nb.metadata:
            _add_language_info(kc, nb, min(deadline, time.monotonic() + 30))
        for index, cell in enumerate(nb.cells):
            if cell.get("cell_type") != "code":
                continue
            cell["outputs"], cell["execution_count"] = [], None
            cell_deadline = deadline if cell_timeout is None else min(deadline, time.monotonic() + cell_timeout)
            status = _run_cell(kc, km, cell, cell_deadline, collected, nbformat)
            if result.first_output_s is None and cell["outputs"]:
                result.first_output_s = time.monotonic() - start
            if status == "ok" or (status == "error" and (not stop_on_error or may_raise(cell))):
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
        _store_widget_state(nb, collected.widget_state())


def _store_widget_state(nb, widgets: dict) -> None:
    stored = nb.metadata.get("widgets", {})
    stored.pop(WIDGET_STATE, None)
    stored.update(widgets)
    if stored:
        nb.metadata["widgets"] = stored
    else:
        nb.metadata.pop("widgets", None)


def _add_language_info(kc, nb, deadline: float) -> None:
    """Store the kernel's ``language_info`` in a notebook that has none (as nbclient does)."""
    msg_id = kc.kernel_info()
    while time.monotonic() < deadline:
        try:
            reply = kc.get_shell_msg(timeout=min(POLL_S, max(0.01, deadline - time.monotonic())))
        except queue.Empty:
            continue
        if reply.get("parent_header", {}).get("msg_id") == msg_id:
            if "language_info" in reply["content"]:
                nb.metadata["language_info"] = reply["content"]["language_info"]
            return


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


def _next_reply(get, km, msg_id: str, deadline: float):
    """The next message of ``get`` (iopub or shell) that answers ``msg_id``, or ``"timed out"`` / ``"kernel died"``."""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return "timed out"
        try:
            msg = get(timeout=min(POLL_S, remaining))
        except queue.Empty:
            if not km.is_alive():
                return "kernel died"
            continue
        if msg.get("parent_header", {}).get("msg_id") == msg_id:
            return msg


def _run_cell(kc, km, cell, deadline: float, collected: _Outputs, nbformat) -> str:
    """Run one cell; returns ``"ok"``, ``"error"``, ``"timed out"`` or ``"kernel died"``."""
    msg_id = kc.execute(cell["source"], store_history=True, allow_stdin=False)
    while True:
        msg = _next_reply(kc.get_iopub_msg, km, msg_id, deadline)
        if isinstance(msg, str):
            return msg
        kind = msg["header"]["msg_type"]
        if kind == "status":
            if msg["content"].get("execution_state") == "idle":
                break
        elif kind == "execute_input":
            cell["execution_count"] = msg["content"].get("execution_count")
        else:
            collected.handle(msg, cell["outputs"], nbformat)
    reply = _next_reply(kc.get_shell_msg, km, msg_id, deadline)
    if isinstance(reply, str):
        return reply
    return "error" if reply["content"].get("status") == "error" else "ok"
