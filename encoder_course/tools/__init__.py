"""Small helpers for the notebooks: seeding, showing the package's source, environment facts."""

from __future__ import annotations

import inspect
import platform
import random

import torch

from .._validate import require_seed


def seed_everything(seed: int = 0) -> None:
    """Seed Python's and torch's random generators so a notebook gives the same numbers each run."""
    require_seed(seed)
    random.seed(int(seed))
    torch.manual_seed(int(seed))


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
