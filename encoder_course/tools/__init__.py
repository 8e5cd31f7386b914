"""Small helpers for the notebooks: seeding, showing the package's source, environment facts, and how many CPU
threads the machine can give a computation now."""

from __future__ import annotations

import inspect
import os
import platform
import random
import time

import torch

from .._validate import require_seed


def seed_everything(seed: int = 0) -> None:
    """Seed Python's and torch's random generators so a notebook gives the same numbers each run."""
    require_seed(seed)
    random.seed(int(seed))
    torch.manual_seed(int(seed))


#: torch's thread count when the course was imported (its default, or OMP_NUM_THREADS): never exceeded.
_THREADS_AT_START = torch.get_num_threads()


def _cpu_times(cpus=None, stat: str = "/proc/stat") -> tuple[int, int, int] | None:
    """Processor time so far in clock ticks (Linux): ``(idle, total, n)`` summed over the cores numbered in
    ``cpus`` (all of them when None), ``n`` the cores counted; None where there is no such reading."""
    try:
        with open(stat, encoding="ascii") as f:
            lines = [line.split() for line in f if line.startswith("cpu")]
        rows = {row[0]: [int(n) for n in row[1:]] for row in lines}  # user nice system idle iowait irq softirq steal
    except (OSError, ValueError):
        return None
    per_core = {name: ticks for name, ticks in rows.items() if name != "cpu"}
    if cpus is None:
        picked, n = [rows["cpu"]] if "cpu" in rows else [], len(per_core)
    else:
        picked = [per_core[f"cpu{c}"] for c in cpus if f"cpu{c}" in per_core]
        n = len(picked)
    if not picked or n == 0 or any(len(ticks) < 5 for ticks in picked):
        return None
    return (sum(t[3] + t[4] for t in picked), sum(sum(t[:8]) for t in picked), n)


def _read_quota(folder: str) -> float | None:
    """The quota of one cgroup folder in cores: cgroup v2's ``cpu.max`` ("quota period", "max" for none), else
    cgroup v1's ``cpu.cfs_quota_us`` over ``cpu.cfs_period_us`` (-1 for none); None without one."""
    try:
        with open(os.path.join(folder, "cpu.max"), encoding="ascii") as f:
            quota, period = f.read().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        with open(os.path.join(folder, "cpu.cfs_quota_us"), encoding="ascii") as f:
            quota = int(f.read())
        with open(os.path.join(folder, "cpu.cfs_period_us"), encoding="ascii") as f:
            period = int(f.read())
        return quota / period if quota > 0 and period > 0 else None
    except (OSError, ValueError):
        return None


def _cpu_quota(root: str = "/sys/fs/cgroup", own: str = "/proc/self/cgroup") -> float | None:
    """The cores this process's CPU quota allows, or None without one.

    Read from its own cgroup (as ``/proc/self/cgroup`` names it: cgroup v2's ``0::/path``, or v1's line of the
    ``cpu`` controller) and from the hierarchy's root, which inside a container is the container's own; the
    smallest quota found counts."""
    folders = [root, os.path.join(root, "cpu")]
    try:
        with open(own, encoding="ascii") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if controllers == "":  # cgroup v2
                    folders.append(os.path.join(root, path.lstrip("/")))
                elif "cpu" in controllers.split(","):  # cgroup v1, mounted as cpu (or cpu,cpuacct)
                    folders.append(os.path.join(root, "cpu", path.lstrip("/")))
    except (OSError, ValueError):
        pass
    quotas = [q for q in map(_read_quota, dict.fromkeys(folders)) if q is not None]
    return min(quotas) if quotas else None


def free_cores(sample_s: float = 0.2, *, cpu_times=_cpu_times, cpu_quota=_cpu_quota) -> int:
    """How many cores a computation can have to itself now: at least 1.

    The cores this process may run on, no more than its container's quota, and no more than those of them that
    stood idle while this process waited ``sample_s`` seconds (Linux's ``/proc/stat``; elsewhere, the cores
    less the 1-minute load average). A core counts as idle when at least three quarters of it was.

    Why it matters: threads that share a matrix product wait for each other, and on a busy machine they lose
    their turns while they wait. Measured on 2 cores (notebook 12's pretraining, 100 steps): 3.8 s with two
    threads against 4.8-6.0 s with one when the machine was quiet, but 12 to 98 s against 8-9 s with a busy
    loop on each core; and in a cgroup held to one core's quota on the same machine (as a container with a CPU
    limit is), 9.2-9.6 s with two threads against 6.4-6.7 s with the one chosen here.
    """
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    cores = len(allowed) if allowed else (os.cpu_count() or 1)
    quota = cpu_quota()
    if quota is not None:
        cores = min(cores, max(1, int(quota)))
    before = cpu_times(allowed)  # the cores this process may run on: the others' idleness is of no use to it
    if before is not None:
        time.sleep(sample_s)
        after = cpu_times(allowed) or before
        idle, total = after[0] - before[0], after[1] - before[1]
        idle_cores = before[2] * idle / total if total > 0 else float(cores)
    elif hasattr(os, "getloadavg"):
        idle_cores = (os.cpu_count() or 1) - os.getloadavg()[0]
    else:
        idle_cores = float(cores)
    return max(1, min(cores, int(idle_cores + 0.25)))


def use_free_cores() -> int:
    """Give torch as many threads as :func:`free_cores` finds now (never more than it had when the course was
    imported, which ``OMP_NUM_THREADS`` sets); returns that number."""
    threads = min(_THREADS_AT_START, free_cores())
    torch.set_num_threads(threads)
    return threads


def pick_device(prefer: str | None = None) -> tuple[torch.device, str]:
    """The fastest device PyTorch can use here (CUDA, then Apple's MPS, then the CPU), and why.

    Args:
        prefer: ``"cuda"``, ``"mps"`` or ``"cpu"`` to ask for one; an unavailable choice falls back
            to the next in that order, and the reason says so.

    Returns:
        ``(device, reason)``: the device, and one sentence for the learner saying what was picked,
        and, on the CPU, how to get a GPU (on Colab: Runtime > Change runtime type > GPU).
    """
    if prefer not in (None, "cuda", "mps", "cpu"):
        raise ValueError(f"prefer must be 'cuda', 'mps', 'cpu' or None, got {prefer!r}")
    has_cuda = torch.cuda.is_available()
    has_mps = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())
    if prefer == "cpu":
        return torch.device("cpu"), "using the CPU, as asked"
    if has_cuda and prefer in (None, "cuda"):
        return torch.device("cuda"), f"using the GPU {torch.cuda.get_device_name(0)} (CUDA)"
    if has_mps and prefer in (None, "mps", "cuda"):
        note = " (no CUDA here)" if prefer == "cuda" else ""
        return torch.device("mps"), f"using Apple's GPU through MPS{note}"
    return torch.device("cpu"), ("using the CPU: PyTorch sees no GPU here. On Colab choose Runtime > Change "
                                 "runtime type > GPU and run the notebook again; on a Mac with Apple silicon "
                                 "PyTorch uses its GPU through MPS.")


def source_of(obj) -> str:
    """The source code of a function, class or method of the package, as text."""
    return inspect.getsource(obj)


def show_source(obj) -> None:
    """Display the source of ``obj`` with syntax highlighting in a notebook (plain text elsewhere)."""
    code = source_of(obj)
    try:
        from IPython.display import Code, display
    except ImportError:  # outside IPython
        import sys

        sys.stdout.write(code)
        return
    display(Code(code, language="python"))


def environment() -> dict[str, str]:
    """Versions and hardware the course is running on (no paths)."""
    info = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "device": pick_device()[1],
        "cpu threads": str(torch.get_num_threads()),
    }
    for name in ("einops", "matplotlib", "ipywidgets"):
        try:
            module = __import__(name)
            info[name] = getattr(module, "__version__", "?")
        except ImportError:
            info[name] = "not installed"
    return info
