"""The checkers' time limit: it stops the learner's code, and only the learner's code.

A timer signal that raised wherever it landed could cut an import in half (a module left broken in
``sys.modules`` for the rest of the kernel's life) or the course's own bookkeeping. Here the signal
raises only in the learner's own code; elsewhere it lets the code finish and looks again a moment
later. The limit counts processor time, which a busy machine does not stretch, with a wall-clock
backstop for code that sleeps or waits.
"""

from __future__ import annotations

import os
import signal
import sys
import sysconfig
import threading
import time

import torch


class Timeout(BaseException):
    """Internal: raised by the timer signal (a BaseException so ``except Exception`` cannot eat it)."""


#: How many times the processor-time limit a call may take by the clock (sleeping, waiting for input),
#: however busy the machine: a generous backstop, since load stretches wall time, not processor time.
WALL_FACTOR = 30
_RETRY = 0.02  # seconds until the timer looks again, when it fired where the learner's code may not be stopped


def _folder(path: str) -> str:
    return os.path.join(os.path.normcase(os.path.realpath(path)), "")


def _library_folders() -> tuple[str, ...]:
    """Torch's folder, the standard library's and site-packages (where the learner's code never is)."""
    paths = sysconfig.get_paths()
    folders = {_folder(os.path.dirname(torch.__file__))}
    folders.update(_folder(paths[key]) for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths)
    return tuple(sorted(folders))


_CHECKS_PACKAGE = _folder(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # encoder_course/
_LIBRARIES = _library_folders()
_PLACES: dict[str, str] = {}  # code file -> "course", "import", "library" (else the learner's)


def _place(filename: str) -> str:
    """Where the code of ``filename`` comes from: "course", "import" (machinery), "library" or "learner"."""
    place = _PLACES.get(filename)
    if place is None:
        if filename.startswith("<frozen importlib") or filename.startswith("<frozen zipimport"):
            place = "import"
        elif filename.startswith("<frozen"):
            place = "library"
        else:
            path = os.path.normcase(os.path.realpath(filename)) if filename[:1] != "<" else filename
            if path.startswith(_CHECKS_PACKAGE):
                place = "course"
            elif path.startswith(os.path.join(_folder(os.path.dirname(os.__file__)), "importlib", "")):
                place = "import"
            elif any(path.startswith(folder) for folder in _LIBRARIES):
                place = "library"
            else:
                place = "learner"
        _PLACES[filename] = place
    return place


def _may_stop(frame, entry, lenient: bool) -> bool:
    """Whether raising in ``frame`` leaves the interpreter as healthy as before.

    Never while a module is being imported (anywhere between ``frame`` and the check's ``entry`` frame:
    a half-run module body stays broken in ``sys.modules``) nor inside the course's own code. Library
    code (torch, the standard library) only once the call is well past its limit (``lenient``); the
    learner's own code at any time.
    """
    innermost = _place(frame.f_code.co_filename)
    if innermost == "course" or (innermost == "library" and not lenient):
        return False
    while frame is not None and frame is not entry:
        if frame.f_code.co_name == "<module>" or _place(frame.f_code.co_filename) == "import":
            return False
        frame = frame.f_back
    return True


class time_limit:
    """Stop the block once it has used ``seconds`` of processor time (or ``WALL_FACTOR`` times that by
    the clock), by raising :class:`Timeout` in the learner's own code only.

    The timer signal does not raise wherever it lands: inside an import, the course's code or (for the
    first seconds past the limit) torch's, it lets that code finish and looks again a moment later. So
    a time-out never leaves a half-imported module or half-set state behind. Works in the main thread
    on POSIX; elsewhere the block is only measured (see :func:`_invoke`).
    """

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.armed = False
        self.waited = False  # True when the clock's backstop, not the processor-time limit, fired first

    def __enter__(self):
        if not (hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
                and self.seconds > 0):
            return self
        entry = sys._getframe(1)  # the frame that runs the `with`: the search for imports stops there
        first_fired: list[float] = []

        def _on_timer(signum, frame):
            if not first_fired:
                self.waited = signum == signal.SIGALRM
            first_fired.append(time.perf_counter())
            # Library code is let finish for a while (max(2 s, the limit)), then stopped like the learner's.
            stop = _may_stop(frame, entry, first_fired[-1] - first_fired[0] > max(2.0, self.seconds))
            # Not here: look again in a moment. And after raising too, in case a bare `except:` ate it.
            signal.setitimer(signal.ITIMER_REAL, _RETRY if not stop else 0.25)
            if stop:
                raise Timeout()

        try:
            self.previous = (signal.signal(signal.SIGPROF, _on_timer), signal.signal(signal.SIGALRM, _on_timer))
        except ValueError:  # not allowed here after all
            return self
        self.old_timers = (signal.setitimer(signal.ITIMER_PROF, self.seconds),
                           signal.setitimer(signal.ITIMER_REAL, self.seconds * WALL_FACTOR))
        self.armed = True
        return self

    def __exit__(self, *exc):
        if self.armed:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGPROF, self.previous[0])
            signal.signal(signal.SIGALRM, self.previous[1])
            for which, old in zip((signal.ITIMER_PROF, signal.ITIMER_REAL), self.old_timers):
                if old[0] > 0:  # someone else had a timer running: give it back
                    signal.setitimer(which, *old)
        return False
