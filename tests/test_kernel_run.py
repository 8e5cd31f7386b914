"""The notebook runner used by the notebook tests and by `encoder-course grade`.

A kernel can die at start when one of the ports jupyter_client picked is taken before the kernel
binds it (CI saw "Address already in use" once with two test workers). The runner must start a new
kernel on fresh ports instead of reporting the notebook as broken.
"""

from __future__ import annotations

import socket

import jupyter_client.manager
import nbformat
import pytest

from encoder_course.course import kernel_run

pytestmark = pytest.mark.notebooks


def tiny_notebook():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 6 * 7"), nbformat.v4.new_code_cell("print(x)")]
    return nb


@pytest.fixture
def busy_port():
    """A TCP port on 127.0.0.1 held open for the whole test, so a kernel told to use it cannot bind it."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held.getsockname()[1]


def colliding_manager(busy_port: int, collisions: int):
    """A KernelManager whose first ``collisions`` kernels are given a port that is already taken."""

    class Colliding(jupyter_client.manager.KernelManager):
        starts = 0

        def start_kernel(self, **kwargs):
            if Colliding.starts < collisions:
                self.cache_ports = False  # otherwise the provisioner replaces every port with its own pick
                self.stdin_port = busy_port
            Colliding.starts += 1
            return super().start_kernel(**kwargs)

    return Colliding


def test_a_kernel_that_dies_at_start_is_started_again(busy_port, monkeypatch, tmp_path):
    manager = colliding_manager(busy_port, collisions=1)
    monkeypatch.setattr(jupyter_client.manager, "KernelManager", manager)
    nb = tiny_notebook()
    run = kernel_run.run_notebook(nb, timeout=120, cwd=tmp_path)
    assert manager.starts == 2
    assert run.stop_reason is None and run.executed == [0, 1]
    assert nb.cells[1].outputs[0]["text"] == "42\n"


def test_a_kernel_that_never_starts_is_reported_as_dead(busy_port, monkeypatch, tmp_path):
    manager = colliding_manager(busy_port, collisions=99)
    monkeypatch.setattr(jupyter_client.manager, "KernelManager", manager)
    run = kernel_run.run_notebook(tiny_notebook(), timeout=120, cwd=tmp_path)
    assert manager.starts == kernel_run.START_ATTEMPTS
    assert (run.stop_reason, run.stopped_at, run.executed) == ("kernel died", 0, [])


def test_the_run_returns_seconds_after_its_last_cell(tmp_path):
    """No waiting after the last cell: the kernel is shut down at once, even with a busy core."""
    import time

    start = time.monotonic()
    run = kernel_run.run_notebook(tiny_notebook(), timeout=120, cwd=tmp_path)
    after_last_cell = (time.monotonic() - start) - run.seconds
    assert run.stop_reason is None
    assert after_last_cell < 10, f"{after_last_cell:.1f} s between the last cell and the end of the run"
